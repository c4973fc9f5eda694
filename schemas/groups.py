"""The consumer groups' tables: the manifest, the live groups and their snapshot, the plan and
the admin results.

A group is named by its cluster and its group id. What the job manages of it is its own
configs (the group resource's dynamic configs, `consumer.session.timeout.ms`, `share.*`,
...) and whether it exists; its type and state are what ListGroups v5 says, its member
count what DescribeGroups says of a classic group (null: not known).
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    TimestampType,
)

from schemas.tables import ANSWER_COLUMNS, POLICY_VIOLATION, STRING_MAP, desired, fields

# What names one group of a cluster.
GROUP_KEY = ("cluster", "group")

# What a group manifest table holds: one group per row.
GROUP_MANIFEST = fields(
    ("cluster", StringType()),
    ("group", StringType()),
    # `present` (null: present) or `absent` (deleted with group removals allowed).
    ("state", StringType()),
    # The group's own configs (name -> value); the configs it lists are set, others left.
    ("configs", STRING_MAP),
    ("owner", StringType()),
    ("force", BooleanType()),
)

# Manifest rows after reading: where each came from, and what is wrong with it.
GROUP_DESIRED = desired(GROUP_MANIFEST)

_FOUND = (("type", StringType()), ("group_state", StringType()), ("members", IntegerType()))

# One live group: its type and state (ListGroups v5), its members (null: not known), its
# own configs (DescribeConfigs, the dynamic group configs only).
GROUP_LIVE = fields(("cluster", StringType()), ("group", StringType()), *_FOUND,
                    ("configs", STRING_MAP))

# The live groups of each run's clusters (`tables.group_snapshots`), with one marker row per
# cluster (group null).
GROUP_SNAPSHOT = fields(
    ("run_id", StringType()),
    *[(f.name, f.dataType) for f in GROUP_LIVE.fields],
    ("snapshot_at", TimestampType()),
)

# One row per group the run considers: desired joined with live.
GROUP_PLAN = fields(
    *[(c, StringType()) for c in GROUP_KEY],
    # ALTER, DELETE or NOOP (kinds.groups.names).
    ("action", StringType()),
    ("state", StringType()),
    # The configs asked for (null: none), those of them that differ from the group's own,
    # and the group's own configs found live.
    ("configs", STRING_MAP),
    ("changed", STRING_MAP),
    ("live_configs", STRING_MAP),
    *_FOUND,
    ("owner", StringType()),
    ("force", BooleanType()),
    ("source_table", StringType()),
    ("source_version", LongType()),
    ("row_errors", ArrayType(StringType(), True)),
    ("policy_violations", ArrayType(POLICY_VIOLATION, True)),
    # Why a row is as it is: what an ALTER changes, or why an unlisted group is kept.
    ("note", StringType()),
)

# What one admin step said about one group (validate, apply, verify).
GROUP_RESULT = fields(
    *[(c, StringType()) for c in GROUP_KEY],
    *ANSWER_COLUMNS,
    # The group's own configs read back (verify).
    ("result_configs", STRING_MAP),
)

# The audit's `consumer_group` column: the group, what was found of it, the configs asked
# for and those found (live at plan, validate and apply; read back at verify).
GROUP_STRUCT = fields(("group", StringType()), *_FOUND, ("configs", STRING_MAP),
                      ("found", STRING_MAP))
AUDIT_COLUMN = StructField("consumer_group", GROUP_STRUCT, True)
