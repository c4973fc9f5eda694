"""Create policies: the always-on safety checks and the ones a conf may configure.

Every policy judges only CREATE rows and works on the values the topic will
really get: partitions and replication factor from the row (assignment first),
else the cluster's broker defaults from the PolicyContext. A value that stays
unknown (no default readable) leaves the row unjudged.

Configurable (conf `policies.create: [{name: ..., <params>}]`):

- topic_name_pattern: default (regex), by_owner ({owner: regex}); at least one.
- partitions_range / replication_factor_range: min, max (ints >= 1); at least one.
- required_configs: configs ({config name: regex or null}).
- forbidden_configs: configs ([config names]).
- min_insync_below_rf: no parameters.
- partition_budget: max_partitions (int), per cluster, live topics included.
- owner_partition_quota: "quotas" ({owner: int}), default (int); at least one.
- custom: callable ("package.module:function"), any other params passed through.
  Called as `fn(plan, context, params) -> DataFrame`: it gets PLAN rows, the
  PolicyContext and its params (without `callable`), and returns the same rows
  with exactly the PLAN columns, having appended violations with
  `base.with_violation` to CREATE rows only; no Spark action. The returned
  columns and types are checked (PolicyError otherwise). Full contract in
  provisioning.policies.custom.

Always on, before the configured ones: replication_factor_fits_cluster,
assignment_brokers_exist, min_insync_within_rf, name_collision.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from provisioning.conf.policies import require_valid
from provisioning.kinds.topics.conf import CREATE_POLICIES
from provisioning.transforms.policies.base import (
    PolicyContext,
    PolicyFactory,
    Transform,
    as_plan,
    is_create,
    requested_partitions,
    requested_replication_factor,
    with_violation,
)
from provisioning.transforms.policies.columns import (
    BROKER_IDS,
    default_note,
    desired_config,
    desired_int_config,
    effective_partitions,
    effective_replication_factor,
    full_match,
    listed,
    live_broker_count,
    no_violations_yet,
    with_cluster_facts,
)

_MIN_INSYNC = "min.insync.replicas"
_NORMALIZED = "_policy_normalized_name"
_PLANNED_NAMES = "_policy_planned_names"
_LIVE_NAMES = "_policy_live_names"
_LIVE_TOTAL = "_policy_live_partitions_total"


def _literal_map(mapping: Mapping[str, Any], value_type: str) -> Column:
    """A literal map<string, value_type> column; an empty mapping gives a typed null."""
    if not mapping:
        return F.lit(None).cast(f"map<string,{value_type}>")
    return F.create_map(*[F.lit(x) for kv in mapping.items() for x in kv])


def _rf_text() -> Column:
    """"replication factor N" plus where N came from."""
    return F.concat_ws("", F.format_string("replication factor %d", effective_replication_factor()),
                       default_note(requested_replication_factor()))


def _partitions_text() -> Column:
    """"partitions N" plus where N came from."""
    return F.concat_ws("", F.format_string("partitions %d", effective_partitions()),
                       default_note(requested_partitions()))


# --- always on ------------------------------------------------------------------------------


def replication_factor_fits_cluster(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """A topic cannot have more replicas than the cluster has brokers."""

    def transform(df: DataFrame) -> DataFrame:
        facts = with_cluster_facts(df, context)
        too_many_replicas = is_create() & (effective_replication_factor() > live_broker_count())
        message = F.concat_ws(
            "", _rf_text(),
            F.format_string(" exceeds the %d live broker(s) of cluster %s; lower the "
                            "replication factor or add brokers", live_broker_count(),
                            F.col("cluster")))
        return as_plan(with_violation(facts, "replication_factor_fits_cluster",
                                    too_many_replicas, message))

    return transform


def assignment_brokers_exist(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """Every broker of an explicit replica assignment must be live in the cluster."""

    def transform(df: DataFrame) -> DataFrame:
        facts = with_cluster_facts(df, context)
        assigned = F.array_distinct(F.flatten(F.map_values("replica_assignment")))
        unknown = F.array_except(assigned, F.col(BROKER_IDS))
        names_unknown_broker = is_create() & (F.size(unknown) > 0)
        message = F.format_string(
            "replica_assignment names broker(s) %s that are not live in cluster %s "
            "(live brokers: %s); assign only live brokers",
            listed(unknown), F.col("cluster"), listed(F.col(BROKER_IDS)))
        return as_plan(with_violation(facts, "assignment_brokers_exist",
                                    names_unknown_broker, message))

    return transform


def min_insync_within_rf(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """min.insync.replicas above the replication factor: the broker creates the topic, but
    no acks=all producer can ever write to it."""

    def transform(df: DataFrame) -> DataFrame:
        facts = with_cluster_facts(df, context)
        min_insync = desired_int_config(_MIN_INSYNC)
        unreachable = is_create() & (min_insync > effective_replication_factor())
        message = F.concat_ws(
            "", F.format_string("min.insync.replicas %d exceeds the ", min_insync), _rf_text(),
            F.lit("; acks=all producers could never write: lower min.insync.replicas or "
                  "raise the replication factor"))
        return as_plan(with_violation(facts, "min_insync_within_rf", unreachable, message))

    return transform


def name_collision(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """Kafka refuses names that differ only by '.' versus '_' (their metric names collide)."""

    def transform(df: DataFrame) -> DataFrame:
        live_names = (
            context.live
            .select("cluster", F.translate("topic", ".", "_").alias(_NORMALIZED), "topic")
            .groupBy("cluster", _NORMALIZED)
            .agg(F.collect_set("topic").alias(_LIVE_NAMES))
        )
        same_normalized = Window.partitionBy("cluster", _NORMALIZED)
        named = (
            df.withColumn(_NORMALIZED, F.translate("topic", ".", "_"))
            .withColumn(_PLANNED_NAMES,
                        F.collect_set(F.when(is_create(), F.col("topic"))).over(same_normalized))
            .join(live_names, on=["cluster", _NORMALIZED], how="left")
        )
        itself = F.array(F.col("topic"))
        live_others = F.array_except(
            F.coalesce(F.col(_LIVE_NAMES), F.array().cast("array<string>")), itself)
        planned_others = F.array_except(F.col(_PLANNED_NAMES), itself)
        collides_live = F.size(live_others) > 0
        collides_planned = F.size(planned_others) > 0
        collides = is_create() & (collides_live | collides_planned)
        message = F.concat(
            F.format_string("topic %s collides with ", F.col("topic")),
            F.concat_ws("; ",
                        F.when(collides_live, F.concat(F.lit("live topic(s) "),
                                                       listed(live_others))),
                        F.when(collides_planned, F.concat(F.lit("planned topic(s) "),
                                                          listed(planned_others)))),
            F.format_string(" of cluster %s: Kafka treats '.' and '_' alike in metric names; "
                            "rename one of them", F.col("cluster")))
        return as_plan(with_violation(named, "name_collision", collides, message))

    return transform


ALWAYS_ON: tuple[tuple[str, PolicyFactory], ...] = (
    ("replication_factor_fits_cluster", replication_factor_fits_cluster),
    ("assignment_brokers_exist", assignment_brokers_exist),
    ("min_insync_within_rf", min_insync_within_rf),
    ("name_collision", name_collision),
)


# --- configurable ---------------------------------------------------------------------------


def topic_name_pattern(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """Topic names must fully match their owner's rule, else the default rule."""
    require_valid(CREATE_POLICIES, "create", "topic_name_pattern", params)
    by_owner: Mapping[str, str] = params.get("by_owner") or {}
    default: str | None = params.get("default")

    def transform(df: DataFrame) -> DataFrame:
        owner_rule = F.try_element_at(_literal_map(by_owner, "string"), F.col("owner"))
        rule = F.coalesce(owner_rule, F.lit(default).cast("string"))
        misnamed = is_create() & ~full_match(F.col("topic"), rule)
        whose_rule = F.coalesce(
            F.when(owner_rule.isNotNull(),
                   F.format_string("the naming rule of owner %s", F.col("owner"))),
            F.lit("the default naming rule"))
        message = F.format_string("topic %s does not match %s, %s; rename the topic",
                                  F.col("topic"), rule, whose_rule)
        return as_plan(with_violation(df, "topic_name_pattern", misnamed, message))

    return transform


