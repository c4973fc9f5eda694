"""The client quotas' slice of the run's state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from provisioning.run.state import KindState


@dataclass
class QuotaSlice(KindState):
    """What the quota phases hand each other; a field is None until a phase writes it."""

    desired: DataFrame | None = None                    # QUOTA_DESIRED rows, validated
    live: DataFrame | None = None                       # QUOTA_LIVE rows
    plan: DataFrame | None = None                       # judged QUOTA_PLAN rows
    # QUOTA_PLAN rows per (cluster, action, plan outcome).
    counts: Mapping[tuple[str, str, str], int] | None = None
    validated: DataFrame | None = None                  # validateOnly QUOTA_RESULT rows
    applied: DataFrame | None = None                    # AlterClientQuotas QUOTA_RESULT rows
    # Live quotas no quota manifest row lists, per cluster.
    unmanaged: Mapping[str, int] | None = None
    # Why a cluster's quotas could not be read (error name, message), per cluster.
    problems: Mapping[str, tuple[str, str]] | None = None
    imported: Mapping[str, Any] | None = None           # what `import --quotas` wrote
    violations: DataFrame | None = None                 # `check`'s findings
