"""The offset resets' tables: the requests, the offsets read for them, and the plan, one row
per partition.

A request asks once that a group's committed offsets on a topic (all its partitions, or
those listed) be moved (`to`: earliest, latest, timestamp, duration, shift, offset) or
removed (`delete`). It is named by its `request_id`, unique across the requests tables.
"""

from __future__ import annotations

from pyspark.sql.types import ArrayType, BooleanType, IntegerType, LongType, StringType

from schemas.tables import POLICY_VIOLATION, desired, fields

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
    ("request_id", StringType()),
    ("partition", IntegerType()),
    ("committed", LongType()),
    ("log_start", LongType()),
    ("log_end", LongType()),
    ("at_offset", LongType()),
)

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
    ("source_table", StringType()),
    ("source_version", LongType()),
    ("row_errors", ArrayType(StringType(), True)),
    ("policy_violations", ArrayType(POLICY_VIOLATION, True)),
    ("note", StringType()),
)
