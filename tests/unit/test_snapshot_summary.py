"""The `snapshot` command's per-cluster counts: a cluster whose readers are unknown has no
in-use count (null), never 0."""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from provisioning.kinds.topics.summary import summarize_snapshot

LIVE = StructType([
    StructField("cluster", StringType()),
    StructField("topic", StringType()),
    StructField("internal", BooleanType()),
    StructField("partitions", IntegerType()),
    StructField("consumer_groups", ArrayType(StringType())),
    StructField("error_name", StringType()),
])


def test_in_use_is_counted_where_the_readers_are_known_and_null_where_not(spark: Any) -> None:
    live = spark.createDataFrame([
        ("known", "orders", False, 3, ["billing", "audit"], None),
        ("known", "clicks", False, 2, [], None),
        ("known", "__consumer_offsets", True, 50, ["billing"], None),
        ("known", "hidden", False, None, [], "TOPIC_AUTHORIZATION_FAILED"),
        ("unknown", "orders", False, 3, None, None),
        ("unknown", "clicks", False, 1, None, None),
    ], LIVE)

    rows = [r.asDict() for r in summarize_snapshot(live).collect()]

    assert sorted(rows, key=lambda r: r["cluster"]) == [
        {"cluster": "known", "topics": 4, "internal_topics": 1, "partitions": 55,
         "topics_in_use": 2, "undescribable_topics": 1},
        {"cluster": "unknown", "topics": 2, "internal_topics": 0, "partitions": 4,
         "topics_in_use": None, "undescribable_topics": 0},
    ]
