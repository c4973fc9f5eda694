"""The consumer groups' part of the run package, on the entity base (`run.entity`): their
requests (`kinds.groups.requests`, `kinds.groups.tasks`).

IncrementalAlterConfigs has validateOnly: every ALTER the plan allows goes to the broker
with it first, and the broker's answer (a config it does not know, a value it refuses) is
the group's `validate` row. DeleteGroups has none: a DELETE is validated by reading the
group's type, state and members again (ListGroups v5, DescribeGroups), and refused while it
has members. `apply` sets the configs the broker passed, and deletes groups only with
`--allow-group-removals`; `verify` reads every changed group back. `check` reports each live
group no manifest row names (rule `unmanaged_group`), and with `checks.usage` records the
group inventory and judges it (`kinds.groups.check`: `group_lagging`, `stale_group`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.conf import Conf
from provisioning.delta.tables import JobTable
from provisioning.kinds.groups.check import GroupUsage
from provisioning.kinds.groups.conf import GroupsConf, inventory_table
from provisioning.kinds.groups.model import MODEL
from provisioning.kinds.groups.names import UNMANAGED_GROUP
from provisioning.kinds.groups.policies import GroupPolicyContext
from provisioning.kinds.groups.requests import group_states
from provisioning.kinds.groups.tasks import group_results
from provisioning.run.engine import Phase, RunContext
from provisioning.run.entity import ClusterRead, EntitySlice, OneTaskKind
from provisioning.run.kind import CHECK, PlanLayer
from provisioning.run.state import RunState
from schemas.groups import GROUP_INVENTORY, GROUP_KEY, GROUP_LIVE


class GroupSlice(EntitySlice):
    """The consumer groups' slice of the run's state."""


class GroupsKind(OneTaskKind):
    name, State, model, conf_class = "groups", GroupSlice, MODEL, GroupsConf
    requests_named = ("validateOnly IncrementalAlterConfigs and group members",
                      "IncrementalAlterConfigs and DeleteGroups", "verify consumer groups")
    summary_keys = ("removals_not_allowed", "clusters_not_readable")
    check_rule = UNMANAGED_GROUP
    request_columns = (*GROUP_KEY, "action", "changed")
    results = staticmethod(group_results)

    def read_live(self, ctx: RunContext) -> tuple[Mapping[str, ClusterRead], DataFrame]:
        found = group_states(ctx.clusters, ctx.credentials, ctx.conf.kafka,
                             self.conf(ctx).batch_size)
        rows = [(c, group, g.type, g.state, g.members, dict(g.configs))
                for c, s in sorted(found.items()) for group, g in sorted(s.groups.items())]
        return ({c: ClusterRead(len(s.groups), s.problem) for c, s in found.items()},
                ctx.spark.createDataFrame(rows, GROUP_LIVE).localCheckpoint(eager=True))

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
        return (JobTable(inventory_table(conf), GROUP_INVENTORY),)

    def finding(self) -> Column:
        # A group id with configs and no group (no consumer used it yet) has no type or state.
        return F.format_string(
            "group %s (%s): named by no group manifest row (import --groups adopts it)",
            F.col("group"), F.when(F.col("type").isNull(), F.lit("configs only, no group"))
            .otherwise(F.format_string("type %s, state %s", F.col("type"),
                                       F.col("group_state"))))


RUN = GroupsKind()
