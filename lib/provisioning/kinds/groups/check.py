"""`check` of consumer groups beyond the manifests: the group inventory of the run (each live
group's type, state, members, and its lag on each topic it committed offsets on), appended to
`<tables.inventory>_groups` as the inventory's history, and judged by `group_lagging` and
`stale_group` (`kinds.groups.rules`)."""

from __future__ import annotations

import functools
import logging
import time

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.delta.idempotent import Transaction, append_once
from provisioning.delta.tables import TableRef, read_table
from provisioning.kinds.groups.conf import GroupsConf, inventory_table
from provisioning.kinds.groups.names import GROUP_LAGGING, STALE_GROUP
from provisioning.kinds.groups.requests import group_offsets
from provisioning.kinds.groups.rules import (
    group_inventory,
    lagging_groups,
    last_recorded,
    stale_groups,
)
from provisioning.results import utc_now
from provisioning.run.engine import RunContext, log_counts
from provisioning.run.entity.phases import EntityPhase, findings
from provisioning.run.state import RunState
from provisioning.session import job_label
from schemas.groups import GROUP_OFFSETS, GROUP_TOPICS

log = logging.getLogger(__name__)

# The rules' severity unless `checks.severity` says otherwise.
DEFAULT_SEVERITY = {GROUP_LAGGING: names.WARNING, STALE_GROUP: names.WARNING}


class GroupUsage(EntityPhase):
    """`check` with `checks.usage` (whether or not the conf names group manifests; not when
    the run is narrowed to some topics): every live group's committed offsets and the log
    end offsets of their partitions, read from the driver (`kinds.groups.requests.
    group_offsets`: ListGroups v5, DescribeGroups, OffsetFetch, Metadata, ListOffsets per
    leader), as GROUP_INVENTORY rows appended beside the next steps; then the findings
    `group_lagging` and `stale_group`. Nothing is sent that changes Kafka."""

    step = "usage"
    own_reads = ("@violations",)
    own_writes = ("@violations",)

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        scope = getattr(ctx.options, "scope", None)
        return ctx.conf.checks.usage and scope is not None and not scope.narrowed

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        own, spark = self.own(state), ctx.spark
        table = TableRef(inventory_table(ctx.conf))
        with job_label(spark, f"{ctx.command}: group inventory"):
            history = read_table(spark, table).where(
                F.col("cluster").isin(*ctx.cluster_names)
                & (F.col("run_id") != F.lit(ctx.run_id))).localCheckpoint(eager=True)
            recorded: dict[str, set[str]] = {}
            for r in last_recorded(history).select("cluster", "topic").distinct().collect():
                recorded.setdefault(r["cluster"], set()).add(r["topic"])
            read = group_offsets(ctx.clusters, ctx.credentials, ctx.conf.kafka, recorded)
            offsets = spark.createDataFrame(
                [row for c in sorted(read) for row in read[c].offsets], GROUP_OFFSETS)
            topics = spark.createDataFrame(
                [row for c in sorted(read) for row in read[c].topics], GROUP_TOPICS)
            inventory = group_inventory(offsets, topics, history, ctx.run_id, utc_now()
                                        ).localCheckpoint(eager=True)
        for name, (error, message) in sorted((c, r.problem) for c, r in read.items()
                                             if r.problem is not None):
            log.warning("cluster %s: no group inventory: %s (%s)", name, message, error)
        ctx.commits.record("group-inventory-write", functools.partial(
            append_once, inventory.coalesce(1), table,
            Transaction(f"topic-provisioning-group-inventory-{ctx.run_id}", 1)))
        judged = [rows for rows in self.judged(ctx, inventory) if rows is not None]
        if own.violations is not None:
            judged.insert(0, own.violations)
        if judged:
            own.violations = functools.reduce(DataFrame.unionByName, judged
                                              ).localCheckpoint(eager=True)
        ctx.commits.side("group-inventory-count", lambda: log_counts(
            self.name, started, {c: len(r.offsets) for c, r in read.items()}, "offset row"))
        ctx.steps.done("group inventory")

    def judged(self, ctx: RunContext, inventory: DataFrame) -> list[DataFrame | None]:
        """The findings of `group_lagging` and `stale_group` (None: the rule is off)."""
        levels = {**DEFAULT_SEVERITY, **ctx.conf.checks.severity}
        threshold = ctx.conf.section(GroupsConf).lag_threshold
        made = ((GROUP_LAGGING, lambda: lagging_groups(inventory, threshold)),
                (STALE_GROUP, lambda: stale_groups(inventory)))
        return [None if levels[rule] == names.OFF else
                findings(ctx, rows(), rule, levels[rule], F.col("detail"))
                for rule, rows in made]
