"""The phases every command shares (see engine.py): the preflight, before any kind's."""

from __future__ import annotations

from provisioning.run.engine import Phase, RunContext
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
