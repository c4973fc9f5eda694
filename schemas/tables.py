"""Table schemas as Spark StructTypes.

Conventions: every column is nullable (rows are validated as data, not by the
schema); maps of partition -> replica broker ids use int keys; configs the
broker reports carry their source and flags (KIP-525), desired configs are a
plain string map.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)


def fields(*cols: tuple[str, object]) -> StructType:
    """A struct of nullable columns, each a (name, type)."""
    return StructType([StructField(name, dtype, True) for name, dtype in cols])  # type: ignore[arg-type]


def desired(manifest: StructType) -> StructType:
    """A kind's manifest rows after reading: where each row came from, and what is wrong
    with it."""
    return StructType([
        *manifest.fields,
        StructField("source_table", StringType(), True),
        StructField("source_version", LongType(), True),
        StructField("row_errors", ArrayType(StringType(), True), True),
    ])


def snapshot_of(live: StructType) -> StructType:
    """A kind's snapshot rows: each live row with the run that read it and when."""
    return fields(("run_id", StringType()), *[(f.name, f.dataType) for f in live.fields],
                  ("snapshot_at", TimestampType()))


# What an admin step said about one entity (validate, apply and verify phases), after the
# columns that name it.
ANSWER_COLUMNS: tuple[tuple[str, object], ...] = (
    ("phase", StringType()),
    ("outcome", StringType()),
    ("error_code", IntegerType()),
    ("error_name", StringType()),
    ("error_message", StringType()),
    ("attempts", IntegerType()),
)


ASSIGNMENT = MapType(IntegerType(), ArrayType(IntegerType(), True), True)
STRING_MAP = MapType(StringType(), StringType(), True)

# One config entry as the broker reports it (DescribeConfigs, CreateTopics v5+).
# `value` is null when the broker marks the config sensitive.
CONFIG_ENTRY = fields(
    ("name", StringType()),
    ("value", StringType()),
    ("source", StringType()),
    ("read_only", BooleanType()),
    ("sensitive", BooleanType()),
)

POLICY_VIOLATION = fields(
    ("policy", StringType()),
    ("message", StringType()),
)

# A plan row's manifest row (null: no row names it) and what stands against it.
PLAN_SOURCE: tuple[tuple[str, object], ...] = (
    ("source_table", StringType()),
    ("source_version", LongType()),
    ("row_errors", ArrayType(StringType(), True)),
    ("policy_violations", ArrayType(POLICY_VIOLATION, True)),
)

# One difference between the desired and the live topic.
DRIFT_ITEM = fields(
    ("field", StringType()),
    ("desired", StringType()),
    ("actual", StringType()),
    ("supported", BooleanType()),
)

# One config operation of an ALTER (IncrementalAlterConfigs, KIP-339): op SET or DELETE
# (back to the broker's default); value null for DELETE.
CONFIG_OP = fields(
    ("name", StringType()),
    ("op", StringType()),
    ("value", StringType()),
)

# One partition of a reassignment (KIP-455): its replicas before and after, the first replica
# the preferred leader. in_flight: a move toward `after` already under way (started by an
# earlier run, seen in ListPartitionReassignments): nothing new is sent for it.
REPLICA_MOVE = fields(
    ("partition", IntegerType()),
    ("before", ArrayType(IntegerType(), True)),
    ("after", ArrayType(IntegerType(), True)),
    ("in_flight", BooleanType()),
)

# What became of one partition's move: outcome reassigning (started or still moving),
# reassigned (done), rejected, failed or unknown, with the broker's error if any.
REPLICA_MOVE_RESULT = fields(
    ("partition", IntegerType()),
    ("before", ArrayType(IntegerType(), True)),
    ("after", ArrayType(IntegerType(), True)),
    ("outcome", StringType()),
    ("error_name", StringType()),
    ("error_message", StringType()),
)

