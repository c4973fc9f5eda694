"""Per-cluster summaries of live topics (the `snapshot` command's counts)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def summarize_snapshot(live: DataFrame) -> DataFrame:
    """Per cluster: topic, internal topic, partition and in-use counts (SNAPSHOT rows in).
    The in-use count is null when a topic's readers are unknown (the consumer groups could
    not be read, or not all of them are visible): a count of 0 would say nobody reads."""
    in_use = F.sum(F.when(F.size("consumer_groups") > 0, 1).otherwise(0))
    unknown = F.max(F.col("consumer_groups").isNull().cast("int")) == 1
    return live.groupBy("cluster").agg(
        F.count("topic").alias("topics"),
        F.sum(F.when(F.col("internal"), 1).otherwise(0)).alias("internal_topics"),
        F.sum(F.coalesce(F.col("partitions"), F.lit(0))).alias("partitions"),
        F.when(unknown, F.lit(None)).otherwise(in_use).alias("topics_in_use"),
        F.sum(F.when(F.col("error_name").isNotNull(), 1).otherwise(0))
        .alias("undescribable_topics"),
    )
