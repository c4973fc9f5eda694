"""The shared table schemas of the project: manifests, snapshots, plan, audit, runs, locks,
`check`'s violations and usage (`schemas.usage`). Each entity kind's own tables sit in its
folder (`provisioning.kinds.<kind>.schema`); this module, `schemas.tables`, `schemas.check`
and `schemas.usage` import none of them, so a task that unpickles a kind's rows loads that
kind's schema module alone.

The audit table holds every kind's rows: its shared columns (`schemas.tables.AUDIT`), and
each kind's own column (`AUDIT_COLUMN` of an entity kind's schema module: the struct its
rows fill), appended in the order of the kinds a run is given (`with_kind_columns`; a run
has it as `RunContext.audit`, the registry as `provisioning.registry.AUDIT`).

Readers, writers, transforms and test builders import these. A module that shows or
sends a few columns of a table (a view, a request) names the ones it uses; none
defines a table of its own.
"""

from collections.abc import Iterable

from pyspark.sql.types import StructField, StructType

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


def with_kind_columns(audit: StructType, kinds: Iterable[StructField | None]) -> StructType:
    """`audit` with each kind's own column (None: a kind without one) that `audit` lacks,
    in that order."""
    columns = list(audit.fields)
    for column in kinds:
        if column is not None and column.name not in {c.name for c in columns}:
            columns.append(column)
    return StructType(columns)


__all__ = [
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
