"""Reassign policies: what replica moves of a live topic are allowed (rows that move replicas:
REASSIGN, or an ALTER with a `reassignment`).

Always on, in this order:

- replication_factor_fits_cluster: a partition would get more replicas than the cluster
  has live brokers (as for creates; never lifted);
- replication_factor_below_min_insync: a partition would get fewer replicas than the
  topic's `min.insync.replicas` (after the row's alter), which leaves it unwritable with
  `acks=all`; lifted by `force: true`;
- replication_factor_to_one: a partition of a topic with more replicas would keep one
  (a single copy of its data); lifted by `force: true`;
- max_reassign_partitions_per_cluster: over `reassign.max_partitions_per_cluster`
  partitions to move on one cluster (counted over the rows the checks above and the
  pre-send checks let through; moves already in flight are not counted), none of that
  cluster's moves starts; never lifted.

Configurable (conf `policies.reassign: [{name: custom, callable: ...}]`): `custom`, given
the PLAN rows as they are (see provisioning.transforms.policies.custom).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.conf import PolicySpec
from provisioning.kinds.reassign.plan import moves_planned
from provisioning.kinds.topics.policies.alter import configs_after
from provisioning.names import TOPIC_OVERRIDE
from provisioning.transforms.policies import Cut, with_policies
from provisioning.transforms.policies.base import (
    PolicyContext,
    PolicyFactory,
    Transform,
    as_plan,
    per_cluster_cap,
    with_violation,
)
from provisioning.transforms.policies.columns import (
    forced,
    live_broker_count,
    no_violations_yet,
    with_cluster_facts,
)
from provisioning.transforms.policies.custom import make_custom
from schemas import PLAN, column_names


@dataclass(frozen=True)
class ReassignContext(PolicyContext):
    """The cluster facts the reassign policies judge with: the topic policies' (clusters,
    live topics) and the per-run cap on partitions moved on one cluster
    (`reassign.max_partitions_per_cluster`)."""

    max_reassign_partitions_per_cluster: int = 500


_DEFAULT_CAP = 500
# The reassign policies a conf may name (`policies.reassign`); the always-on ones are
# ALWAYS_ON.
REASSIGN_POLICIES: dict[str, PolicyFactory] = {"custom": make_custom("reassign")}

_FORCE_HINT = "set `force: true` on its manifest row to make this change anyway"
_MIN_INSYNC = "min.insync.replicas"


def _sizes(side: str) -> Column:
    return F.transform("reassignment", lambda m: F.size(m[side]))


def _asked_replication_factor() -> Column:
    """The row's replication factor when it gives one without an assignment."""
    return F.when(F.col("replica_assignment").isNull(), F.col("replication_factor"))


def replicas_after_max() -> Column:
    """The most replicas a moved partition of the row is to have: the row's replication
    factor (even when the live brokers cannot hold that many), else the largest of its
    assignment's targets."""
    return F.coalesce(_asked_replication_factor(), F.array_max(_sizes("after")))


def replicas_after_min() -> Column:
    """The fewest replicas a moved partition of the row is to have."""
    return F.coalesce(_asked_replication_factor(), F.array_min(_sizes("after")))


def replicas_before_max() -> Column:
    """The most replicas a moved partition of the row has now."""
    return F.array_max(_sizes("before"))


def min_insync_after() -> Column:
    """The topic's min.insync.replicas once its alter is made: its own override after the
    alter, else a broker-level setting the snapshot kept, else Kafka's default of 1."""
    own = F.try_element_at(configs_after(), F.lit(_MIN_INSYNC))
    inherited = F.try_element_at(F.filter(
        "live_configs",
        lambda c: (c["name"] == F.lit(_MIN_INSYNC)) & (c["source"] != F.lit(TOPIC_OVERRIDE))),
        F.lit(1))["value"]
    return F.coalesce(own, inherited, F.lit("1")).try_cast("int")


