"""Every table schema of the project: manifests, snapshots, plan, audit and runs.

Readers, writers, transforms and test builders import these; no other module
spells out a table's columns.
"""

from schemas.tables import (
    AUDIT,
    CLUSTER_STATE,
    CONFIG_ENTRY,
    DESIRED,
    DRIFT_ITEM,
    LOCKS,
    MANIFEST,
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
    "DESIRED",
    "DRIFT_ITEM",
    "LOCKS",
    "MANIFEST",
    "PLAN",
    "POLICY_VIOLATION",
    "RUNS",
    "SNAPSHOT",
    "TOPIC_RESULT",
    "column_names",
]
