"""The phases every command shares (see engine.py): the preflight, before any kind's; the
record of `check`'s findings, after every kind's."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pyspark.sql import DataFrame

from provisioning.delta.tables import TableRef, Transaction, append
from provisioning.run.engine import Phase, RunContext
from provisioning.run.kind import RunKind
from provisioning.run.state import RunState
from provisioning.session import job_label


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
            ctx.commits.record("violations-write", lambda: append(rows, table, txn=txn))