# One partition being reassigned, as ListPartitionReassignments reports it: `replicas` is the
# target followed by the replicas being removed; `adding` and `removing` the difference.
REASSIGNMENT_IN_FLIGHT = fields(
    ("cluster", StringType()),
    ("topic", StringType()),
    ("partition", IntegerType()),
    ("replicas", ArrayType(IntegerType(), True)),
    ("adding", ArrayType(IntegerType(), True)),
    ("removing", ArrayType(IntegerType(), True)),
)

# What a manifest table holds: one desired topic per row.
MANIFEST = fields(
    ("cluster", StringType()),
    ("topic", StringType()),
    ("state", StringType()),
    ("partitions", IntegerType()),
    ("replication_factor", IntegerType()),
    ("replica_assignment", ASSIGNMENT),
    ("configs", STRING_MAP),
    ("owner", StringType()),
    ("force", BooleanType()),
)

# Manifest rows after reading: where each row came from, and what is wrong with it.
DESIRED = desired(MANIFEST)

# The live facts of one cluster, taken on the driver before anything else.
CLUSTER_STATE = fields(
    ("cluster", StringType()),
    ("cluster_id", StringType()),
    ("controller_id", IntegerType()),
    ("broker_ids", ArrayType(IntegerType(), True)),
    # The broker defaults a CREATE without partitions / replication factor gets
    # (num.partitions, default.replication.factor); null when not readable.
    ("default_partitions", IntegerType()),
    ("default_replication_factor", IntegerType()),
    ("error", StringType()),
    # broker id -> broker.rack of the live brokers that have one (`broker_ids` are the live,
    # unfenced brokers); the brokers registered but fenced (DescribeCluster v2), never a
    # replica's target.
    ("racks", MapType(IntegerType(), StringType(), True)),
    ("fenced_broker_ids", ArrayType(IntegerType(), True)),
)

# One partition of a live topic as the metadata reports it: `leader` null when the
# partition has no leader (offline); `replicas` in the broker's order (the first is the
# preferred leader); `isr` sorted by broker id.
PARTITION_STATE = fields(
    ("partition", IntegerType()),
    ("leader", IntegerType()),
    ("replicas", ArrayType(IntegerType(), True)),
    ("isr", ArrayType(IntegerType(), True)),
)

# One live topic of one cluster (the `snapshot` subcommand appends these).
SNAPSHOT = fields(
    ("run_id", StringType()),
    ("cluster", StringType()),
    ("cluster_id", StringType()),
    ("topic", StringType()),
    ("topic_id", StringType()),
    ("internal", BooleanType()),
    ("partitions", IntegerType()),
    ("replication_factor", IntegerType()),
    ("replica_assignment", ASSIGNMENT),
    ("configs", ArrayType(CONFIG_ENTRY, True)),
    ("consumer_groups", ArrayType(StringType(), True)),
    ("error_name", StringType()),
    ("snapshot_at", TimestampType()),
    # Added after the first release (appends merge them into older tables, whose rows
    # hold null): every partition's leader, replicas and ISR, in partition order ...
    ("partition_states", ArrayType(PARTITION_STATE, True)),
    # ... and the rest of what DescribeConfigs reports for the topic, the configs it
    # inherits (sources STATIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
    # DEFAULT_CONFIG): with `configs`, every config's effective value. Both null where
    # unknown, as `configs`.
    ("default_configs", ArrayType(CONFIG_ENTRY, True)),
)

# What the one reader of live topics gives (kafka.snapshot.snapshot_results): SNAPSHOT
# rows, and, reading a cluster again under an apply's lock, one row with `found` false and
# only cluster and topic for each topic read again that is gone.
LIVE_READ = StructType([*SNAPSHOT.fields, StructField("found", BooleanType(), True)])