def replication_factor_fits_cluster(params: Mapping[str, Any], context: PolicyContext
                                    ) -> Transform:
    """A partition cannot have more replicas than the cluster has live brokers."""

    def transform(df: DataFrame) -> DataFrame:
        facts = with_cluster_facts(df, context)
        too_many = moves_planned() & (replicas_after_max() > live_broker_count())
        message = F.format_string(
            "replication factor %d of topic %s exceeds the %d live broker(s) of cluster %s; "
            "lower the replication factor or add brokers", replicas_after_max(),
            F.col("topic"), live_broker_count(), F.col("cluster"))
        return as_plan(with_violation(facts, "replication_factor_fits_cluster", too_many,
                                      message))

    return transform


def replication_factor_below_min_insync(params: Mapping[str, Any], context: PolicyContext
                                        ) -> Transform:
    """Fewer replicas than min.insync.replicas: no acks=all producer could write."""

    def transform(df: DataFrame) -> DataFrame:
        below = moves_planned() & ~forced() & (replicas_after_min() < min_insync_after())
        message = F.format_string(
            "replication factor %d of topic %s would be below its min.insync.replicas %d: "
            "producers with acks=all could no longer write to it; lower min.insync.replicas "
            "first, or %s", replicas_after_min(), F.col("topic"), min_insync_after(),
            F.lit(_FORCE_HINT))
        return as_plan(with_violation(df, "replication_factor_below_min_insync", below,
                                      message))

    return transform


def replication_factor_to_one(params: Mapping[str, Any], context: PolicyContext
                              ) -> Transform:
    """Down to one replica from more: one broker lost would lose the data."""

    def transform(df: DataFrame) -> DataFrame:
        to_one = (moves_planned() & ~forced() & (replicas_after_min() == 1)
                  & (replicas_before_max() > 1))
        message = F.format_string(
            "lowering topic %s from %d replicas to 1 leaves a single copy of its data, lost "
            "with that broker; %s", F.col("topic"), replicas_before_max(), F.lit(_FORCE_HINT))
        return as_plan(with_violation(df, "replication_factor_to_one", to_one, message))

    return transform


def new_moves() -> Column:
    """The partitions a row would start moving (those in flight already are not sent)."""
    return F.size(F.filter("reassignment", lambda m: ~F.coalesce(m["in_flight"], F.lit(False))))


def max_reassign_partitions_per_cluster(params: Mapping[str, Any], context: PolicyContext
                                        ) -> Transform:
    """Over the per-run cap of partitions to move, no move starts on that cluster."""
    # A topic policy's context (a custom policy's test) has the default cap.
    cap = getattr(context, "max_reassign_partitions_per_cluster", _DEFAULT_CAP)
    checked = F.coalesce(F.size("reassign_problems"), F.lit(0)) <= 0
    return per_cluster_cap(
        "max_reassign_partitions_per_cluster",
        moves_planned() & no_violations_yet() & checked & (new_moves() > 0), cap,
        "partition moves", "no move starts", "reassign.max_partitions_per_cluster",
        column_names(PLAN), weight=new_moves())


ALWAYS_ON: tuple[tuple[str, PolicyFactory], ...] = (
    ("replication_factor_fits_cluster", replication_factor_fits_cluster),
    ("replication_factor_below_min_insync", replication_factor_below_min_insync),
    ("replication_factor_to_one", replication_factor_to_one),
    ("max_reassign_partitions_per_cluster", max_reassign_partitions_per_cluster),
)


def with_reassign_policies(plan: DataFrame, specs: Sequence[PolicySpec],
                           context: PolicyContext, cut: Cut | None = None) -> DataFrame:
    """Append the violations of the always-on and the configured reassign policies to PLAN
    rows.

    specs: the conf's `policies.reassign`, applied in order after the always-on checks.
    cut: as for `provisioning.transforms.policies.with_create_policies`.
    """
    return with_policies(plan, specs, context, "reassign", REASSIGN_POLICIES, ALWAYS_ON, cut)
