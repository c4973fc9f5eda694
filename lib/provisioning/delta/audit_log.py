"""The audit table: each commit of a run's rows appended idempotently, and what earlier runs
recorded (the topics this job created, for pruning)."""

from __future__ import annotations

import threading

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning import names
from provisioning.delta.idempotent import Transaction, append_once
from provisioning.delta.tables import TableRef, read_table, table_exists


class AuditLog:
    """Appends one run's AUDIT rows, each commit landing once (`delta.idempotent`): its
    transaction `topic-provisioning-audit-<run id>`, version the commit's number in the
    run, so an append retried after an error that came after its commit is not written
    twice."""

    def __init__(self, spark: SparkSession, table: str, run_id: str) -> None:
        self.spark = spark
        self.ref = TableRef(table)
        self.run_id = run_id
        self._commits = 0
        self._lock = threading.Lock()

    def write(self, phase: str, rows: DataFrame) -> None:
        """Append `rows` (materialized: a retry recomputes them) as the run's next commit;
        commits of one run are written in order (the engine's commit order)."""
        with self._lock:
            self._commits += 1
            version = self._commits
        # One file per commit, however many DataFrames and partitions it unions (a run's
        # rows are small; no small-file storm on a cluster).
        append_once(rows.coalesce(1), self.ref,
                    Transaction(f"topic-provisioning-audit-{self.run_id}", version))


def created_by_job(spark: SparkSession, table: str) -> DataFrame:
    """(cluster, topic, topic_id) of every topic the audit shows this job created."""
    ref = TableRef(table)
    if not table_exists(spark, ref):
        return spark.createDataFrame([], "cluster string, topic string, topic_id string")
    return (read_table(spark, ref)
            .where((F.col("outcome") == names.CREATED) & F.col("topic_id").isNotNull())
            .select("cluster", "topic", "topic_id").distinct())
