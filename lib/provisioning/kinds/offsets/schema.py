"""The offset resets' tables: the requests, the offsets read for them, and the plan, one row
per partition.

A request asks once that a group's committed offsets on a topic (all its partitions, or
those listed) be moved (`to`: earliest, latest, timestamp, duration, shift, offset) or
removed (`delete`). It is named by its `request_id`, unique across the requests tables.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
)

from schemas.tables import (
    ANSWER_COLUMNS,
    PLAN_SOURCE,
    desired,
    fields,
    snapshot_of,
)

# What names one partition of one request (partition null: a request refused as a whole,
# or done before).
OFFSET_KEY = ("cluster", "request_id", "partition")

# What an offset resets table holds: one request per row.
OFFSET_RESET_MANIFEST = fields(
    ("request_id", StringType()),
    ("cluster", StringType()),
    ("group", StringType()),
    ("topic", StringType()),
    # The partitions to reset (null: every partition of the topic).
    ("partitions", ArrayType(IntegerType(), True)),
    # earliest, latest, timestamp, duration, shift, offset or delete.
    ("to", StringType()),
    # An ISO-8601 time (timestamp), an ISO-8601 duration back from now (duration, `PT1H`),
    # a signed integer (shift), an offset (offset); null for earliest, latest and delete.
    ("value", StringType()),
    ("requested_by", StringType()),
    ("reason", StringType()),
)

# Requests after reading (source, row_errors), with the value read as the request needs it:
# `at_ms`, the time whose first offset is the target (timestamp, duration: now less the
# duration); `amount`, the shift or the offset.
OFFSET_RESET_DESIRED = fields(
    *[(f.name, f.dataType) for f in desired(OFFSET_RESET_MANIFEST).fields],
    ("at_ms", LongType()),
    ("amount", LongType()),
)

# What one request's partition holds now: the group's committed offset (null: none), the
# log's start and end offsets, and the first offset at or after the request's `at_ms`
# (null: no record that late, or no time asked).
OFFSET_LIVE = fields(
    ("cluster", StringType()),
    ("request_id", StringType()),
    ("partition", IntegerType()),
    ("committed", LongType()),
    ("log_start", LongType()),
    ("log_end", LongType()),
    ("at_offset", LongType()),
)

# What each run read for its requests (`tables.offset_snapshots`), with one marker row per
# cluster (request_id null).
OFFSET_SNAPSHOT = snapshot_of(OFFSET_LIVE)

# One row per request and partition (a request with no partition to name, such as one
# rejected before anything was read, has one row, partition null).
OFFSET_PLAN = fields(
    ("request_id", StringType()),
    ("cluster", StringType()),
    ("group", StringType()),
    ("topic", StringType()),
    ("partition", IntegerType()),
    # RESET, DELETE or NOOP (a request done by an earlier run).
    ("action", StringType()),
    ("to", StringType()),
    # The request's value, as its row gives it.
    ("value", StringType()),
    ("committed", LongType()),
    ("log_start", LongType()),
    ("log_end", LongType()),
    # The offset the request asks for, and the one committed: it clamped to the log.
    ("wanted", LongType()),
    ("target", LongType()),
    ("clamped", BooleanType()),
    ("lag_before", LongType()),
    ("lag_after", LongType()),
    # The run whose apply of this request succeeded (a request is applied once).
    ("done_by", StringType()),
    ("requested_by", StringType()),
    ("reason", StringType()),
    # The audit's owner (who asked), and the entity base's state and force (none here).
    ("owner", StringType()),
    ("state", StringType()),
    ("force", BooleanType()),
    *PLAN_SOURCE,
    ("note", StringType()),
)

# What one admin step said about one request's partition (validate, apply, verify).
OFFSET_RESULT = fields(
    *[(c, IntegerType() if c == "partition" else StringType()) for c in OFFSET_KEY],
    *ANSWER_COLUMNS,
    # The group's committed offset on the partition read back (verify; null: none).
    ("found", LongType()),
)

# The audit's `offset_reset` column: the request and its partition, the offset committed
# before, the offset after (apply: the target committed; verify: read back; null: none or
# removed), the target with the lags before and after, and who asked and why.
OFFSET_STRUCT = fields(
    ("request_id", StringType()),
    ("group", StringType()),
    ("topic", StringType()),
    ("to", StringType()),
    # The request's value (an ISO-8601 time or duration, a shift, an offset).
    ("value", StringType()),
    ("partition", IntegerType()),
    # The group's committed offset on the partition when the plan read it (null: none).
    ("before", LongType()),
    # Apply: the target committed; verify: the committed offset read back (null: none,
    # or removed).
    ("after", LongType()),
    ("target", LongType()),
    ("lag_before", LongType()),
    ("lag_after", LongType()),
    ("clamped", BooleanType()),
    ("done_by", StringType()),
    ("requested_by", StringType()),
    ("reason", StringType()),
)
AUDIT_COLUMN = StructField("offset_reset", OFFSET_STRUCT, True)
