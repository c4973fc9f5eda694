"""Column expressions the policies share: effective values and regex matching."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.transforms.policies.base import (
    PolicyContext,
    requested_partitions,
    requested_replication_factor,
)
from schemas import column_names

# Columns a policy adds while it works and drops by its closing select.
BROKER_IDS = "_policy_broker_ids"
DEFAULT_PARTITIONS = "_policy_default_partitions"
DEFAULT_REPLICATION_FACTOR = "_policy_default_replication_factor"

def full_match(value: Column, pattern: Column) -> Column:
    """True when the whole of `value` matches the Java regex `pattern`; null when either is."""
    anchored = F.concat(F.lit("\\A(?:"), pattern, F.lit(")\\z"))
    return F.regexp_like(value, anchored)


def forced() -> Column:
    """Rows whose manifest row lifts the policies that allow it (`force: true`)."""
    return F.coalesce(F.col("force"), F.lit(False))


def no_violations_yet() -> Column:
    """Rows no earlier policy has refused."""
    return F.col("policy_violations").isNull() | (F.size("policy_violations") == 0)


def desired_config(name: str) -> Column:
    """The desired value of config `name`, or null when the manifest leaves it out."""
    return F.try_element_at(F.col("configs"), F.lit(name))


def desired_int_config(name: str) -> Column:
    """The desired value of config `name` as an int; null when absent or not a number
    (the broker's validateOnly pass reports the latter)."""
    return desired_config(name).try_cast("int")


def listed(values: Column) -> Column:
    """An array rendered for a message: sorted, comma separated."""
    return F.array_join(F.array_sort(values.cast("array<string>")), ", ")


def with_cluster_facts(df: DataFrame, context: PolicyContext) -> DataFrame:
    """Add the cluster's live broker ids and broker defaults to each row (left join)."""
    facts = context.clusters.select(
        F.col("cluster"),
        F.col("broker_ids").alias(BROKER_IDS),
        F.col("default_partitions").alias(DEFAULT_PARTITIONS),
        F.col("default_replication_factor").alias(DEFAULT_REPLICATION_FACTOR),
    )
    # One row per cluster: small enough to ship to every task.
    return df.join(F.broadcast(facts), on="cluster", how="left").select(
        *column_names(df.schema), BROKER_IDS, DEFAULT_PARTITIONS, DEFAULT_REPLICATION_FACTOR)


def live_broker_count() -> Column:
    """How many brokers the cluster has; null when the cluster state could not be read."""
    return F.when(F.col(BROKER_IDS).isNotNull(), F.size(BROKER_IDS))


def effective_partitions() -> Column:
    """The partitions a CREATE will get: its own count, else the broker default (after
    `with_cluster_facts`)."""
    return F.coalesce(requested_partitions(), F.col(DEFAULT_PARTITIONS))


def effective_replication_factor() -> Column:
    """The replication factor a CREATE will get: its own, else the broker default (after
    `with_cluster_facts`)."""
    return F.coalesce(requested_replication_factor(), F.col(DEFAULT_REPLICATION_FACTOR))


def default_note(requested: Column) -> Column:
    """" (the broker default of cluster X)" when the row leaves the value to the broker,
    else null; meant for `F.concat_ws`, which skips nulls."""
    return F.when(requested.isNull(),
                  F.format_string(" (the broker default of cluster %s)", F.col("cluster")))
