"""AUDIT rows: the plan's verdict per topic, and every admin result joined back to its plan row."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from provisioning import names
from provisioning.transforms.drift import override_map
from schemas import AUDIT, column_names


def plan_outcome() -> Column:
    """The plan phase's outcome of a PLAN row; every row matches exactly one case."""
    invalid = F.size("row_errors") > 0
    # The job may not see the topic: neither present nor absent can be claimed.
    unseen = ~invalid & F.col("live_error").isNotNull()
    blocked = ~invalid & ~unseen & (F.size("policy_violations") > 0)
    clean = ~invalid & ~unseen & ~blocked
    wants_absent = F.coalesce(F.col("state") == names.ABSENT, F.lit(False))
    action = F.col("action")
    return (
        F.when(invalid, names.REJECTED)
        .when(unseen, names.FAILED)
        .when(blocked, names.BLOCKED)
        .when(clean & action.isin(names.CREATE, names.DELETE, names.ALTER, names.REASSIGN),
              names.PLANNED)
        .when(clean & (action == names.DRIFT), names.DRIFTED)
        .when(clean & (action == names.NOOP) & ~wants_absent, names.ALREADY_PRESENT)
        .when(clean & (action == names.NOOP) & wants_absent, names.ALREADY_ABSENT)
    )


def plan_outcome_counts(plan: DataFrame) -> DataFrame:
    """PLAN rows counted per cluster, action and plan outcome: cluster, action, outcome, n."""
    return (plan.groupBy("cluster", "action", plan_outcome().alias("outcome"))
            .agg(F.count(F.lit(1)).alias("n"))
            .select("cluster", "action", "outcome", "n"))


def plan_error_message(seen_check: bool = True) -> Column:
    """Why a plan row is not simply planned: its row errors, that the job may not see the
    topic (`live_error`, unless `seen_check` is off: ACL_PLAN rows have none), its policy
    violations."""
    violations = F.transform("policy_violations",
                             lambda v: F.concat(v["policy"], F.lit(": "), v["message"]))
    invalid = F.when(F.size("row_errors") > 0, F.array_join("row_errors", "; "))
    if seen_check:
        unseen = F.format_string(
            "the job may not see topic %s on cluster %s (%s): it may or may not exist, so "
            "it was neither created, deleted nor compared; grant the job's principal "
            "Describe and DescribeConfigs on it (README: Least privilege)",
            F.col("topic"), F.col("cluster"), F.col("live_error"))
        invalid = invalid.when(F.col("live_error").isNotNull(), unseen)
    return invalid.when(F.size("policy_violations") > 0, F.array_join(violations, "; "))


def plan_error_name(seen_check: bool = True) -> Column:
    """The error name of `plan_error_message`'s reason."""
    name = F.when(F.size("row_errors") > 0, F.lit(names.INVALID_MANIFEST_ROW))
    if seen_check:
        name = name.when(F.col("live_error").isNotNull(), F.col("live_error"))
    return name.when(F.size("policy_violations") > 0, F.lit(names.POLICY_VIOLATION))


def _requested() -> list[Column]:
    return [
        F.col("partitions").alias("requested_partitions"),
        F.col("replication_factor").alias("requested_replication_factor"),
        F.col("configs").alias("requested_configs"),
        F.col("replica_assignment").alias("requested_assignment"),
    ]


def _before_and_ops(prefix: str = "") -> list[Column]:
    """ALTER rows: the live partitions and own overrides before, and the config operations
    to send; null for every other action."""
    alter = F.col(f"{prefix}action") == names.ALTER
    live_configs = F.coalesce(F.col(f"{prefix}live_configs"),
                              F.array().cast(AUDIT["result_configs"].dataType))
    return [
        F.when(alter, F.col(f"{prefix}live_partitions")).alias("before_partitions"),
        F.when(alter, override_map(live_configs)).alias("before_configs"),
        F.when(alter, F.col(f"{prefix}config_ops")).alias("config_ops"),
    ]


def _no_binding() -> list[Column]:
    """The ACL columns of a topic row: null."""
    return [F.lit(None).cast(AUDIT["acl"].dataType).alias("acl"),
            F.lit(None).cast("string").alias("note")]


