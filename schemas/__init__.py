"""Every table schema of the project: manifests, snapshots, plan, audit, runs, locks,
`check`'s violations, and the same for ACL bindings (`schemas.acls`).

Readers, writers, transforms and test builders import these. A module that shows or
sends a few columns of a table (a view, a request) names the ones it uses; none
defines a table of its own.
"""

from schemas.acls import (
    ACL_BINDING,
    ACL_DESIRED,
    ACL_MANIFEST,
    ACL_PLAN,
    ACL_RESULT,
    ACL_SNAPSHOT,
    BINDING_KEY,
)
from schemas.check import VIOLATIONS
from schemas.inventory import DISKS, INVENTORY
from schemas.tables import (
    ACL_BINDING_STRUCT,
    AUDIT,
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
    "INVENTORY",
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
    "VIOLATIONS",
    "column_names",
]
