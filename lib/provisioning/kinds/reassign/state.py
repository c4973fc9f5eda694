"""The replica moves' slice of the run's state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from provisioning.run.state import KindState


@dataclass
class ReassignState(KindState):
    """What the replica-move phases hand each other; a field is None until written."""

    # The partitions being reassigned on each cluster (REASSIGNMENT_IN_FLIGHT rows, as
    # dicts), and the clusters where they could not be listed (cluster -> why).
    in_flight: Sequence[Mapping[str, Any]] | None = None
    unlisted: Mapping[str, str] | None = None
    # Whether the last plan pass placed moves on its rows: False when it found none to
    # place (nothing in flight, and every candidate partition as its row asks), so no
    # row carries a move and the always-on reassign policies have nothing to judge.
    placed: bool | None = None
    # PLAN rows with moves per (cluster, plan outcome).
    counts: Mapping[tuple[str, str], int] | None = None
    validated: DataFrame | None = None                  # the checks' TOPIC_RESULT rows
    applied: DataFrame | None = None                    # the requests' TOPIC_RESULT rows
