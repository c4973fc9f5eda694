"""The phases every command shares (see engine.py): the preflight, before any kind's; the
record of `check`'s findings, after every kind's. And what every kind's plan phase shares:
the cut of a long policy chain (`cut`), and its tail (`record_plan`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame

from provisioning import names
from provisioning.delta.idempotent import Transaction, append_once
from provisioning.delta.tables import TableRef
from provisioning.run.engine import Phase, RunContext, log_counts, recorded
from provisioning.run.kind import RunKind
from provisioning.run.state import RunState
from provisioning.session import job_label


def cut(df: DataFrame) -> DataFrame:
    """`df` with its plan cut short (a lazy local checkpoint: no Spark job of its own).

    Spark Connect sends a DataFrame's whole plan as nested protobuf, and its client
    refuses one deeper than 100 levels: the plan and policy chain would be. Classic Spark
    runs the same code (one code path).
    """
    return df.localCheckpoint(eager=False)


def record_plan(ctx: RunContext, kind: str, state: Any, plan: DataFrame,
                counts: Mapping[tuple[str, str, str], int], audit: DataFrame, started: float,
                logged: str, label: str,
                side: tuple[str, Callable[[], None]] | None = None, what: str = "topic"
                ) -> None:
    """The tail of kind `kind`'s plan phase: the plan's audit rows recorded, its counts
    logged (as phase `logged`, its rows called `what`), what it leaves alone counted off
    the run's path (`side`: its name and query), the plan and its counts kept in the
    kind's slice (`state`: its `plan` and `counts`), and the saved-plan hook given the plan
    (under job label `label`).
    """
    by_outcome: dict[str, int] = {}
    for (_, _, outcome), n in counts.items():
        by_outcome[outcome] = by_outcome.get(outcome, 0) + n
    log_counts(logged, started, by_outcome, what)
    recorded(ctx, state, names.PLAN, audit)
    if side is not None:
        ctx.commits.side(*side)
    state.plan, state.counts = plan, counts
    hook = getattr(ctx.options, "hook", lambda _kind: None)(kind)
    if hook is not None:
        with job_label(ctx.spark, label):
            hook(plan)


class Preflight(Phase):
    """Reach every cluster and check its identity before anything reads or changes it."""

    name = "preflight"
    writes = ("states",)

    def run(self, ctx: RunContext, state: RunState) -> None:
        from provisioning.kafka.snapshot import preflight

        with job_label(ctx.spark, f"{ctx.command}: preflight"):
            state.states = preflight(ctx.clusters, ctx.credentials, ctx.conf.kafka)
        ctx.steps.done("preflight")
        ctx.record.clusters = [
            {"cluster": n, "cluster_id": s.cluster_id, "brokers": len(s.broker_ids),
             "topics": None, "error": None}
            for n, s in state.states.items()
        ]


class RecordFindings(Phase):
    """`check`: every kind's VIOLATIONS rows (`RunKind.findings`) appended to
    `tables.violations` as one idempotent commit."""

    name = "record findings"

    def __init__(self, kinds: Sequence[RunKind]) -> None:
        self._kinds = tuple(kinds)
        self.reads = tuple(k.findings_field for k in self._kinds if k.findings_field)

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return any(k.findings(state) is not None for k in self._kinds)

    def run(self, ctx: RunContext, state: RunState) -> None:
        found = [rows for k in self._kinds if (rows := k.findings(state)) is not None]
        rows = functools.reduce(DataFrame.unionByName, found)
        table = TableRef(ctx.conf.tables.violations)
        txn = Transaction(f"topic-provisioning-violations-{ctx.run_id}", 1)
        with job_label(ctx.spark, f"{ctx.command}: record the findings"):
            ctx.commits.record("violations-write", lambda: append_once(rows, table, txn))
