"""Alter policies: what may be changed on a live topic in place (an ALTER row).

Always on, in this order, each lifted for one row only by `force: true` on its manifest
row (the cap is never lifted):

- retention_decrease: lowering `retention.ms` or `retention.bytes` (including from
  unlimited, -1, to a limit), or removing their override (back to a broker default that
  may be lower): the broker deletes the data past the new limit;
- cleanup_policy_change: changing `cleanup.policy` (between compact and delete, or
  removing its override): compaction rewrites the log, deletion drops old segments;
- partitions_on_compacted: adding partitions to a topic whose `cleanup.policy` includes
  compact: keys move to other partitions, and compaction no longer keeps one value per
  key;
- max_alters_per_cluster: over `alters.max_per_cluster` alters on one cluster (counted
  after the checks above), none of that cluster's alters is made.

Configurable (conf `policies.alter: [{name: ..., <params>}]`): the create policies that
judge a topic's shape, applied to the values after the alter (`AFTER_ALTER`):
required_configs, forbidden_configs, min_insync_below_rf, partitions_range (the
partition count after), partition_budget and owner_partition_quota (the partitions
added), and `custom` (given the ALTER rows as they are: its function judges rows whose
action is ALTER, `is_alter()`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.names import ALTER, CREATE, DELETE_CONFIG, SET
from provisioning.transforms.drift import override_map
from provisioning.transforms.policies.base import (
    PolicyContext,
    PolicyFactory,
    Transform,
    as_plan,
    per_cluster_cap,
    with_violation,
)
from provisioning.transforms.policies.columns import forced, no_violations_yet
from schemas import PLAN, column_names

RETENTION_CONFIGS = ("retention.ms", "retention.bytes")
_FORCE_HINT = "set `force: true` on its manifest row to make this change anyway"


def is_alter() -> Column:
    """Rows an alter policy judges."""
    return F.col("action") == F.lit(ALTER)


# Kafka's built-in defaults of the configs the always-on policies judge. The snapshot keeps
# the configs that differ from them (the topic's own and broker-level ones, KIP-525
# sources), so a config it lacks has this value.
KAFKA_DEFAULTS = {"retention.ms": "604800000", "retention.bytes": "-1",
                  "cleanup.policy": "delete"}


def live_value(name: str) -> Column:
    """The value the live topic has for config `name` (its own, a broker-level one, or
    Kafka's default)."""
    found = F.filter("live_configs", lambda c: c["name"] == F.lit(name))
    return F.coalesce(F.try_element_at(found, F.lit(1))["value"],
                      F.lit(KAFKA_DEFAULTS.get(name)).cast("string"))


def config_op(name: str) -> Column:
    """The CONFIG_OP of this row for config `name`, or null."""
    return F.try_element_at(F.filter("config_ops", lambda o: o["name"] == F.lit(name)),
                            F.lit(1))


def retention_decrease(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """Lowering a retention limit (or removing its override) deletes data."""

    def one(df: DataFrame, name: str) -> DataFrame:
        op = config_op(name)
        live = live_value(name).try_cast("long")
        new = op["value"].try_cast("long")
        lowered = (op["op"] == SET) & (
            ((live == -1) & (new != -1)) | ((live != -1) & (new != -1) & (new < live)))
        removed = op["op"] == DELETE_CONFIG
        violated = is_alter() & ~forced() & (lowered | removed)
        message = F.when(removed, F.format_string(
            "removing the %s override of topic %s (now %s) returns it to the broker default, "
            "which may delete data; %s", F.lit(name), F.col("topic"), live_value(name),
            F.lit(_FORCE_HINT))).otherwise(F.format_string(
                "lowering %s of topic %s from %s to %s deletes the data past the new limit; "
                "%s", F.lit(name), F.col("topic"), live_value(name), op["value"],
                F.lit(_FORCE_HINT)))
        return with_violation(df, "retention_decrease", violated, message)

    def transform(df: DataFrame) -> DataFrame:
        for name in RETENTION_CONFIGS:
            df = one(df, name)
        return as_plan(df)

    return transform


def _policy_set(value: Column) -> Column:
    return F.array_sort(F.array_distinct(F.transform(
        F.split(value, ","), lambda p: F.lower(F.trim(p)))))


def cleanup_policy_change(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """Changing how a topic's log is cleaned (compact, delete) rewrites or drops data."""

    def transform(df: DataFrame) -> DataFrame:
        op = config_op("cleanup.policy")
        live = live_value("cleanup.policy")
        changed = ((op["op"] == SET) & (_policy_set(op["value"]) != _policy_set(live))) | (
            op["op"] == DELETE_CONFIG)
        violated = is_alter() & ~forced() & changed
        message = F.format_string(
            "changing cleanup.policy of topic %s from %s to %s changes how its log is "
            "cleaned (compaction keeps one value per key, deletion drops old segments); %s",
            F.col("topic"), live, F.coalesce(op["value"], F.lit("the broker default")),
            F.lit(_FORCE_HINT))
        return as_plan(with_violation(df, "cleanup_policy_change", violated, message))

    return transform


def _adds_partitions() -> Column:
    return F.exists("drift", lambda d: (d["field"] == "partitions") & d["supported"])


def partitions_on_compacted(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """More partitions move keys: a compacted topic would keep two values of a key."""

    def transform(df: DataFrame) -> DataFrame:
        compacted = F.array_contains(_policy_set(live_value("cleanup.policy")), "compact")
        violated = is_alter() & ~forced() & _adds_partitions() & compacted
        message = F.format_string(
            "adding partitions to compacted topic %s (%d -> %d) moves keys to other "
            "partitions: consumers and compaction would see two values of a key; %s",
            F.col("topic"), F.col("live_partitions"), partitions_after(),
            F.lit(_FORCE_HINT))
        return as_plan(with_violation(df, "partitions_on_compacted", violated, message))

    return transform


def max_alters_per_cluster(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """Over the per-run cap, no alter at all is made on that cluster."""
    return per_cluster_cap("max_alters_per_cluster", is_alter() & no_violations_yet(),
                           context.max_alters_per_cluster, "alters", "no alter is made",
                           "alters.max_per_cluster", column_names(PLAN))


ALWAYS_ON: tuple[tuple[str, PolicyFactory], ...] = (
    ("retention_decrease", retention_decrease),
    ("cleanup_policy_change", cleanup_policy_change),
    ("partitions_on_compacted", partitions_on_compacted),
    ("max_alters_per_cluster", max_alters_per_cluster),
)


# -- create policies judging the topic after the alter ------------------------------------

def partitions_after() -> Column:
    """The partition count after the alter: the row's (when it asks for more) or live."""
    asked = F.coalesce(
        F.when(F.col("replica_assignment").isNotNull(),
               F.size(F.map_keys("replica_assignment"))),
        F.col("partitions"))
    return F.greatest(asked, F.col("live_partitions"))


def configs_after() -> Column:
    """The topic's own overrides after the alter: live ones, minus the deleted, plus the
    set ones."""
    live = override_map(F.coalesce(F.col("live_configs"),
                                   F.array().cast(PLAN["live_configs"].dataType)))
    touched = F.transform("config_ops", lambda o: o["name"])
    kept = F.map_filter(live, lambda k, _: ~F.array_contains(touched, k))
    sets = F.filter("config_ops", lambda o: o["op"] == SET)
    set_map = F.map_from_entries(F.transform(
        sets, lambda o: F.struct(o["name"].alias("key"), o["value"].alias("value"))))
    return F.map_concat(kept, set_map)


# The create policies an alter may be judged by, and which partition count they see:
# "after" (the count after the alter) or "added" (the partitions the alter adds; the
# budgets already count the live ones).
AFTER_ALTER = {
    "required_configs": "after",
    "forbidden_configs": "after",
    "min_insync_below_rf": "after",
    "partitions_range": "after",
    "partition_budget": "added",
    "owner_partition_quota": "added",
}


def judged_after_alter(create_policy: Transform, partitions: str) -> Transform:
    """`create_policy` run on each ALTER row as the topic will be after the alter (a CREATE
    of that shape); its violations are kept, the row itself is restored."""

    def transform(df: DataFrame) -> DataFrame:
        alter = is_alter()
        count = (partitions_after() if partitions == "after"
                 else partitions_after() - F.col("live_partitions"))
        shaped = df.select(
            *[F.when(alter, F.lit(CREATE)).otherwise(F.lit("(not an alter)")).alias(c)
              if c == "action"
              else F.when(alter, count).alias(c) if c == "partitions"
              else F.when(alter, F.col("live_replication_factor")).alias(c)
              if c == "replication_factor"
              else F.lit(None).cast(PLAN[c].dataType).alias(c) if c == "replica_assignment"
              else F.when(alter, configs_after()).alias(c) if c == "configs"
              else F.col(c)
              for c in column_names(PLAN)])
        # The create policies speak of a create; on an ALTER row they judge its outcome.
        reworded = F.transform("policy_violations", lambda v: F.struct(
            v["policy"].alias("policy"),
            F.regexp_replace(F.regexp_replace(v["message"], " on create", " after this alter"),
                             "^creating ", "adding ").alias("message")))
        judged = create_policy(shaped).select("cluster", "topic", reworded.alias("_judged"))
        # Valid PLAN rows are unique per (cluster, topic): duplicates are invalid rows,
        # which no policy sees.
        return as_plan(
            df.join(judged, on=["cluster", "topic"], how="left")
            .withColumn("policy_violations",
                        F.when(alter, F.col("_judged")).otherwise(F.col("policy_violations"))))

    return transform
