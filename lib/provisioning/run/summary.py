"""The run's result: every kind's typed summary (`RunKind.summary`), and its plan counted
per kind, cluster, action and plan outcome for the runs row; what every kind's summary is
made of (`counted_and_listed`, `tally`, `by_cluster_and_action`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from provisioning import names
from provisioning.results import RunResult
from provisioning.run.engine import RunContext
from provisioning.run.kind import RunKind
from provisioning.run.state import RunState

# The columns a kind's final rows are counted by (`counted_and_listed`).
COUNTED_BY = ("cluster", "action", "phase", "outcome")


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


def counted_and_listed(final: DataFrame, listed: Callable[[DataFrame], DataFrame] | None,
                       limit: int) -> tuple[list[Row], list[Row]]:
    """A kind's `final` rows counted per cluster, action, phase and outcome (rows with
    `n`), and, when some are not simply settled, the first `limit` rows of what the kind
    lists of them (`listed`, given the final rows: in its order; None lists nothing).

    The final rows are computed once (each phase's rows join its results with the plan)
    and pinned: the counts and the listing both read them. One query of both (the counts
    and the listing as one union, nothing pinned) made a one-topic change's summary slower
    (BENCHMARKS.md: tried and left out)."""
    final = final.localCheckpoint(eager=True)
    grouped = final.groupBy(*COUNTED_BY).agg(F.count(F.lit(1)).alias("n")).collect()
    if listed is None or not tally(grouped)[2]:
        return grouped, []
    return grouped, listed(final).limit(limit).collect()


def nulls_first(value: Any) -> tuple[bool, Any]:
    """A sort key that puts None first (as Spark's ascending order does)."""
    return (value is not None, value if value is not None else "")


def tally(grouped: Iterable[Row | Mapping[str, Any]]
          ) -> tuple[dict[str, int], dict[tuple[Any, Any], int], int]:
    """Counts per outcome, per (cluster, action), and the rows not simply settled, of
    `grouped` (rows counted per `COUNTED_BY`, each with its `n`)."""
    counts: dict[str, int] = {}
    actions: dict[tuple[Any, Any], int] = {}
    for r in grouped:
        n = int(r["n"])
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + n
        actions[(r["cluster"], r["action"])] = actions.get((r["cluster"], r["action"]), 0) + n
    unsettled = sum(n for outcome, n in counts.items() if outcome not in names.SETTLED)
    return counts, actions, unsettled


def by_cluster_and_action(actions: Mapping[tuple[Any, Any], int], noun: str
                          ) -> list[dict[str, Any]]:
    """`tally`'s counts per (cluster, action) as a summary lists them: ordered, None first,
    each count under `noun` (the kind's plural)."""
    return [{"cluster": c, "action": a, noun: n} for (c, a), n in
            sorted(actions.items(), key=lambda i: (nulls_first(i[0][0]),
                                                   nulls_first(i[0][1])))]
