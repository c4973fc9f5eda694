"""The schemas of what `check` measures of the clusters' usage: one INVENTORY row per judged
topic and one DISKS row per broker log dir, per run.

The broker disks are a table of their own beside the inventory: a log dir is not a topic,
and a table of its own keeps both tables' columns non-null where they mean something.
"""

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

# A consumer group with committed offsets on a topic, and how far behind the topic's
# latest offsets those commits are (summed over the partitions it committed on).
GROUP_LAG = StructType([
    # The consumer group's id.
    StructField("group_id", StringType(), True),
    # The topic's latest offsets minus the group's commits, summed over the partitions it
    # committed on; null when a partition's latest offset is unknown.
    StructField("lag", LongType(), True),
])

INVENTORY = StructType([StructField(name, dtype, True) for name, dtype in (
    ("run_id", StringType()),
    ("cluster", StringType()),
    ("topic", StringType()),
    ("partitions", IntegerType()),
    ("replication_factor", IntegerType()),
    # One copy: each partition's largest replica (DescribeLogDirs), summed.
    ("size_bytes", LongType()),
    # Every replica on every broker.
    ("stored_bytes", LongType()),
    # Latest offset minus earliest offset (ListOffsets), summed over the partitions.
    ("records", LongType()),
    # The newest record's timestamp (ListOffsets MAX_TIMESTAMP, KIP-734); null: no records.
    ("last_write_at", TimestampType()),
    # The groups with committed offsets on the topic (OffsetFetch), each with its lag; null
    # when the job's principal may not see every group.
    ("consumer_groups", ArrayType(GROUP_LAG, True)),
    # broker id -> the bytes of the topic's replicas on it.
    ("broker_bytes", MapType(IntegerType(), LongType(), True)),
    # What bounds the topic's growth: its effective retention.ms and retention.bytes (per
    # partition); null: unlimited (-1) or not reported.
    ("retention_ms", LongType()),
    # The effective retention.bytes (per partition); null: unlimited or not reported.
    ("retention_bytes", LongType()),
    # Why a measure is missing (the answer's error), or null.
    ("error", StringType()),
    # When the usage was read.
    ("checked_at", TimestampType()),
)])

DISKS = StructType([StructField(name, dtype, True) for name, dtype in (
    ("run_id", StringType()),
    ("cluster", StringType()),
    # The broker's id.
    ("broker", IntegerType()),
    # The log dir's path on the broker.
    ("log_dir", StringType()),
    # The log dir's volume (KIP-827): its size and what is free on it; null when the
    # broker does not report them.
    ("total_bytes", LongType()),
    # What is free on the volume for the broker to use (KIP-827).
    ("usable_bytes", LongType()),
    # total - usable: what the volume holds, Kafka's and anything else's.
    ("used_bytes", LongType()),
    # The replicas in this log dir, summed.
    ("kafka_bytes", LongType()),
    # The log dir's error (e.g. KAFKA_STORAGE_ERROR: offline), or null.
    ("error", StringType()),
    # When the log dirs were described.
    ("checked_at", TimestampType()),
)])

_DISK_ONLY = [f for f in DISKS.fields if f.name not in {g.name for g in INVENTORY.fields}]

# What the usage reader of a cluster gives (kafka.usage.usage_results): INVENTORY rows and
# DISKS rows in one stream, told apart by `what` ("topic" or "disk").
USAGE_READ = StructType([
    # "topic" (an INVENTORY row) or "disk" (a DISKS row).
    StructField("what", StringType(), True),
    *INVENTORY.fields, *_DISK_ONLY])

# The newest write of a topic a plan would delete (kafka.usage.last_writes): the delete
# policy's in-use check.
LAST_WRITE = StructType([StructField(name, dtype, True) for name, dtype in (
    ("cluster", StringType()),
    ("topic", StringType()),
    # The newest record's timestamp; null: no records (or unknown, with `error`).
    ("last_write_at", TimestampType()),
    # Why the newest record's time could not be read, or null.
    ("error", StringType()),
)])
