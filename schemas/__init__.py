"""Every table schema of the project: manifests, snapshots, plan, audit, runs, locks and
`check`'s violations.

Readers, writers, transforms and test builders import these. A module that shows or
sends a few columns of a table (a view, a request) names the ones it uses; none
defines a table of its own.
"""

from schemas.check import VIOLATIONS
from schemas.tables import (
    AUDIT,
    CLUSTER_STATE,
    CONFIG_ENTRY,
    CONFIG_OP,
    DESIRED,
    DRIFT_ITEM,
    LOCKS,
    MANIFEST,
    PARTITION_STATE,
    PLAN,
    POLICY_VIOLATION,
    RUNS,
    SNAPSHOT,
    TOPIC_RESULT,
    column_names,
)

__all__ = [
    "AUDIT",
    "CLUSTER_STATE",
    "CONFIG_ENTRY",
    "CONFIG_OP",
    "DESIRED",
    "DRIFT_ITEM",
    "LOCKS",
    "MANIFEST",
    "PARTITION_STATE",
    "PLAN",
    "POLICY_VIOLATION",
    "RUNS",
    "SNAPSHOT",
    "TOPIC_RESULT",
    "VIOLATIONS",
    "column_names",
]
