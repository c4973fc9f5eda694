"""Consumer groups' model on the entity base (`MODEL`, `transforms.entity`): their plan
(`kinds.groups.plan`) and policies (`kinds.groups.policies`). A group's audit row holds, in
`consumer_group`, its id, its type, state and members as read at plan, the configs asked
for and those found (live at plan, validate and apply; read back at verify).
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.kinds.groups import names as group_names
from provisioning.kinds.groups import schema as tables
from provisioning.kinds.groups.plan import (
    group_manifest_rows,
    group_text,
    plan_groups,
    unmanaged_groups,
    with_group_row_errors,
)
from provisioning.kinds.groups.policies import ALWAYS_ON, GROUP_POLICIES
from provisioning.transforms.entity import EntityModel
from provisioning.transforms.policies.base import Transform


def group_struct(named: str, asked: str, found: Column) -> Column:
    """The audit's `consumer_group` struct: the group of the row aliased `named` (`""`,
    `"r."`), what the plan row aliased `asked` read and asked for (`""`, `"p."`), what was
    `found`."""
    return F.struct(F.col(f"{named}group").alias("group"),
                    *[F.col(f"{asked}{c}").alias(c) for c in ("type", "group_state",
                                                              "members", "configs")],
                    found.alias("found"))


class GroupModel(EntityModel):
    nouns = group_names.NOUNS
    manifest, desired, live = tables.GROUP_MANIFEST, tables.GROUP_DESIRED, tables.GROUP_LIVE
    snapshot, plan_schema = tables.GROUP_SNAPSHOT, tables.GROUP_PLAN
    result = tables.GROUP_RESULT
    manifest_keys, key, marker = ("cluster", "group"), tables.GROUP_KEY, "group"
    adds, removes = group_names.ALTER, group_names.DELETE
    added, removed = group_names.ALTERED, group_names.DELETED
    audit_column, identity = tables.AUDIT_COLUMN, ("group",)
    text = staticmethod(group_text)
    entity_list, text_column = None, "group"
    listing_order = ("cluster", "group")
    policies, always_on = GROUP_POLICIES, ALWAYS_ON
    cap_refuses = "no group is changed or deleted"

    def validation(self, known_clusters: tuple[str, ...]) -> Transform:
        return with_group_row_errors(known_clusters)

    def plan(self, desired: DataFrame, live: DataFrame, remove_unlisted: bool) -> DataFrame:
        return plan_groups(desired, live, remove_unlisted)

    def unmanaged(self, live: DataFrame, desired: DataFrame) -> DataFrame:
        return unmanaged_groups(live, desired)

    def manifest_rows(self, live: DataFrame, owner: str | None) -> DataFrame:
        return group_manifest_rows(live, owner)

    def plan_struct(self) -> Column:
        return group_struct("", "", F.col("live_configs"))

    def result_struct(self) -> Column:
        # validate and apply answers carry no configs: what the plan read live was found.
        return group_struct("r.", "p.", F.when(F.col("r.phase") == names.VERIFY,
                                         F.col("r.result_configs"))
                            .otherwise(F.col("p.live_configs")))


MODEL = GroupModel()
