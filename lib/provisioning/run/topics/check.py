"""`check` of topics (see engine.py): every live topic in the run's scope judged by the
configured create policies and the health rules, as VIOLATIONS rows."""

from __future__ import annotations

import time

from provisioning.conf.topics import TopicsConf
from provisioning.results import utc_now
from provisioning.run.engine import Phase, RunContext, log_phase, require
from provisioning.run.state import RunState
from provisioning.run.topics.phases import NAME, in_run
from provisioning.run.topics.planning import cut, policy_context
from provisioning.run.topics.state import TopicState
from provisioning.session import job_label
from provisioning.transforms.check import violations


class Check(Phase):
    """`check`: every live topic in the run's scope that is not internal, managed or not,
    judged by the configured create policies and the health rules
    (`transforms.check.violations`), as VIOLATIONS rows (recorded with every kind's by
    `run.phases.RecordFindings`). Nothing is sent to Kafka."""

    name = "check"
    kind = NAME
    reads = ("states", "topics.desired", "topics.live")
    writes = ("topics.violations",)

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        topics = state.of(TopicState)
        live = require(topics.live, "live")
        with job_label(ctx.spark, f"{ctx.command}: judge live topics"):
            # The policies' context is every live topic of the clusters, as for a plan.
            context = policy_context(ctx.spark, ctx.conf, require(state.states, "states"),
                                     live)
            rows = violations(in_run(ctx, live), require(topics.desired, "desired"),
                              ctx.conf.section(TopicsConf).create_policies, context,
                              ctx.run_id, utc_now(), ctx.conf.checks.severity,
                              cut).localCheckpoint(eager=True)
            ctx.steps.done("check")
            ctx.commits.side("check-count",
                             lambda: log_phase(self.name, started, rows, by="severity"))
        topics.violations = rows
