"""The run's result: every kind's typed summary (`RunKind.summary`), and its plan counted
per kind, cluster, action and plan outcome for the runs row."""

from __future__ import annotations

from collections.abc import Sequence

from provisioning.results import RunResult
from provisioning.run.engine import RunContext
from provisioning.run.kind import RunKind
from provisioning.run.state import RunState


def summarize(ctx: RunContext, state: RunState, kinds: Sequence[RunKind]) -> RunResult:
    """The run's result; `ctx.record.plan_counts` holds every kind's plan counts."""
    ctx.record.plan_counts = [
        {"kind": kind.name, "cluster": cluster, "action": action, "outcome": outcome,
         "rows": n}
        for kind in kinds
        for (cluster, action, outcome), n in sorted(
            kind.plan_counts(state).items(),
            key=lambda i: tuple("" if v is None else str(v) for v in i[0]))]
    return RunResult(run_id=ctx.run_id,
                     summaries={kind.name: kind.summary(ctx, state) for kind in kinds})
