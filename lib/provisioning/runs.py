"""Run identity and the one `provision_runs` row each run leaves behind."""

from __future__ import annotations

import datetime as dt
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from provisioning.delta_io import TableRef, append, read_table
from provisioning.spark import job_description
from schemas import RUNS, column_names


def utc_now() -> dt.datetime:
    """Now, time-zone aware: Spark stores the instant whatever the machine's zone."""
    return dt.datetime.now(dt.UTC)


def new_run_id(now: dt.datetime | None = None) -> str:
    """Sortable and unique: UTC start time plus random hex."""
    start = now or utc_now()
    return f"{start:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


@dataclass
class RunRecord:
    run_id: str
    command: str
    arguments: Mapping[str, Any]
    conf_digest: str
    started_at: dt.datetime = field(default_factory=utc_now)
    finished_at: dt.datetime | None = None
    status: str = "running"
    exit_code: int | None = None
    message: str | None = None
    outcome_counts: dict[str, int] = field(default_factory=dict)
    clusters: list[dict[str, Any]] = field(default_factory=list)

    def finish(self, status: str, exit_code: int, message: str | None = None) -> None:
        self.status = status
        self.exit_code = exit_code
        self.message = message
        self.finished_at = utc_now()

    def row(self) -> tuple[Any, ...]:
        values = {
            "run_id": self.run_id,
            "command": self.command,
            "arguments": json.dumps(dict(self.arguments), sort_keys=True, default=str),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "status": self.status,
            "exit_code": self.exit_code,
            "message": self.message,
            "outcome_counts": dict(self.outcome_counts),
            "clusters": self.clusters,
            "conf_digest": self.conf_digest,
        }
        return tuple(values[c] for c in column_names(RUNS))


def write_run(spark: SparkSession, table: str, record: RunRecord) -> None:
    """Append the run's row as one commit."""
    ref = TableRef(table)
    df = spark.createDataFrame([record.row()], RUNS)
    with job_description(spark, f"{record.command}: record the run"):
        append(df, ref, committed=lambda: not read_table(spark, ref).where(
            F.col("run_id") == record.run_id).isEmpty())
