"""The ACL bindings' slice of the run's state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from provisioning.run.state import KindState


@dataclass
class AclSlice(KindState):
    """What the ACL phases hand each other; a field is None until a phase writes it."""

    desired: DataFrame | None = None                    # ACL_DESIRED rows, validated
    live: DataFrame | None = None                       # ACL_BINDING rows, live
    plan: DataFrame | None = None                       # judged ACL_PLAN rows
    # ACL_PLAN rows per (cluster, action, plan outcome).
    counts: Mapping[tuple[str, str, str], int] | None = None
    validated: DataFrame | None = None                  # the authority check's ACL_RESULT
    applied: DataFrame | None = None                    # CreateAcls / DeleteAcls ACL_RESULT
    # Live bindings no ACL manifest names, and LITERAL TOPIC ones naming no live topic,
    # per cluster.
    unmanaged: Mapping[str, int] | None = None
    orphaned: Mapping[str, int] | None = None
    # Why the job may not change a cluster's ACLs (the snapshot's word), per cluster.
    problems: Mapping[str, tuple[str, str]] | None = None
    imported: Mapping[str, Any] | None = None           # what `import --acls` wrote
