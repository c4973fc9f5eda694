"""The kinds of resource the job manages, registered once: here.

Each kind is one folder (`provisioning.kinds.<kind>`) and one object (its `KIND`), imported
here by name. The registry sits above the engine: the command line hands `KINDS` to the
packages that loop over kinds (the conf loader, the engine, the views), which import no kind.

The order is the order the kinds' phases run in within each step of a run (manifests,
snapshot, plan, validate, apply): a kind whose phases read another kind's state comes after
it (ACL bindings read the topics' deletions; SCRAM credentials' `check` reads ACL
bindings). Adding a kind is its folder and one line here.
"""

from __future__ import annotations

from provisioning.kinds import Kind
from provisioning.kinds.acls.kind import KIND as ACLS
from provisioning.kinds.groups.kind import KIND as GROUPS
from provisioning.kinds.offsets.kind import KIND as OFFSETS
from provisioning.kinds.quotas.kind import KIND as QUOTAS
from provisioning.kinds.reassign.kind import KIND as REASSIGN
from provisioning.kinds.topics.kind import KIND as TOPICS
from provisioning.kinds.users.kind import KIND as USERS
from schemas import tables, with_kind_columns

KINDS: tuple[Kind, ...] = (TOPICS, ACLS, REASSIGN, QUOTAS, USERS, GROUPS, OFFSETS)

# The audit table as a run of every registered kind writes it (`RunContext.audit`).
AUDIT = with_kind_columns(tables.AUDIT, (kind.run.audit_column for kind in KINDS))
