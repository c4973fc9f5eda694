"""Every table schema of the project: manifests, snapshots, plan, audit, runs and locks.

Readers, writers, transforms and test builders import these. A module that shows or
sends a few columns of a table (a view, a request) names the ones it uses; none
defines a table of its own.
"""

from schemas.tables import (
    AUDIT,
    CLUSTER_STATE,
    CONFIG_ENTRY,
    CONFIG_OP,
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
    "CONFIG_OP",
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