def _make_range(policy: str, value_text: Callable[[], Column],
                effective: Callable[[], Column]) -> PolicyFactory:
    def make(params: Mapping[str, Any], context: PolicyContext) -> Transform:
        """The value the topic will get must lie within the conf's `min` and `max`."""
        require_valid(CREATE_POLICIES, "create", policy, params)
        low: int | None = params.get("min")
        high: int | None = params.get("max")

        def transform(df: DataFrame) -> DataFrame:
            facts = with_cluster_facts(df, context)
            # (violated, how) per bound the conf sets; min <= max, so at most one holds.
            bounds: list[tuple[Column, str]] = []
            if low is not None:
                bounds.append((effective() < F.lit(low), f" is below the minimum of {low}"))
            if high is not None:
                bounds.append((effective() > F.lit(high), f" exceeds the maximum of {high}"))
            out_of_range = is_create() & reduce(lambda a, b: a | b, [c for c, _ in bounds])
            message = F.concat_ws(
                "", value_text(), *[F.when(c, F.lit(how)) for c, how in bounds],
                F.lit(" allowed on create"))
            return as_plan(with_violation(facts, policy, out_of_range, message))

        return transform

    return make


partitions_range = _make_range("partitions_range", _partitions_text, effective_partitions)
replication_factor_range = _make_range("replication_factor_range", _rf_text,
                                       effective_replication_factor)


