"""The runs table: one row per run, appended once when the run ends."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from provisioning.delta.tables import TableRef, append, read_table
from provisioning.results import RunRecord
from provisioning.session import job_label
from schemas import RUNS


def write_run(spark: SparkSession, table: str, record: RunRecord) -> None:
    """Append the run's row as one commit (a retry never writes it twice)."""
    ref = TableRef(table)
    df = spark.createDataFrame([record.row()], RUNS)
    with job_label(spark, f"{record.command}: record the run"):
        append(df, ref, committed=lambda: not read_table(spark, ref).where(
            F.col("run_id") == record.run_id).isEmpty())
