"""Offset reset policies: small named transforms over OFFSET_PLAN rows that append
POLICY_VIOLATION structs (`with_violation`), as the other kinds' policies do. A refused
row is `blocked`.

Always on, first: protected_groups, no RESET or DELETE of a group whose id matches a glob
of `groups.protected_groups` (the consumer groups' setting: a group the job never changes
is never given offsets either).

Configurable (conf `policies.offset: [{name: ...}]`), in conf order:

- reset_requires_reason: a request without a reason (null or blank) is refused;
- custom: callable ("package.module:function"), any other params passed through. Called as
  `fn(plan, context, params) -> DataFrame` with OFFSET_PLAN rows and the
  OffsetPolicyContext.

Always last: max_offset_changes_per_cluster (`offsets.max_changes_per_cluster`: the
partitions reset or deleted on one cluster in one run), the entity base's cap. Policies
judge valid rows only; `force` lifts none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.kinds.offsets.names import DELETE, RESET
from provisioning.kinds.offsets.schema import OFFSET_PLAN
from provisioning.transforms.entity import EntityPolicyContext, Factory, Subject
from provisioning.transforms.policies.base import Transform
from provisioning.transforms.policies.custom import make_custom
from provisioning.transforms.scope import matching_globs


@dataclass(frozen=True, kw_only=True)
class OffsetPolicyContext(EntityPolicyContext):
    """What the offset policies may read beside the plan: the cap's, and

    protected_groups: `groups.protected_groups` (globs).
    """

    protected_groups: tuple[str, ...] = ()


def reset_text() -> Column:
    """"request r-1 (group g, topic t, partition 0)": a plan or audit row's reset."""
    part = F.when(F.col("partition").isNull(), F.lit("")).otherwise(
        F.format_string(", partition %d", F.col("partition")))
    return F.format_string("request %s (group %s, topic %s%s)", F.col("request_id"),
                           F.col("group"), F.col("topic"), part)


# How the policies name a plan row's reset, and the plan's columns they keep.
SUBJECT = Subject("offset reset", reset_text, OFFSET_PLAN)


def _changes() -> Column:
    return F.col("action").isin(RESET, DELETE)


def protected_groups(params: Mapping[str, Any], context: OffsetPolicyContext) -> Transform:
    """The groups of `groups.protected_groups` are never given offsets by the job."""
    globs = context.protected_groups

    def transform(df: DataFrame) -> DataFrame:
        matched = F.array_join(matching_globs(F.col("group"), globs), ", ")
        message = SUBJECT.message(
            "groups.protected_groups protects group %s (%s); the job never resets or "
            "deletes its offsets", F.col("group"), matched)
        return SUBJECT.violated(df, "protected_groups", _changes() & (matched != ""),
                                message)

    return transform


def reset_requires_reason(params: Mapping[str, Any], context: OffsetPolicyContext
                          ) -> Transform:
    """A request that gives no reason is not applied."""

    def transform(df: DataFrame) -> DataFrame:
        missing = F.col("reason").isNull() | (F.trim(F.col("reason")) == "")
        message = SUBJECT.message("it gives no reason (policy reset_requires_reason); add "
                                  "one to the request")
        return SUBJECT.violated(df, "reset_requires_reason", _changes() & missing, message)

    return transform


# A team's own offset policy, named in conf (see the module docstring for its contract).
custom = make_custom("offset", OFFSET_PLAN, "OFFSET_PLAN")

# The policies `policies.offset` may name (their parameter checks:
# provisioning.kinds.offsets.conf.OFFSET_POLICY_MODELS, kept equal by a unit test).
OFFSET_POLICIES: dict[str, Factory] = {"custom": custom,
                                       "reset_requires_reason": reset_requires_reason}
ALWAYS_ON: tuple[tuple[str, Factory], ...] = (("protected_groups", protected_groups),)
