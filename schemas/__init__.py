"""Every table schema of the project: manifests, snapshots, plan, audit, runs, locks,
`check`'s violations and usage (`schemas.usage`), and the entity kinds' own tables
(`schemas.acls`, `schemas.quotas`, `schemas.users`, `schemas.groups`,
`schemas.offsets`).

The audit table holds every kind's rows: its shared columns (`schemas.tables.AUDIT`), and
each entity kind's own column (`AUDIT_COLUMN` of its schema module: the struct its rows
fill), appended in the registry's order (`with_kind_columns`).

Readers, writers, transforms and test builders import these. A module that shows or
sends a few columns of a table (a view, a request) names the ones it uses; none
defines a table of its own.
"""

from collections.abc import Sequence
from types import ModuleType

from pyspark.sql.types import StructType

from schemas import acls, groups, offsets, quotas, tables, users
from schemas.acls import (
    ACL_BINDING,
    ACL_BINDING_STRUCT,
    ACL_DESIRED,
    ACL_MANIFEST,
    ACL_PLAN,
    ACL_RESULT,
    ACL_SNAPSHOT,
    BINDING_KEY,
)
from schemas.check import VIOLATIONS
from schemas.tables import (
    CLUSTER_STATE,
    CONFIG_ENTRY,
    CONFIG_OP,
    DESIRED,
    DRIFT_ITEM,
    LIVE_READ,
    LOCKS,
    MANIFEST,
    PARTITION_STATE,
    PLAN,
    PLAN_COUNT,
    POLICY_VIOLATION,
    REASSIGNMENT_IN_FLIGHT,
    REPLICA_MOVE,
    REPLICA_MOVE_RESULT,
    RUNS,
    SNAPSHOT,
    TOPIC_RESULT,
    column_names,
)
from schemas.usage import DISKS, GROUP_LAG, INVENTORY, LAST_WRITE, USAGE_READ


def with_kind_columns(audit: StructType, kinds: Sequence[ModuleType]) -> StructType:
    """`audit` with the column each of `kinds` (a kind's schema module) declares
    (`AUDIT_COLUMN`, a StructField) and `audit` lacks, in that order."""
    columns = list(audit.fields)
    for module in kinds:
        column = getattr(module, "AUDIT_COLUMN", None)
        if column is not None and column.name not in {c.name for c in columns}:
            columns.append(column)
    return StructType(columns)


# One row per subject (a topic, or another kind's) per phase per run.
AUDIT = with_kind_columns(tables.AUDIT, (acls, quotas, users, groups, offsets))

__all__ = [
    "ACL_BINDING",
    "ACL_BINDING_STRUCT",
    "ACL_DESIRED",
    "ACL_MANIFEST",
    "ACL_PLAN",
    "ACL_RESULT",
    "ACL_SNAPSHOT",
    "AUDIT",
    "BINDING_KEY",
    "CLUSTER_STATE",
    "CONFIG_ENTRY",
    "CONFIG_OP",
    "DESIRED",
    "DISKS",
    "DRIFT_ITEM",
    "GROUP_LAG",
    "INVENTORY",
    "LAST_WRITE",
    "LIVE_READ",
    "LOCKS",
    "MANIFEST",
    "PARTITION_STATE",
    "PLAN",
    "PLAN_COUNT",
    "POLICY_VIOLATION",
    "REASSIGNMENT_IN_FLIGHT",
    "REPLICA_MOVE",
    "REPLICA_MOVE_RESULT",
    "RUNS",
    "SNAPSHOT",
    "TOPIC_RESULT",
    "USAGE_READ",
    "VIOLATIONS",
    "column_names",
    "with_kind_columns",
]
