"""`check` of topics (see engine.py): every live topic in the run's scope measured (its
usage, in the inventory) and judged by the configured create policies, the health rules
and the usage rules, as VIOLATIONS rows."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning.delta.idempotent import Transaction, append_once
from provisioning.delta.tables import TableRef, read_table
from provisioning.kinds.topics.conf import TopicsConf
from provisioning.kinds.topics.executors import read_usage
from provisioning.kinds.topics.phases import NAME, in_run
from provisioning.kinds.topics.planning import policy_context
from provisioning.kinds.topics.rules import severities, violations
from provisioning.kinds.topics.rules.usage import (
    disk_forecast,
    disk_rows,
    disk_usage,
    empty_topic,
    growth,
    idle_topic,
    inventory_rows,
    usage_work,
)
from provisioning.kinds.topics.state import TopicState
from provisioning.names import DISK_FORECAST, OFF
from provisioning.results import utc_now
from provisioning.run.engine import Phase, RunContext, log_phase, require
from provisioning.run.executors import materialized
from provisioning.run.phases import cut
from provisioning.run.state import RunState
from provisioning.session import job_label


class Usage(Phase):
    """`check`: what every judged topic in the run's scope holds and who reads it, and each
    broker's log dirs (`kafka.usage`: a handful of requests per broker), as INVENTORY and
    DISKS rows appended to `tables.inventory` and `tables.disks` beside the next steps."""

    name = "usage"
    kind = NAME
    reads = ("states", "topics.live")
    writes = ("topics.inventory", "topics.disks")
    runs_tasks = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return ctx.conf.checks.usage

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        topics = state.of(TopicState)
        states = require(state.states, "states")
        live = require(topics.live, "live")
        with job_label(ctx.spark, f"{ctx.command}: measure usage"):
            read = materialized(read_usage(
                ctx.spark, ctx.clusters, ctx.credentials, ctx.conf.kafka, ctx.run_id,
                {n: s.broker_ids for n, s in states.items()}, usage_work(in_run(ctx, live))))
            inventory, disks = inventory_rows(read), disk_rows(read)
            ctx.steps.done("usage")
        for table, rows, what in ((ctx.conf.tables.inventory, inventory, "inventory"),
                                  (ctx.conf.tables.disks, disks, "disks")):
            ctx.commits.record(f"{what}-write", functools.partial(
                append_once, rows.coalesce(1), TableRef(table),
                Transaction(f"topic-provisioning-{what}-{ctx.run_id}", 1)))
        ctx.commits.side("usage-count",
                         lambda: log_phase(self.name, started, inventory, by="cluster"))
        topics.inventory, topics.disks = inventory, disks


class Check(Phase):
    """`check`: every live topic in the run's scope that is not internal, managed or not,
    judged by the configured create policies, the health rules and the usage rules
    (`kinds.topics.rules.violations`), as VIOLATIONS rows (recorded with every kind's by
    `run.phases.RecordFindings`). Nothing is sent to Kafka."""

    name = "check"
    kind = NAME
    reads = ("states", "topics.desired", "topics.live", "topics.inventory", "topics.disks")
    writes = ("topics.violations",)

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        topics = state.of(TopicState)
        live = require(topics.live, "live")
        checks = ctx.conf.checks
        levels = severities(checks.severity)
        now = utc_now()
        with job_label(ctx.spark, f"{ctx.command}: judge live topics"):
            # The policies' context is every live topic of the clusters, as for a plan.
            context = policy_context(ctx.spark, ctx.conf, require(state.states, "states"),
                                     live)
            usage, brokers = self.usage_findings(ctx, state, levels)
            rows = violations(in_run(ctx, live), require(topics.desired, "desired"),
                              ctx.conf.section(TopicsConf).create_policies, context,
                              ctx.run_id, now, checks.severity, cut, usage=usage,
                              brokers=brokers).localCheckpoint(eager=True)
            ctx.steps.done("check")
            ctx.commits.side("check-count",
                             lambda: log_phase(self.name, started, rows, by="severity"))
        topics.violations = rows

    def usage_findings(self, ctx: RunContext, state: RunState, levels: Mapping[str, str]
                       ) -> tuple[DataFrame | None, DataFrame | None]:
        """The usage rules' findings on topics, and on brokers (with the `snapshot_at` of
        their cluster); None, None when `checks.usage` is off."""
        checks = ctx.conf.checks
        topics = state.of(TopicState)
        if not checks.usage:
            return None, None
        live = require(topics.live, "live")
        inventory = require(topics.inventory, "inventory")
        disks = require(topics.disks, "disks")
        usage = idle_topic(inventory, utc_now(), checks.idle_days).unionByName(
            empty_topic(inventory))
        brokers = disk_usage(disks, checks.disk_used_ratio)
        if levels[DISK_FORECAST] != OFF:
            grown = growth(self.history(ctx), inventory, in_run(ctx, live), checks.disk_days)
            brokers = brokers.unionByName(disk_forecast(
                grown, disks, checks.disk_used_ratio, checks.disk_days))
        snapshot_at = live.groupBy("cluster").agg(F.max("snapshot_at").alias("snapshot_at"))
        return usage, brokers.join(snapshot_at, "cluster", "left")

    @staticmethod
    def history(ctx: RunContext) -> DataFrame:
        """The inventory's earlier rows of the run's clusters (empty on a first run)."""
        earlier = read_table(ctx.spark, TableRef(ctx.conf.tables.inventory))
        return earlier.where(F.col("cluster").isin(*ctx.cluster_names)
                             & (F.col("run_id") != F.lit(ctx.run_id)))
