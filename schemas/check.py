"""The schema of `check`'s table: one row per (cluster, topic, rule) a live topic breaks."""

from __future__ import annotations

from pyspark.sql.types import BooleanType, StringType, StructField, StructType, TimestampType

VIOLATIONS = StructType([StructField(name, dtype, True) for name, dtype in (
    ("run_id", StringType()),
    ("cluster", StringType()),
    ("topic", StringType()),
    # A health rule or a create policy's name (names.CHECK_RULES; a custom policy's
    # violations carry the name the policy gives them).
    ("rule", StringType()),
    # error, warning or info (names.SEVERITIES), after `checks.severity`.
    ("severity", StringType()),
    # What is, and what the rule wants.
    ("detail", StringType()),
    # Whether a manifest row names the topic; its owner where that row names one.
    ("managed", BooleanType()),
    ("owner", StringType()),
    # When the live state judged was read, and when the row was written.
    ("snapshot_at", TimestampType()),
    ("recorded_at", TimestampType()),
)])
