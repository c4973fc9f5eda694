"""The consumer groups' part of the run package, on the entity base (`run.entity`): their
requests (`kinds.groups.requests`, `kinds.groups.tasks`).

IncrementalAlterConfigs has validateOnly: every ALTER the plan allows goes to the broker
with it first, and the broker's answer (a config it does not know, a value it refuses) is
the group's `validate` row. DeleteGroups has none: a DELETE is validated by reading the
group's type, state and members again (ListGroups v5, DescribeGroups), and refused while it
has members. `apply` sets the configs the broker passed, and deletes groups only with
`--allow-group-removals`; `verify` reads every changed group back. `check` reports each live
group no manifest row names (rule `unmanaged_group`), and with `checks.usage` records the
group inventory and judges it (`GroupUsage`: `group_lagging`, `stale_group`).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf import Conf
from provisioning.delta.idempotent import Transaction, append_once
from provisioning.delta.tables import JobTable, TableRef, read_table
from provisioning.kinds.groups import schema
from provisioning.kinds.groups.conf import GroupsConf, inventory_table
from provisioning.kinds.groups.model import MODEL
from provisioning.kinds.groups.names import GROUP_LAGGING, STALE_GROUP, UNMANAGED_GROUP
from provisioning.kinds.groups.policies import GroupPolicyContext
from provisioning.kinds.groups.requests import group_offsets, group_states
from provisioning.kinds.groups.rules import (
    group_inventory,
    lagging_groups,
    last_recorded,
    stale_groups,
)
from provisioning.kinds.groups.tasks import group_results
from provisioning.results import utc_now
from provisioning.run.engine import Phase, RunContext, log_counts
from provisioning.run.entity import ClusterRead, EntitySlice, OneTaskKind
from provisioning.run.entity.phases import EntityPhase, findings
from provisioning.run.kind import CHECK, PlanLayer
from provisioning.run.state import RunState
from provisioning.session import job_label

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
                [row for c in sorted(read) for row in read[c].offsets], schema.GROUP_OFFSETS)
            topics = spark.createDataFrame(
                [row for c in sorted(read) for row in read[c].topics], schema.GROUP_TOPICS)
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


class GroupSlice(EntitySlice):
    """The consumer groups' slice of the run's state."""


class GroupsKind(OneTaskKind):
    name, State, model, conf_class = "groups", GroupSlice, MODEL, GroupsConf
    requests_named = ("validateOnly IncrementalAlterConfigs and group members",
                      "IncrementalAlterConfigs and DeleteGroups", "verify consumer groups")
    summary_keys = ("removals_not_allowed", "clusters_not_readable")
    check_rule = UNMANAGED_GROUP
    request_columns = (*schema.GROUP_KEY, "action", "changed")
    results = staticmethod(group_results)

    def read_live(self, ctx: RunContext) -> tuple[Mapping[str, ClusterRead], DataFrame]:
        found = group_states(ctx.clusters, ctx.credentials, ctx.conf.kafka,
                             self.conf(ctx).batch_size)
        return self.live_frame(ctx, {c: ([(c, group, g.type, g.state, g.members, dict(g.configs))
                                          for group, g in sorted(s.groups.items())], s.problem)
                                     for c, s in found.items()})

    def policy_context(self, ctx: RunContext, state: RunState) -> Any:
        conf = self.conf(ctx)
        assert isinstance(conf, GroupsConf)
        return GroupPolicyContext(max_changes_per_cluster=conf.max_changes_per_cluster,
                                  protected_groups=conf.protected_groups)

    def phases(self, step: str, layers: Sequence[PlanLayer] = ()) -> tuple[Phase, ...]:
        found = tuple(super().phases(step, layers))
        return (*found, GroupUsage(self)) if step == CHECK else found

    def job_tables(self, conf: Conf, command: str) -> Sequence[JobTable]:
        # `check` reads the group inventory's earlier rows before it appends its own.
        if command != "check" or not conf.checks.usage:
            return ()
        return (JobTable(inventory_table(conf), schema.GROUP_INVENTORY),)

    def finding(self) -> Column:
        # A group id with configs and no group (no consumer used it yet) has no type or state.
        return F.format_string(
            "group %s (%s): named by no group manifest row (import --groups adopts it)",
            F.col("group"), F.when(F.col("type").isNull(), F.lit("configs only, no group"))
            .otherwise(F.format_string("type %s, state %s", F.col("type"),
                                       F.col("group_state"))))


RUN = GroupsKind()