def required_configs(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """Each named config must be set, and match its pattern when one is given."""
    require_valid(CREATE_POLICIES, "create", "required_configs", params)
    configs: Mapping[str, str | None] = params["configs"]

    def require(df: DataFrame, name: str, pattern: str | None) -> DataFrame:
        value = desired_config(name)
        missing = value.isNull()
        if pattern is None:
            violated = missing
            message = F.lit(f"config {name} is required; add it to the topic's configs")
        else:
            mismatch = ~full_match(value, F.lit(pattern))
            violated = missing | mismatch
            message = F.coalesce(
                F.when(missing, F.lit(f"config {name} is required (matching {pattern}); "
                                      "add it to the topic's configs")),
                F.when(mismatch, F.format_string(
                    f"config {name}=%s does not match the required pattern {pattern}",
                    value)))
        return with_violation(df, "required_configs", is_create() & violated, message)

    def transform(df: DataFrame) -> DataFrame:
        return as_plan(reduce(lambda acc, item: require(acc, *item), configs.items(), df))

    return transform


def forbidden_configs(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """None of the named configs may be set on create."""
    require_valid(CREATE_POLICIES, "create", "forbidden_configs", params)
    names: list[str] = params["configs"]

    def transform(df: DataFrame) -> DataFrame:
        keys = F.map_keys(F.col("configs"))
        present = F.filter(F.array(*[F.lit(n) for n in names]),
                           lambda n: F.array_contains(keys, n))
        sets_forbidden = is_create() & (F.size(present) > 0)
        message = F.format_string("config(s) %s may not be set on create; remove them from "
                                  "the topic's configs", listed(present))
        return as_plan(with_violation(df, "forbidden_configs", sets_forbidden, message))

    return transform


def min_insync_below_rf(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """min.insync.replicas must leave package for one replica down (be < replication factor)."""
    require_valid(CREATE_POLICIES, "create", "min_insync_below_rf", params)

    def transform(df: DataFrame) -> DataFrame:
        facts = with_cluster_facts(df, context)
        min_insync = desired_int_config(_MIN_INSYNC)
        no_slack = is_create() & (min_insync >= effective_replication_factor())
        message = F.concat_ws(
            "", F.format_string("min.insync.replicas %d is not below the ", min_insync),
            _rf_text(),
            F.lit("; with one replica down acks=all producers would stop: lower "
                  "min.insync.replicas or raise the replication factor"))
        return as_plan(with_violation(facts, "min_insync_below_rf", no_slack, message))

    return transform


def _in_topic_order(*keys: str) -> WindowSpec:
    """Rows of the same keys, first topic (by name) up to the current row."""
    return (Window.partitionBy(*keys).orderBy(F.col("topic").asc_nulls_last())
            .rowsBetween(Window.unboundedPreceding, Window.currentRow))


def _admitted() -> Column:
    """CREATE rows that use up a budget or an allowance: those no earlier policy refused."""
    return is_create() & no_violations_yet()


def partition_budget(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """The partitions of a cluster (live ones included) must stay within a budget.

    Admitted CREATE rows consume the budget in topic-name order; the first one
    that goes over and every admitted row after it are refused.
    """
    require_valid(CREATE_POLICIES, "create", "partition_budget", params)
    budget: int = params["max_partitions"]

    def transform(df: DataFrame) -> DataFrame:
        live_total = context.live.groupBy("cluster").agg(
            F.sum("partitions").alias(_LIVE_TOTAL))
        facts = with_cluster_facts(df, context).join(live_total, on="cluster", how="left")
        live = F.coalesce(F.col(_LIVE_TOTAL), F.lit(0))
        planned = F.sum(F.when(_admitted(), effective_partitions())).over(
            _in_topic_order("cluster"))
        running = live + planned
        over_budget = _admitted() & effective_partitions().isNotNull() & (running > budget)
        message = F.format_string(
            "creating %d partition(s) brings cluster %s to %d partitions (%d live + %d planned "
            "by this run up to this topic, in topic order), over the budget of %d",
            effective_partitions(), F.col("cluster"), running, live, planned, F.lit(budget))
        return as_plan(with_violation(facts, "partition_budget", over_budget, message))

    return transform


def owner_partition_quota(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """The partitions an owner holds on a cluster must stay within its allowance.

    Usage counts the live partitions of the plan's rows of that owner, then the
    owner's admitted CREATE rows in topic-name order (as partition_budget). Rows
    without an owner share the default allowance.
    """
    require_valid(CREATE_POLICIES, "create", "owner_partition_quota", params)
    allowances: Mapping[str, int] = params.get("quotas") or {}
    default: int | None = params.get("default")

    def transform(df: DataFrame) -> DataFrame:
        facts = with_cluster_facts(df, context)
        allowance = F.coalesce(
            F.try_element_at(_literal_map(allowances, "int"), F.col("owner")),
            F.lit(default).cast("int"))
        in_use = F.coalesce(
            F.sum("live_partitions").over(Window.partitionBy("cluster", "owner")), F.lit(0))
        planned = F.sum(F.when(_admitted(), effective_partitions())).over(
            _in_topic_order("cluster", "owner"))
        total = in_use + planned
        over_allowance = (_admitted() & effective_partitions().isNotNull()
                          & (total > allowance))
        message = F.format_string(
            "owner %s would hold %d partition(s) on cluster %s (%d in its live topics + %d "
            "planned by this run up to this topic, in topic order), over its quota of %d",
            F.coalesce(F.col("owner"), F.lit("(none)")), total, F.col("cluster"), in_use,
            planned, allowance)
        return as_plan(with_violation(facts, "owner_partition_quota", over_allowance, message))

    return transform
