"""The schemas of `check`'s inventory: one row per live topic per run (INVENTORY) and one
row per broker log directory per run (DISKS)."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)


def _fields(*cols: tuple[str, object]) -> StructType:
    return StructType([StructField(name, dtype, True) for name, dtype in cols])  # type: ignore[arg-type]


# One consumer group reading the topic and its lag (records behind, summed over partitions).
CONSUMER_GROUP_LAG = _fields(("group_id", StringType()), ("lag", LongType()))

INVENTORY = _fields(
    ("run_id", StringType()),
    ("cluster", StringType()),
    ("topic", StringType()),
    ("partitions", IntegerType()),
    ("replication_factor", IntegerType()),
    # One copy of the data, and every replica's.
    ("size_bytes", LongType()),
    ("stored_bytes", LongType()),
    ("records", LongType()),
    # The newest record's time; null: the topic holds no record.
    ("last_write_at", TimestampType()),
    ("consumer_groups", ArrayType(CONSUMER_GROUP_LAG, True)),
    # broker id -> bytes of the topic on that broker.
    ("broker_bytes", MapType(IntegerType(), LongType(), True)),
    ("retention_ms", LongType()),
    ("retention_bytes", LongType()),
    ("checked_at", TimestampType()),
)

DISKS = _fields(
    ("run_id", StringType()),
    ("cluster", StringType()),
    ("broker", IntegerType()),
    ("log_dir", StringType()),
    ("total_bytes", LongType()),
    ("usable_bytes", LongType()),
    ("used_bytes", LongType()),
    ("kafka_bytes", LongType()),
    # Why the log directory could not be described (null: it was).
    ("error", StringType()),
    ("checked_at", TimestampType()),
)
