"""The consumer groups' tables: the manifest, the live groups and their snapshot, the plan and
the admin results.

A group is named by its cluster and its group id. What the job manages of it is its own
configs (the group resource's dynamic configs, `consumer.session.timeout.ms`, `share.*`,
...) and whether it exists; its type and state are what ListGroups v5 says, its member
count what DescribeGroups says of a classic group (null: not known).
"""

from __future__ import annotations

from pyspark.sql.types import (
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    TimestampType,
)

from schemas.tables import ANSWER_COLUMNS, PLAN_SOURCE, STRING_MAP, desired, fields, snapshot_of

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
GROUP_SNAPSHOT = snapshot_of(GROUP_LIVE)

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
    *PLAN_SOURCE,
    # Why a row is as it is: what an ALTER changes, or why an unlisted group is kept.
    ("note", StringType()),
)

# What one admin step said about one group (validate, apply, verify), and its own configs
# read back (verify).
GROUP_RESULT = fields(*[(c, StringType()) for c in GROUP_KEY], *ANSWER_COLUMNS,
                      ("result_configs", STRING_MAP))

# The audit's `consumer_group` column: the group, what was found of it, the configs asked
# for and those found (live at plan, validate and apply; read back at verify).
GROUP_STRUCT = fields(("group", StringType()), *_FOUND, ("configs", STRING_MAP),
                      ("found", STRING_MAP))
AUDIT_COLUMN = StructField("consumer_group", GROUP_STRUCT, True)

# What `check` reads of a cluster's groups' offsets (kinds.groups.requests.group_offsets):
# one row per group and partition it has a committed offset on (OffsetFetch; a group with
# none: one row, topic null), with the partition's log end offset (ListOffsets LATEST; null:
# the topic is gone, or the offset could not be read, `error` says why).
GROUP_OFFSETS = fields(*[(c, StringType()) for c in GROUP_KEY], *_FOUND, ("topic", StringType()),
                       ("partition", IntegerType()), ("committed", LongType()),
                       ("log_end", LongType()), ("error", StringType()))

# The topics of those offsets (and those the groups' earlier inventory rows name) as the
# cluster has them now: absent ones have no row; one the broker would not describe has its
# error (id and partitions null).
GROUP_TOPICS = fields(("cluster", StringType()), ("topic", StringType()),
                      ("topic_id", StringType()), ("partitions", IntegerType()),
                      ("error", StringType()))

# The group inventory (`<tables.inventory>_groups`): per `check` run, one row per live group
# and topic it has committed offsets on (a group with none: one row, topic null), its lag on
# that topic, and whether the topic is still the one the offsets were committed on.
GROUP_INVENTORY = fields(
    ("run_id", StringType()),
    *[(c, StringType()) for c in GROUP_KEY], *_FOUND,
    ("topic", StringType()),
    # The id of the topic the offsets were committed on, as first recorded (null: the
    # topic was already gone); a topic of that name with another id was created again.
    ("topic_id", StringType()),
    # The partitions with a committed offset now (0: dropped with the topic).
    ("partitions", IntegerType()),
    # The log end offset minus the committed offset, summed over those partitions; null when
    # the topic is not the one committed on, or a log end offset is unknown.
    ("lag", LongType()),
    # live, deleted or recreated (kinds.groups.names): whether the topic is still the one
    # the offsets were committed on; null when the topic could not be described.
    ("topic_state", StringType()),
    # Why the topic is deleted or recreated; why a measure is missing.
    ("reason", StringType()),
    ("error", StringType()),
    # When the groups were read.
    ("checked_at", TimestampType()),
)
