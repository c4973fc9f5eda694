"""AUDIT rows: the plan's verdict per topic, and every admin result joined back to its plan row."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from schemas import AUDIT, column_names

PLAN_PHASE = "plan"

# Final outcomes that make a run exit 1: somebody has to look at these topics.
ATTENTION = ("rejected", "blocked", "failed", "unknown")


def plan_outcome() -> Column:
    """The plan phase's outcome of a PLAN row; every row matches exactly one case."""
    invalid = F.size("row_errors") > 0
    # The job may not see the topic: neither present nor absent can be claimed.
    unseen = ~invalid & F.col("live_error").isNotNull()
    blocked = ~invalid & ~unseen & (F.size("policy_violations") > 0)
    clean = ~invalid & ~unseen & ~blocked
    wants_absent = F.coalesce(F.col("state") == "absent", F.lit(False))
    return (
        F.when(invalid, "rejected")
        .when(unseen, "failed")
        .when(blocked, "blocked")
        .when(clean & F.col("action").isin("CREATE", "DELETE"), "planned")
        .when(clean & (F.col("action") == "DRIFT"), "drift")
        .when(clean & (F.col("action") == "NOOP") & ~wants_absent, "already_present")
        .when(clean & (F.col("action") == "NOOP") & wants_absent, "already_absent")
    )


def _plan_error_message() -> Column:
    violations = F.transform("policy_violations",
                             lambda v: F.concat(v["policy"], F.lit(": "), v["message"]))
    unseen = F.format_string(
        "the job may not see topic %s on cluster %s (%s): it may or may not exist, so it "
        "was neither created, deleted nor compared; grant the job's principal Describe "
        "and DescribeConfigs on it (README: Least privilege)",
        F.col("topic"), F.col("cluster"), F.col("live_error"))
    return (F.when(F.size("row_errors") > 0, F.array_join("row_errors", "; "))
            .when(F.col("live_error").isNotNull(), unseen)
            .when(F.size("policy_violations") > 0, F.array_join(violations, "; ")))


def _plan_error_name() -> Column:
    return (F.when(F.size("row_errors") > 0, F.lit("INVALID_MANIFEST_ROW"))
            .when(F.col("live_error").isNotNull(), F.col("live_error"))
            .when(F.size("policy_violations") > 0, F.lit("POLICY_VIOLATION")))


def _requested() -> list[Column]:
    return [
        F.col("partitions").alias("requested_partitions"),
        F.col("replication_factor").alias("requested_replication_factor"),
        F.col("configs").alias("requested_configs"),
        F.col("replica_assignment").alias("requested_assignment"),
    ]


def plan_audit(plan: DataFrame, run_id: str, recorded_at: dt.datetime) -> DataFrame:
    """One AUDIT row per PLAN row, phase `plan`."""
    return plan.select(
        F.lit(run_id).alias("run_id"),
        "cluster",
        "topic",
        F.col("live_topic_id").alias("topic_id"),
        "action",
        F.lit(PLAN_PHASE).alias("phase"),
        plan_outcome().alias("outcome"),
        F.lit(None).cast("int").alias("error_code"),
        _plan_error_name().alias("error_name"),
        _plan_error_message().alias("error_message"),
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
    ).select(*column_names(AUDIT))


def result_audit(results: DataFrame, plan: DataFrame, run_id: str, recorded_at: dt.datetime
                 ) -> DataFrame:
    """AUDIT rows for TOPIC_RESULT rows, with the request taken from their PLAN row."""
    r = results.alias("r")
    p = plan.alias("p")
    joined = r.join(p, on=[F.col("r.cluster") == F.col("p.cluster"),
                           F.col("r.topic") == F.col("p.topic")], how="left")
    return joined.select(
        F.lit(run_id).alias("run_id"),
        F.col("r.cluster").alias("cluster"),
        F.col("r.topic").alias("topic"),
        F.coalesce("r.topic_id", "p.live_topic_id").alias("topic_id"),
        F.col("p.action").alias("action"),
        F.col("r.phase").alias("phase"),
        F.col("r.outcome").alias("outcome"),
        F.col("r.error_code").alias("error_code"),
        F.col("r.error_name").alias("error_name"),
        F.col("r.error_message").alias("error_message"),
        F.col("p.policy_violations").alias("policy_violations"),
        F.col("p.drift").alias("drift"),
        F.col("p.partitions").alias("requested_partitions"),
        F.col("p.replication_factor").alias("requested_replication_factor"),
        F.col("p.configs").alias("requested_configs"),
        F.col("p.replica_assignment").alias("requested_assignment"),
        F.col("r.result_partitions").alias("result_partitions"),
        F.col("r.result_replication_factor").alias("result_replication_factor"),
        F.col("r.result_configs").alias("result_configs"),
        F.col("r.topic_config_error_code").alias("topic_config_error_code"),
        F.col("r.attempts").alias("attempts"),
        F.col("p.owner").alias("owner"),
        F.col("p.source_table").alias("source_table"),
        F.col("p.source_version").alias("source_version"),
        F.lit(recorded_at).cast("timestamp").alias("recorded_at"),
    ).select(*column_names(AUDIT))


def final_outcomes(audit: DataFrame) -> DataFrame:
    """Per (cluster, topic) of one run: the outcome of its last phase."""
    order = (F.when(F.col("phase") == "plan", 0).when(F.col("phase") == "validate", 1)
             .when(F.col("phase") == "apply", 2).when(F.col("phase") == "verify", 3))
    last = F.max_by(F.struct("outcome", "action"), order)
    return (audit.groupBy("cluster", "topic").agg(last.alias("last"))
            .select("cluster", "topic", F.col("last.action").alias("action"),
                    F.col("last.outcome").alias("outcome")))
