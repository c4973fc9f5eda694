"""Usage: what `check` measures of each judged topic and broker log dir (INVENTORY and DISKS
rows), and the usage rules judged from it.

- idle_topic: the topic has records, none newer than `checks.idle_days`; the detail names
  the groups with committed offsets and their lag;
- empty_topic: no records on any partition;
- disk_usage: a broker log dir whose used share is over `checks.disk_used_ratio`;
- disk_forecast: a broker whose log dirs will pass that share within `checks.disk_days`,
  grown from the inventory's history (`forecast`).

The disk rules judge a broker: their rows have a null topic. Pure transforms: the run package
reads Kafka and the tables.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from provisioning.kinds.topics.rules.live import judged, reported_configs, reported_value
from provisioning.names import DISK_FORECAST, DISK_USAGE, EMPTY_TOPIC, IDLE_TOPIC
from schemas import DISKS, INVENTORY, column_names

DAY_SECONDS = 86400.0


def _retention(name: str) -> Column:
    value = reported_value(reported_configs(), name).try_cast("long")
    return F.when(value >= 0, value)


def online_partitions() -> Column:
    """A SNAPSHOT row's partitions that have a leader (the ones ListOffsets can ask; an
    empty array when the partition states are unknown)."""
    online = F.transform(F.filter("partition_states", lambda p: p["leader"] >= 0),
                         lambda p: p["partition"])
    return F.coalesce(online, F.array().cast("array<int>"))


def usage_work(live: DataFrame) -> DataFrame:
    """The usage reader's work rows of the judged topics of SNAPSHOT `live`: cluster, topic,
    partitions, replication_factor, online (the partitions with a leader), and the
    effective retention.ms and retention.bytes (null: unlimited or unknown)."""
    return live.where(judged()).select(
        "cluster", "topic", "partitions", "replication_factor",
        online_partitions().alias("online"),
        _retention("retention.ms").alias("retention_ms"),
        _retention("retention.bytes").alias("retention_bytes"))


def inventory_rows(read: DataFrame) -> DataFrame:
    """The INVENTORY rows of USAGE_READ `read`."""
    return read.where(F.col("what") == "topic").select(*column_names(INVENTORY))


def disk_rows(read: DataFrame) -> DataFrame:
    """The DISKS rows of USAGE_READ `read`."""
    return read.where(F.col("what") == "disk").select(*column_names(DISKS))


def _days_ago(at: Column, now: dt.datetime) -> Column:
    return F.floor((F.lit(now).cast("timestamp").cast("double") - at.cast("double"))
                   / DAY_SECONDS).cast("int")


def readers_text(groups: Column) -> Column:
    """"group g1 (lag 2), group g2 (lag 0)", or what says nobody reads (or that it cannot
    tell)."""
    listed = F.array_join(F.transform(groups, lambda g: F.format_string(
        "%s (lag %s)", g["group_id"], F.coalesce(g["lag"].cast("string"), F.lit("unknown")))),
        ", ")
    return (F.when(groups.isNull(), F.lit("whether a consumer group reads it is unknown (the "
                                          "job's principal may not see every group)"))
            .when(F.size(groups) == 0, F.lit("no consumer group has committed offsets on it"))
            .otherwise(F.concat(F.lit("consumer group(s) with committed offsets: "), listed)))


def idle_topic(inventory: DataFrame, now: dt.datetime, idle_days: int) -> DataFrame:
    """Topics with records, none newer than `idle_days` days (warning)."""
    cutoff = F.lit(now - dt.timedelta(days=idle_days)).cast("timestamp")
    idle = (F.col("records") > 0) & (F.col("last_write_at") < cutoff)
    detail = F.format_string(
        "no record newer than %d days: the newest was written at %s (%d days ago); %s; "
        "delete it if nobody needs it", F.lit(idle_days),
        F.date_format("last_write_at", "yyyy-MM-dd HH:mm:ss 'UTC'"),
        _days_ago(F.col("last_write_at"), now), readers_text(F.col("consumer_groups")))
    return inventory.where(idle).select("cluster", "topic", F.lit(IDLE_TOPIC).alias("rule"),
                                        detail.alias("detail"))


def empty_topic(inventory: DataFrame) -> DataFrame:
    """Topics with no record on any partition (info). A topic with a partition that could
    not be measured is not judged."""
    empty = (F.col("records") == 0) & F.col("error").isNull()
    detail = F.format_string(
        "no records on any of its %d partition(s); %s", F.col("partitions"),
        readers_text(F.col("consumer_groups")))
    return inventory.where(empty).select("cluster", "topic", F.lit(EMPTY_TOPIC).alias("rule"),
                                         detail.alias("detail"))


def _pct(ratio: Column) -> Column:
    return F.format_string("%.1f%%", ratio * 100)


def disk_usage(disks: DataFrame, ratio: float) -> DataFrame:
    """Broker log dirs whose used share is over `ratio` (error); topic null."""
    share = F.col("used_bytes") / F.col("total_bytes")
    over = (F.col("total_bytes") > 0) & (share > F.lit(ratio))
    detail = F.format_string(
        "broker %d log dir %s is %s used (%d of %d bytes; Kafka's replicas %d bytes), over "
        "checks.disk_used_ratio %s: free space or move replicas off it", F.col("broker"),
        F.col("log_dir"), _pct(share), F.col("used_bytes"), F.col("total_bytes"),
        F.col("kafka_bytes"), F.lit(str(ratio)))
    return disks.where(over).select(
        "cluster", F.lit(None).cast("string").alias("topic"),
        F.lit(DISK_USAGE).alias("rule"), detail.alias("detail"))


def growth(history: DataFrame, current: DataFrame, live: DataFrame, days: int) -> DataFrame:
    """(cluster, broker, topic, rate, grown): each topic's bytes on each broker grow at
    `rate` bytes a day (from its previous INVENTORY row in `history` to its `current` one;
    shrinking counts as no growth) and by `grown` bytes within `days` days, capped by what
    the topic keeps on that broker: retention.bytes (per partition) times its replicas
    there, and `rate` times retention.ms."""
    now = current.select("cluster", "topic", "checked_at", "broker_bytes", "retention_ms",
                         "retention_bytes")
    before = (history.join(now.select("cluster", "topic", F.col("checked_at").alias("_now")),
                           ["cluster", "topic"])
              .where(F.col("checked_at") < F.col("_now"))
              .withColumn("_n", F.row_number().over(
                  Window.partitionBy("cluster", "topic").orderBy(F.col("checked_at").desc())))
              .where(F.col("_n") == 1)
              .select("cluster", "topic", F.col("checked_at").alias("before_at"),
                      F.col("broker_bytes").alias("before_bytes")))
    replicas = (live.select("cluster", "topic",
                            F.explode("replica_assignment").alias("_p", "_replicas"))
                .select("cluster", "topic", F.explode("_replicas").alias("broker"))
                .groupBy("cluster", "topic", "broker").agg(F.count(F.lit(1)).alias("replicas")))
    elapsed = (F.col("checked_at").cast("double") - F.col("before_at").cast("double")
               ) / DAY_SECONDS
    per_broker = (now.join(before, ["cluster", "topic"])
                  .select("cluster", "topic", "checked_at", "before_at", "retention_ms",
                          "retention_bytes", "before_bytes",
                          F.explode("broker_bytes").alias("broker", "bytes"))
                  .join(replicas, ["cluster", "topic", "broker"], "left"))
    rate = F.greatest(F.lit(0.0), (F.col("bytes") - F.coalesce(
        F.element_at("before_bytes", F.col("broker")), F.lit(0))) / elapsed)
    caps = F.array_compact(F.array(
        (F.col("retention_bytes") * F.coalesce(F.col("replicas"), F.lit(1))).cast("double"),
        F.col("rate") * F.col("retention_ms") / (DAY_SECONDS * 1000)))
    package = F.when(F.size(caps) > 0, F.greatest(
        F.lit(0.0), F.array_min(caps) - F.col("bytes")))
    ahead = F.col("rate") * F.lit(float(days))
    return (per_broker.where(elapsed > 0)
            .withColumn("rate", rate)
            .select("cluster", "broker", "topic", "rate",
                    F.coalesce(F.least(ahead, package), ahead).alias("grown")))


def disk_forecast(grown: DataFrame, disks: DataFrame, ratio: float, days: int) -> DataFrame:
    """Brokers whose log dirs, under `ratio` now, pass it within `days` days as the topics on
    them grow (`growth`) (warning); topic null."""
    volumes = (disks.where(F.col("total_bytes") > 0)
               .groupBy("cluster", "broker")
               .agg(F.sum("total_bytes").alias("total"), F.sum("used_bytes").alias("used")))
    fastest = F.array_join(F.transform(
        F.slice(F.array_sort(F.collect_list(F.struct(
            (-F.col("grown")).alias("k"), F.col("topic").alias("t")))), 1, 3),
        lambda x: x["t"]), ", ")
    per_broker = grown.groupBy("cluster", "broker").agg(
        F.sum("grown").alias("grown"), F.sum("rate").alias("rate"), fastest.alias("topics"))
    joined = volumes.join(per_broker, ["cluster", "broker"])
    share_now = F.col("used") / F.col("total")
    share_then = (F.col("used") + F.col("grown")) / F.col("total")
    passes = (share_now <= F.lit(ratio)) & (share_then > F.lit(ratio))
    detail = F.format_string(
        "broker %d's log dirs are %s used (%d of %d bytes) and grow about %d bytes a day "
        "(fastest: %s); within checks.disk_days %d days they reach %s, over "
        "checks.disk_used_ratio %s", F.col("broker"), _pct(share_now), F.col("used"),
        F.col("total"), F.round("rate").cast("long"), F.col("topics"), F.lit(days),
        _pct(share_then), F.lit(str(ratio)))
    return joined.where(passes).select(
        "cluster", F.lit(None).cast("string").alias("topic"),
        F.lit(DISK_FORECAST).alias("rule"), detail.alias("detail"))
