"""The audit table as the job writes it: the shared columns (`schemas.tables.AUDIT`) and each
entity kind's own column (`AUDIT_COLUMN` of the kind's schema module,
`provisioning.kinds.<kind>.schema`), appended in the registry's order
(`schemas.with_kind_columns`).

The one module of `schemas` that imports the kinds' schema modules, each from its kind:
`schemas` itself imports none, so a task that unpickles a kind's rows loads that kind's
schema module alone; the transforms that shape audit rows, the tests and the benchmarks
import this one.
"""

from provisioning.kinds.acls import schema as acls
from provisioning.kinds.groups import schema as groups
from provisioning.kinds.offsets import schema as offsets
from provisioning.kinds.quotas import schema as quotas
from provisioning.kinds.users import schema as users
from schemas import tables, with_kind_columns

# One row per subject (a topic, or another kind's) per phase per run.
AUDIT = with_kind_columns(tables.AUDIT, (acls, quotas, users, groups, offsets))

__all__ = ["AUDIT"]