# One row per (cluster, topic) the run considers: desired joined with live.
PLAN = fields(
    ("cluster", StringType()),
    ("topic", StringType()),
    ("action", StringType()),
    ("state", StringType()),
    ("partitions", IntegerType()),
    ("replication_factor", IntegerType()),
    ("replica_assignment", ASSIGNMENT),
    ("configs", STRING_MAP),
    ("owner", StringType()),
    ("force", BooleanType()),
    ("source_table", StringType()),
    ("source_version", LongType()),
    ("row_errors", ArrayType(StringType(), True)),
    ("live_topic_id", StringType()),
    ("live_internal", BooleanType()),
    ("live_partitions", IntegerType()),
    ("live_replication_factor", IntegerType()),
    ("live_replica_assignment", ASSIGNMENT),
    ("live_configs", ArrayType(CONFIG_ENTRY, True)),
    ("live_consumer_groups", ArrayType(StringType(), True)),
    # Why the live side could not be seen (SNAPSHOT.error_name, e.g.
    # TOPIC_AUTHORIZATION_FAILED): the topic may or may not exist, so nothing is done.
    ("live_error", StringType()),
    ("drift", ArrayType(DRIFT_ITEM, True)),
    ("policy_violations", ArrayType(POLICY_VIOLATION, True)),
    # ALTER rows: the config operations to send (empty otherwise); the partition count to
    # reach is `partitions` (more than live_partitions) or the assignment's size.
    ("config_ops", ArrayType(CONFIG_OP, True)),
    # The replica moves' columns (their kind's layer fills them: kinds.reassign.run): each
    # partition whose replicas change, before -> after, by partition (REASSIGN rows, and
    # ALTER rows that also move replicas; null on other rows), and why the job will not
    # send that reassignment (its checks before sending; the row is then rejected).
    ("reassignment", ArrayType(REPLICA_MOVE, True)),
    ("reassign_problems", ArrayType(StringType(), True)),
    # A DELETE's newest record's timestamp (ListOffsets MAX_TIMESTAMP), read when the plan
    # is judged for the delete policy's in-use check; null on other rows and for a topic
    # with no records; and why it could not be read (the in-use check then refuses).
    ("live_last_write_at", TimestampType()),
    # Why a DELETE's newest record's time could not be read; null when it was, or on other
    # rows.
    ("live_last_write_error", StringType()),
)

# What one admin request said about one topic (validate, apply and verify phases).
TOPIC_RESULT = fields(
    ("cluster", StringType()),
    ("topic", StringType()),
    ("phase", StringType()),
    ("outcome", StringType()),
    ("topic_id", StringType()),
    ("error_code", IntegerType()),
    ("error_name", StringType()),
    ("error_message", StringType()),
    ("result_partitions", IntegerType()),
    ("result_replication_factor", IntegerType()),
    ("result_configs", ArrayType(CONFIG_ENTRY, True)),
    ("topic_config_error_code", IntegerType()),
    ("attempts", IntegerType()),
    # The live assignment of a topic the broker said already exists (compared with the
    # request for drift); null otherwise.
    ("result_assignment", ASSIGNMENT),
    # Reassignments: what became of each partition's move; the replication throttle used
    # (bytes per second, null for none) and the brokers whose throttle rates this request
    # set (the job removes only those, once no move in flight uses them).
    ("result_reassignment", ArrayType(REPLICA_MOVE_RESULT, True)),
    ("throttle_rate", LongType()),
    ("throttled_brokers", ArrayType(IntegerType(), True)),
)

