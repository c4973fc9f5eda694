"""Group policies over GROUP_PLAN rows, as the other kinds' (a refused row is `blocked`):
always on, first, and not lifted by `force`, protected_groups and group_members; then
`policies.group` in conf order (`custom`: `fn(plan, context, params) -> DataFrame` with
GROUP_PLAN rows and the GroupPolicyContext); always last the entity base's cap,
`groups.max_changes_per_cluster`. Policies judge valid rows only.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning.kinds.groups.names import ALTER, DELETE, MEMBERLESS
from provisioning.kinds.groups.plan import group_text
from provisioning.kinds.groups.schema import GROUP_PLAN
from provisioning.transforms.entity import EntityPolicyContext, Factory, Subject
from provisioning.transforms.policies.base import Transform
from provisioning.transforms.policies.custom import make_custom
from provisioning.transforms.scope import matching_globs


@dataclass(frozen=True, kw_only=True)
class GroupPolicyContext(EntityPolicyContext):
    """What the group policies may read beside the plan: the cap's, and

    protected_groups: `groups.protected_groups` (globs).
    """

    protected_groups: tuple[str, ...] = ()


# How the policies name a plan row's entity, and the plan's columns they keep.
SUBJECT = Subject("group", group_text, GROUP_PLAN)


def protected_groups(params: Mapping[str, Any], context: GroupPolicyContext) -> Transform:
    """The groups of `groups.protected_groups` are never changed or deleted by the job."""
    globs = context.protected_groups

    def transform(df: DataFrame) -> DataFrame:
        matched = F.array_join(matching_globs(F.col("group"), globs), ", ")
        refused = F.col("action").isin(ALTER, DELETE) & (matched != "")
        message = SUBJECT.message(
            "groups.protected_groups protects it (%s); the job never changes or deletes it "
            "(change it by hand, or take it out of groups.protected_groups first)", matched)
        return SUBJECT.violated(df, "protected_groups", refused, message)

    return transform


def group_members(params: Mapping[str, Any], context: GroupPolicyContext) -> Transform:
    """A group is deleted only when it has no members: its state (ListGroups) is one without
    any, and its member count (DescribeGroups, classic groups) is 0 or not known. A KIP-848
    consumer group, a share or a streams group is judged by its state, which DescribeGroups
    does not tell."""

    def transform(df: DataFrame) -> DataFrame:
        members = F.col("members")
        in_use = (~F.coalesce(F.col("group_state").isin(*MEMBERLESS), F.lit(False))
                  | F.coalesce(members > 0, F.lit(False)))
        refused = (F.col("action") == DELETE) & in_use
        message = SUBJECT.message(
            "it has %s member(s) (type %s, state %s); a group is deleted only when it has "
            "none: stop its consumers first (`force` does not lift this policy)",
            F.coalesce(members.cast("string"), F.lit("an unknown number of")),
            F.coalesce(F.col("type"), F.lit("unknown")),
            F.coalesce(F.col("group_state"), F.lit("unknown")))
        return SUBJECT.violated(df, "group_members", refused, message)

    return transform


# A team's own group policy, named in conf (see the module docstring for its contract).
custom = make_custom("group", GROUP_PLAN, "GROUP_PLAN")

# The policies `policies.group` may name (their parameter checks:
# provisioning.kinds.groups.conf.GROUP_POLICY_MODELS, kept equal by a unit test).
GROUP_POLICIES: dict[str, Factory] = {"custom": custom}
ALWAYS_ON: tuple[tuple[str, Factory], ...] = (
    ("protected_groups", protected_groups),
    ("group_members", group_members),
)
