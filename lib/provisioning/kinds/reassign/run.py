"""The replica moves' part of the run package: a kind that extends the topics' rows. Its plan is
a layer on the topics' plan (`layer`); its own phases list the moves in flight, check,
send and wait for the moves (`phases`); its slice of the state (`state`); its admin I/O
(`executors`)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.kinds.reassign.layer import ReassignLayer
from provisioning.kinds.reassign.names import REASSIGN
from provisioning.kinds.reassign.phases import (
    ALLOW,
    NAME,
    ReassignApply,
    ReassignSnapshot,
    ReassignValidate,
    ReassignVerify,
    moves_count,
)
from provisioning.kinds.reassign.results import ReassignSummary
from provisioning.kinds.reassign.state import ReassignState
from provisioning.run.engine import Phase, RunContext
from provisioning.run.kind import APPLY, SNAPSHOT, VALIDATE, PlanLayer, RunKind
from provisioning.run.options import ApplyOptions
from provisioning.run.state import RunState
from provisioning.transforms.audit import final_rows


class ReassignKind(RunKind):
    name = NAME
    State = ReassignState
    extends = "topics"
    layer = ReassignLayer()
    planned_reads = ("reassign.counts",)
    # The columns of a moved topic's row the topics' listing shows.
    listed_columns = ("reassignment", "result_reassignment", "throttle_rate")

    def phases(self, step: str, layers: Sequence[PlanLayer] = ()) -> Sequence[Phase]:
        return {
            SNAPSHOT: (ReassignSnapshot(),),
            VALIDATE: (ReassignValidate(),),
            APPLY: (ReassignApply(), ReassignVerify()),
        }.get(step, ())

    def sends_changes(self, ctx: RunContext, state: RunState) -> bool:
        # A move already under way counts: an apply with --allow-reassign finishes it.
        return (isinstance(ctx.options, ApplyOptions) and ctx.options.allows(ALLOW)
                and moves_count(state) > 0)

    def plan_has_changes(self, state: RunState) -> bool:
        return moves_count(state) > 0

    def summary(self, ctx: RunContext, state: RunState) -> ReassignSummary | None:
        moves = state.of(ReassignState)
        if moves.in_flight is None:
            return None
        if not isinstance(ctx.options, ApplyOptions) or not moves.rows:
            return ReassignSummary()
        final = final_rows(functools.reduce(DataFrame.unionByName, moves.rows))
        unmade = final.where((F.col("action") == REASSIGN) & (F.col("phase") == names.VALIDATE)
                             & (F.col("outcome") == names.VALIDATED)).count()
        return ReassignSummary(reassigns_not_allowed=unmade)


RUN = ReassignKind()
