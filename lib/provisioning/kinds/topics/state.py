"""The topics' slice of the run's state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from provisioning.run.state import KindState

# Rows per (cluster, action, plan outcome) of a plan.
PlanCounts = Mapping[tuple[str, str, str], int]


@dataclass
class TopicState(KindState):
    """What the topic phases hand each other; a field is None until a phase writes it."""

    desired: DataFrame | None = None                    # DESIRED rows, validated, in scope
    live: DataFrame | None = None                       # SNAPSHOT rows of the run's clusters
    plan: DataFrame | None = None                       # judged PLAN rows (with its layers')
    # Rows per (cluster, action, outcome) of the plan: what the later phases have to do
    # (nothing: they are skipped).
    counts: PlanCounts | None = None
    validated: DataFrame | None = None                  # validateOnly TOPIC_RESULT rows
    applied: DataFrame | None = None                    # real request TOPIC_RESULT rows
    verified: DataFrame | None = None                   # verify's TOPIC_RESULT rows
    # Live topics (not internal) in scope that no plan row names, per cluster.
    unmanaged: Mapping[str, int] | None = None
    imported: Sequence[Any] | None = None               # what `import` wrote, per cluster
    violations: DataFrame | None = None                 # `check`'s VIOLATIONS rows
    inventory: DataFrame | None = None                  # `check`'s INVENTORY rows
    disks: DataFrame | None = None                      # `check`'s DISKS rows