# One row per topic per phase per run.
AUDIT = fields(
    ("run_id", StringType()),
    ("cluster", StringType()),
    ("topic", StringType()),
    ("topic_id", StringType()),
    ("action", StringType()),
    ("phase", StringType()),
    ("outcome", StringType()),
    ("error_code", IntegerType()),
    ("error_name", StringType()),
    ("error_message", StringType()),
    ("policy_violations", ArrayType(POLICY_VIOLATION, True)),
    ("drift", ArrayType(DRIFT_ITEM, True)),
    ("requested_partitions", IntegerType()),
    ("requested_replication_factor", IntegerType()),
    ("requested_configs", STRING_MAP),
    ("requested_assignment", ASSIGNMENT),
    ("result_partitions", IntegerType()),
    ("result_replication_factor", IntegerType()),
    ("result_configs", ArrayType(CONFIG_ENTRY, True)),
    ("topic_config_error_code", IntegerType()),
    # How many requests it took (throttled or retried topics take more than one).
    ("attempts", IntegerType()),
    ("owner", StringType()),
    ("source_table", StringType()),
    ("source_version", LongType()),
    ("recorded_at", TimestampType()),
    # ALTER rows: the topic before (the snapshot's partitions and own overrides) and the
    # config operations sent; after is result_partitions / result_configs of `verify`.
    ("before_partitions", IntegerType()),
    ("before_configs", STRING_MAP),
    ("config_ops", ArrayType(CONFIG_OP, True)),
    # Why a plan row of another kind than topics is as it is (merged rows that disagreed,
    # an entity removed with its unlisted or deleted topic). Null on topic rows.
    ("note", StringType()),
    # Replica moves (action REASSIGN; the plan row of an ALTER that also moves replicas
    # carries them too): each partition's replicas before -> after (plan), what became of
    # each partition's move (validate, apply, verify), the replication throttle used (bytes
    # per second; null: none) and the brokers whose throttle rates the job set for it.
    ("reassignment", ArrayType(REPLICA_MOVE, True)),
    ("result_reassignment", ArrayType(REPLICA_MOVE_RESULT, True)),
    ("throttle_rate", LongType()),
    ("throttled_brokers", ArrayType(IntegerType(), True)),
)

CLUSTER_SUMMARY = fields(
    ("cluster", StringType()),
    ("cluster_id", StringType()),
    ("brokers", IntegerType()),
    ("topics", LongType()),
    ("error", StringType()),
)

# One kind's plan rows of one cluster, action and plan outcome, counted.
PLAN_COUNT = fields(
    ("kind", StringType()),
    ("cluster", StringType()),
    ("action", StringType()),
    ("outcome", StringType()),
    ("rows", LongType()),
)

# One row per run.
RUNS = fields(
    ("run_id", StringType()),
    ("command", StringType()),
    ("arguments", StringType()),
    ("started_at", TimestampType()),
    ("finished_at", TimestampType()),
    ("status", StringType()),
    ("exit_code", IntegerType()),
    ("message", StringType()),
    ("outcome_counts", MapType(StringType(), LongType(), True)),
    ("clusters", ArrayType(CLUSTER_SUMMARY, True)),
    ("conf_digest", StringType()),
    # Added after the first release (older rows hold null): the run's plan, counted per
    # kind, cluster, action and plan outcome (`plan` and `apply`; empty for the others).
    ("plan_counts", ArrayType(PLAN_COUNT, True)),
)


# The run lock's log (provisioning.delta.lock): one row per cluster per event, appended and
# never rewritten; the commit order (Delta row tracking) decides who holds a cluster.
LOCKS = fields(
    ("name", StringType()),
    ("run_id", StringType()),
    ("command", StringType()),
    ("host", StringType()),
    ("pid", IntegerType()),
    # When this row was written.
    ("acquired_at", TimestampType()),
    ("expires_at", TimestampType()),
    # Seconds since the epoch: what the lock logic compares, free of time zones.
    ("expires_epoch", LongType()),
    ("released", BooleanType()),
    # claim, renew or release (null: a row of the MERGE-based lock of earlier releases).
    ("event", StringType()),
    ("written_epoch", LongType()),
    # A claim's note of the run it takes a cluster from (that run's process was gone).
    ("takes_over", StringType()),
    # Who wrote the row, beyond host and pid (processes.ProcessIdentity): the kernel's boot
    # id, the PID namespace and the process's start time; null where unknown.
    ("boot_id", StringType()),
    ("pid_namespace", StringType()),
    ("pid_start", LongType()),
)


def column_names(schema: StructType) -> list[str]:
    """The column names of `schema`, in order."""
    return [f.name for f in schema.fields]
