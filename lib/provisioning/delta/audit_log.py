"""The audit table: each phase's rows appended as one idempotent commit, and what earlier
runs recorded (the topics this job created, for pruning)."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning import names
from provisioning.delta.tables import TableRef, append, read_table, table_exists


class AuditLog:
    """Appends one run's AUDIT rows, a phase at a time, each phase as one commit.

    before_write: called with the phase before its commit (fault injection).
    """

    def __init__(self, spark: SparkSession, table: str, run_id: str,
                 before_write: Callable[[str], None] | None = None) -> None:
        self.spark = spark
        self.ref = TableRef(table)
        self.run_id = run_id
        self.before_write = before_write

    def write(self, phase: str, rows: DataFrame) -> None:
        """Append `rows` (materialized: a retry recomputes them) as the phase's commit."""
        if self.before_write is not None:
            self.before_write(phase)
        append(rows, self.ref, committed=lambda: self._has(phase))

    def _has(self, phase: str) -> bool:
        return not read_table(self.spark, self.ref).where(
            (F.col("run_id") == self.run_id) & (F.col("phase") == phase)).isEmpty()


def created_by_job(spark: SparkSession, table: str) -> DataFrame:
    """(cluster, topic, topic_id) of every topic the audit shows this job created."""
    ref = TableRef(table)
    if not table_exists(spark, ref):
        return spark.createDataFrame([], "cluster string, topic string, topic_id string")
    return (read_table(spark, ref)
            .where((F.col("outcome") == names.CREATED) & F.col("topic_id").isNotNull())
            .select("cluster", "topic", "topic_id").distinct())
