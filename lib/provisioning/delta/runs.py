"""The runs table: one row per run, appended once when the run ends."""

from __future__ import annotations

from pyspark.sql import SparkSession

from provisioning.delta.idempotent import Transaction, append_once
from provisioning.delta.tables import TableRef
from provisioning.results import RunRecord
from provisioning.session import job_label
from schemas import RUNS


def write_run(spark: SparkSession, table: str, record: RunRecord) -> None:
    """Append the run's row as one idempotent commit (a retry never writes it twice)."""
    ref = TableRef(table)
    df = spark.createDataFrame([record.row()], RUNS)
    with job_label(spark, f"{record.command}: record the run"):
        append_once(df, ref, Transaction(f"topic-provisioning-runs-{record.run_id}", 1),
               schema=RUNS)
