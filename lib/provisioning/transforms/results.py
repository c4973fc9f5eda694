"""Admin results judged against the plan: a topic the broker says already exists; the
topics a phase never reached."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.transforms.drift import drift_items, drift_text
from schemas import TOPIC_RESULT, column_names

_DESIRED = ("partitions", "replication_factor", "replica_assignment", "configs")


def settle_existing(results: DataFrame, plan: DataFrame) -> DataFrame:
    """TOPIC_RESULT rows where each topic a real CreateTopics found existing (created behind
    the job's back since the snapshot) is judged by the plan's own drift definition:
    outcome `drift`, with the differences in its message, when the live topic differs
    from its PLAN row; as it came (`already_present`) otherwise.

    Only topics the task could describe are judged (their `result_partitions` is set).
    """
    desired = plan.select("cluster", "topic", *[F.col(c).alias(f"_desired_{c}")
                                                for c in _DESIRED])
    joined = results.join(desired, on=["cluster", "topic"], how="left")
    compared = joined.select(
        "*",
        *[F.col(f"_desired_{c}").alias(c) for c in _DESIRED],
        F.col("result_partitions").alias("live_partitions"),
        F.col("result_replication_factor").alias("live_replication_factor"),
        F.col("result_assignment").alias("live_replica_assignment"),
        F.col("result_configs").alias("live_configs"),
    ).withColumn("_drift", drift_items())
    existing = ((F.col("phase") == names.APPLY)
                & (F.col("error_name") == names.TOPIC_ALREADY_EXISTS)
                & F.col("result_partitions").isNotNull())
    differs = existing & (F.size("_drift") > 0)
    replaced = {
        "outcome": F.when(differs, F.lit(names.DRIFTED)).otherwise(F.col("outcome")),
        "error_message": F.when(differs, F.concat(F.lit("the topic exists and differs: "),
                                                  drift_text(F.col("_drift"))))
        .otherwise(F.col("error_message")),
    }
    return compared.select(*[replaced.get(c, F.col(c)).alias(c)
                             for c in column_names(TOPIC_RESULT)])


def without_answer(targets: DataFrame, phase: str, outcome: str, error_name: str,
                   message: str, attempts: int = 0) -> DataFrame:
    """TOPIC_RESULT rows of `phase` for `targets` (cluster, topic) that no broker answer
    settled: `outcome` with `error_name` and `message` (the topics a phase never sent
    because the run stopped first, `failed` with attempts 0; those whose answers a failed
    Spark job lost, `unknown`)."""
    given = {
        "phase": F.lit(phase),
        "outcome": F.lit(outcome),
        "error_name": F.lit(error_name),
        "error_message": F.lit(message),
        "attempts": F.lit(attempts),
    }
    return targets.select(*[
        F.col(c).alias(c) if c in ("cluster", "topic")
        else given.get(c, F.lit(None)).cast(TOPIC_RESULT[c].dataType).alias(c)
        for c in column_names(TOPIC_RESULT)])
