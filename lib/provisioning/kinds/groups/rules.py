"""`check`'s group inventory and its rules, as pure DataFrame transforms: each group's lag per
topic, whether the topic it committed offsets on is still that topic, and the findings
`group_lagging` and `stale_group`.

A topic a group committed offsets on is:
- `deleted` when the cluster has no topic of that name (the offsets are still there, or the
  broker dropped them with the topic and the group's earlier inventory rows name it);
- `recreated` when a topic of that name is there but is not the one committed on: a
  committed offset past its log end offset, a committed partition beyond its partitions,
  or (offsets dropped) another topic id than the inventory recorded;
- `live` otherwise: its lag is the log end offset minus the committed offset, summed over
  the partitions committed on (null when a log end offset is unknown).
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from provisioning.kinds.groups.names import DELETED_TOPIC, EMPTY, LIVE_TOPIC, RECREATED_TOPIC
from provisioning.kinds.groups.schema import GROUP_INVENTORY
from schemas import column_names

_GROUP = ("cluster", "group", "type", "group_state", "members")
GONE = "the topic no longer exists"
PAST_END = "a committed offset is past the topic's log end offset"
DROPPED_GONE = "the broker dropped its offsets with the topic, which no longer exists"
DROPPED_NEW_ID = ("the broker dropped its offsets with the topic, and the topic there now "
                  "has another id than the one committed on")


def _current(offsets: DataFrame, topics: DataFrame) -> DataFrame:
    """One row per group and topic it has committed offsets on now."""
    t = topics.select("cluster", "topic", F.col("topic_id").alias("_id"),
                      F.col("partitions").alias("_partitions"), F.col("error").alias("_hidden"))
    rows = offsets.where(F.col("topic").isNotNull()).join(t, on=["cluster", "topic"],
                                                          how="left")
    gone = F.col("_id").isNull() & F.col("_hidden").isNull()
    beyond = F.col("_partitions").isNotNull() & (F.col("partition") >= F.col("_partitions"))
    past_end = F.col("log_end").isNotNull() & (F.col("committed") > F.col("log_end"))
    unknown_end = F.col("log_end").isNull() & ~gone & F.col("_hidden").isNull() & ~beyond
    grouped = rows.groupBy(*_GROUP, "topic").agg(
        F.first("_id", ignorenulls=True).alias("topic_id"),
        F.first("_partitions", ignorenulls=True).alias("_partitions"),
        F.first("_hidden", ignorenulls=True).alias("_hidden"),
        F.count(F.lit(1)).cast("int").alias("partitions"),
        F.max(gone).alias("_gone"), F.max(beyond).alias("_beyond"),
        F.max(past_end).alias("_past_end"), F.max(unknown_end).alias("_unknown_end"),
        F.sum(F.col("log_end") - F.col("committed")).alias("_lag"),
        F.max("error").alias("_error"))
    state = (F.when(F.col("_gone"), F.lit(DELETED_TOPIC))
             .when(F.col("_hidden").isNotNull(), F.lit(None))
             .when(F.col("_beyond") | F.col("_past_end"), F.lit(RECREATED_TOPIC))
             .otherwise(F.lit(LIVE_TOPIC)))
    reason = (F.when(F.col("_gone"), F.lit(GONE))
              .when(F.col("_hidden").isNotNull(), F.lit(None))
              .when(F.col("_beyond"), F.format_string(
                  "a committed partition is beyond the topic's %d partitions",
                  F.col("_partitions")))
              .when(F.col("_past_end"), F.lit(PAST_END)))
    live = state == F.lit(LIVE_TOPIC)
    return grouped.select(
        *_GROUP, "topic", "topic_id", "partitions",
        F.when(live & ~F.col("_unknown_end"), F.col("_lag")).alias("lag"),
        state.alias("topic_state"), reason.alias("reason"),
        F.coalesce(F.when(F.col("_hidden").isNotNull(), F.format_string(
            "the topic could not be described: %s", F.col("_hidden"))),
            F.col("_error")).alias("error"))


def last_recorded(history: DataFrame) -> DataFrame:
    """Each group's topics of its newest earlier inventory rows that name a topic (cluster,
    group, topic, topic_id)."""
    named = history.where(F.col("topic").isNotNull())
    newest = Window.partitionBy("cluster", "group").orderBy(F.col("checked_at").desc(),
                                                           F.col("run_id").desc())
    return (named.withColumn("_n", F.dense_rank().over(newest)).where(F.col("_n") == 1)
            .select("cluster", "group", "topic", "topic_id").distinct())


def _dropped(groups: DataFrame, topics: DataFrame, history: DataFrame) -> DataFrame:
    """For the groups with no committed offset now, the topics their newest earlier rows
    name that are gone or another topic now (the broker drops a topic's offsets with it)."""
    recorded = groups.join(last_recorded(history), on=["cluster", "group"], how="inner")
    t = topics.select("cluster", "topic", F.col("topic_id").alias("_id"),
                      F.col("error").alias("_hidden"))
    rows = recorded.join(t, on=["cluster", "topic"], how="left")
    gone = F.col("_id").isNull() & F.col("_hidden").isNull()
    other = F.col("_id").isNotNull() & (F.col("topic_id").isNull()
                                        | (F.col("topic_id") != F.col("_id")))
    return rows.where(gone | other).select(
        *_GROUP, "topic", "topic_id", F.lit(0).alias("partitions"),
        F.lit(None).cast("long").alias("lag"),
        F.when(gone, F.lit(DELETED_TOPIC)).otherwise(F.lit(RECREATED_TOPIC))
        .alias("topic_state"),
        F.when(gone, F.lit(DROPPED_GONE)).otherwise(F.lit(DROPPED_NEW_ID)).alias("reason"),
        F.lit(None).cast("string").alias("error"))


def group_inventory(offsets: DataFrame, topics: DataFrame, history: DataFrame, run_id: str,
                    checked_at: dt.datetime) -> DataFrame:
    """GROUP_INVENTORY rows of one run from GROUP_OFFSETS and GROUP_TOPICS rows and the
    inventory's earlier rows (`history`, of other runs)."""
    current = _current(offsets, topics)
    without = offsets.where(F.col("topic").isNull()).select(*_GROUP, "error")
    # A group whose offsets could not be read (`error`) has unknown offsets, not dropped ones.
    dropped = _dropped(without.where(F.col("error").isNull()).select(*_GROUP), topics,
                       history)
    bare = without.join(dropped.select("cluster", "group"), on=["cluster", "group"],
                        how="left_anti").select(
        *_GROUP, *[F.lit(None).cast(GROUP_INVENTORY[c].dataType).alias(c)
                   for c in ("topic", "topic_id", "partitions", "lag", "topic_state",
                             "reason")], "error")
    rows = current.unionByName(dropped).unionByName(bare.distinct())
    given = {"run_id": F.lit(run_id), "checked_at": F.lit(checked_at)}
    return rows.select(*[given.get(c, F.col(c)).cast(GROUP_INVENTORY[c].dataType).alias(c)
                         for c in column_names(GROUP_INVENTORY)])


def _described(group: Column) -> Column:
    members = F.when(F.col("members").isNull(), F.lit("members unknown")).otherwise(
        F.format_string("%d members", F.col("members")))
    return F.format_string("group %s (type %s, state %s, %s)", group, F.col("type"),
                           F.col("group_state"), members)


def lagging_groups(inventory: DataFrame, threshold: int) -> DataFrame:
    """(cluster, group, topic, lag, detail) of each group whose lag on a topic is over
    `threshold` records."""
    return inventory.where(F.col("lag") > F.lit(threshold)).select(
        "cluster", "group", "topic", "lag",
        F.format_string("%s lags %d records on topic %s, over groups.lag_threshold %d",
                        _described(F.col("group")), F.col("lag"), F.col("topic"),
                        F.lit(threshold)).alias("detail"))


def stale_groups(inventory: DataFrame) -> DataFrame:
    """(cluster, group, detail) of each Empty group whose committed offsets all point at
    topics that are gone: deleted, or deleted and created again (each named, with how)."""
    gone = F.col("topic_state").isin(DELETED_TOPIC, RECREATED_TOPIC)
    empty = inventory.where(F.col("group_state") == F.lit(EMPTY))
    judged = empty.groupBy(*_GROUP).agg(
        F.count(F.lit(1)).alias("_rows"), F.count(F.when(gone, 1)).alias("_gone"),
        F.sort_array(F.collect_list(F.when(gone, F.format_string(
            "%s %s (%s)", F.col("topic"), F.col("topic_state"), F.col("reason")))))
        .alias("_topics"))
    return judged.where((F.col("_gone") > 0) & (F.col("_gone") == F.col("_rows"))).select(
        "cluster", "group",
        F.format_string("%s: every topic it committed offsets on is gone: %s",
                        _described(F.col("group")), F.concat_ws("; ", "_topics"))
        .alias("detail"))