def plan_audit(plan: DataFrame, run_id: str, recorded_at: dt.datetime) -> DataFrame:
    """One AUDIT row per PLAN row, phase `plan`."""
    return plan.select(
        F.lit(run_id).alias("run_id"),
        "cluster",
        "topic",
        F.col("live_topic_id").alias("topic_id"),
        "action",
        F.lit(names.PLAN).alias("phase"),
        plan_outcome().alias("outcome"),
        F.lit(None).cast("int").alias("error_code"),
        plan_error_name().alias("error_name"),
        plan_error_message().alias("error_message"),
        "policy_violations",
        "drift",
        *_requested(),
        F.lit(None).cast(AUDIT["result_partitions"].dataType).alias("result_partitions"),
        F.lit(None).cast(AUDIT["result_replication_factor"].dataType)
        .alias("result_replication_factor"),
        F.lit(None).cast(AUDIT["result_configs"].dataType).alias("result_configs"),
        F.lit(None).cast("int").alias("topic_config_error_code"),
        F.lit(None).cast("int").alias("attempts"),
        "owner",
        "source_table",
        "source_version",
        F.lit(recorded_at).cast("timestamp").alias("recorded_at"),
        *_before_and_ops(),
        *_no_binding(),
        "reassignment",
        *_no_move_results(),
    ).select(*column_names(AUDIT))


def _no_move_results() -> list[Column]:
    """The result columns of replica moves: null (a plan row, or a topic result without
    moves)."""
    return [F.lit(None).cast(AUDIT[c].dataType).alias(c)
            for c in ("result_reassignment", "throttle_rate", "throttled_brokers")]


def result_columns(run_id: str, recorded_at: dt.datetime) -> list[Column]:
    """The AUDIT columns every admin result row takes alike, topic or ACL binding: from the
    result (aliased `r`) and the plan row it was joined to (aliased `p`)."""
    return [
        F.lit(run_id).alias("run_id"),
        F.col("r.cluster").alias("cluster"),
        F.col("p.action").alias("action"),
        F.col("r.phase").alias("phase"),
        F.col("r.outcome").alias("outcome"),
        F.col("r.error_code").alias("error_code"),
        F.col("r.error_name").alias("error_name"),
        F.col("r.error_message").alias("error_message"),
        F.col("p.policy_violations").alias("policy_violations"),
        F.col("r.attempts").alias("attempts"),
        F.col("p.owner").alias("owner"),
        F.col("p.source_table").alias("source_table"),
        F.col("p.source_version").alias("source_version"),
        F.lit(recorded_at).cast("timestamp").alias("recorded_at"),
    ]


def result_audit(results: DataFrame, plan: DataFrame, run_id: str, recorded_at: dt.datetime,
                 action: str | None = None) -> DataFrame:
    """AUDIT rows for TOPIC_RESULT rows, with the request taken from their PLAN row.

    action: the rows' action instead of their plan row's (REASSIGN: the replica moves of
      an ALTER row have rows of their own).
    """
    r = results.alias("r")
    p = plan.alias("p")
    joined = r.join(p, on=[F.col("r.cluster") == F.col("p.cluster"),
                           F.col("r.topic") == F.col("p.topic")], how="left")
    rows = joined.select(
        *result_columns(run_id, recorded_at),
        F.col("r.topic").alias("topic"),
        F.coalesce("r.topic_id", "p.live_topic_id").alias("topic_id"),
        F.col("p.drift").alias("drift"),
        F.col("p.partitions").alias("requested_partitions"),
        F.col("p.replication_factor").alias("requested_replication_factor"),
        F.col("p.configs").alias("requested_configs"),
        F.col("p.replica_assignment").alias("requested_assignment"),
        F.col("r.result_partitions").alias("result_partitions"),
        F.col("r.result_replication_factor").alias("result_replication_factor"),
        F.col("r.result_configs").alias("result_configs"),
        F.col("r.topic_config_error_code").alias("topic_config_error_code"),
        *_before_and_ops("p."),
        *_no_binding(),
        F.col("p.reassignment").alias("reassignment"),
        F.col("r.result_reassignment").alias("result_reassignment"),
        F.col("r.throttle_rate").alias("throttle_rate"),
        F.col("r.throttled_brokers").alias("throttled_brokers"),
    ).select(*column_names(AUDIT))
    return rows if action is None else rows.withColumn("action", F.lit(action))


def phase_order() -> Column:
    """A phase's position in a run (plan 0 ... verify 3), for ordering audit rows."""
    order = F.create_map(*[F.lit(x) for i, phase in enumerate(names.PHASES) for x in (phase, i)])
    return order[F.col("phase")]


def final_rows(rows: DataFrame) -> DataFrame:
    """The AUDIT rows of one run that hold each topic's final outcome: for every
    (cluster, topic, action), the rows of the last phase that recorded it (an ALTER that
    also moves replicas ends twice: its ALTER and its REASSIGN rows).

    A topic's later phases pick up where its earlier ones stopped (a planned CREATE is
    validated, a validated one applied, an applied one verified), so the last phase's row
    is where the topic ended. Rows of invalid or duplicate manifest rows never leave the
    plan phase, so each of them stays a final row of its own.
    """
    return (rows.withColumn("_phase", phase_order())
            .withColumn("_last", F.max("_phase").over(
                Window.partitionBy("cluster", "topic", "action")))
            .where(F.col("_phase") == F.col("_last"))
            .select(*column_names(AUDIT)))
