"""`report`: recent runs, one run's outcomes, one topic's history, read from the Delta tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from provisioning.conf import Conf
from provisioning.delta_io import TableRef, read_table, table_exists
from provisioning.errors import UsageError


def _phase_order() -> Column:
    phase = F.col("phase")
    return (F.when(phase == "plan", 0).when(phase == "validate", 1)
            .when(phase == "apply", 2).when(phase == "verify", 3))

_AUDIT_COLUMNS = ("run_id", "cluster", "topic", "topic_id", "action", "phase", "outcome",
                  "error_name", "error_message", "result_partitions",
                  "result_replication_factor", "result_configs", "requested_partitions",
                  "requested_replication_factor", "requested_configs", "owner",
                  "source_table", "source_version", "recorded_at")


def build_report(spark: SparkSession, conf: Conf, run_id: str | None, topic: str | None,
                 clusters: Sequence[str], limit: int) -> dict[str, Any]:
    """The data behind the report, as plain values (rendered or printed as JSON)."""
    runs_ref, audit_ref = TableRef(conf.tables.runs), TableRef(conf.tables.audit)
    if not table_exists(spark, runs_ref):
        raise UsageError(f"no runs recorded yet: {conf.tables.runs} does not exist")
    runs = read_table(spark, runs_ref)
    audit = read_table(spark, audit_ref) if table_exists(spark, audit_ref) else None
    if clusters and audit is not None:
        audit = audit.where(F.col("cluster").isin(*clusters))

    if topic is not None:
        if audit is None:
            return {"topic": topic, "history": []}
        rows = (audit.where(F.col("topic") == topic)
                .orderBy("recorded_at", _phase_order()).select(*_AUDIT_COLUMNS).collect())
        return {"topic": topic, "history": [r.asDict(recursive=True) for r in rows]}

    if run_id is not None:
        run = runs.where(F.col("run_id") == run_id).collect()
        if not run:
            raise UsageError(f"no run {run_id} in {conf.tables.runs}")
        rows = [] if audit is None else (
            audit.where(F.col("run_id") == run_id)
            .orderBy("cluster", "topic", _phase_order()).select(*_AUDIT_COLUMNS)
            .limit(limit * 50).collect())
        return {"run": run[0].asDict(recursive=True),
                "audit": [r.asDict(recursive=True) for r in rows]}

    recent = runs.orderBy(F.col("started_at").desc()).limit(limit).collect()
    return {"runs": [r.asDict(recursive=True) for r in recent]}


def render_report(payload: dict[str, Any]) -> list[str]:
    """Lines for a person."""
    if "history" in payload:
        lines = [f"history of topic {payload['topic']}"]
        for h in payload["history"]:
            lines.append(
                f"  {h['recorded_at']} run {h['run_id']} {h['cluster']} {h['action']} "
                f"{h['phase']}: {h['outcome']}"
                + (f" ({h['error_name']}: {h['error_message']})" if h["error_name"] and
                   h["error_name"] not in ("NONE",) else "")
                + f" [manifest {h['source_table']}@{h['source_version']}]")
        return lines
    if "run" in payload:
        run = payload["run"]
        lines = [f"run {run['run_id']}: {run['command']} {run['status']} "
                 f"(exit {run['exit_code']}) {run['started_at']} -> {run['finished_at']}",
                 "  outcomes: " + ", ".join(f"{k}={v}" for k, v in
                                            sorted((run["outcome_counts"] or {}).items()))]
        if run.get("message"):
            lines.append(f"  message: {run['message']}")
        for a in payload["audit"]:
            lines.append(f"  {a['cluster']}/{a['topic']} {a['action']} {a['phase']}: "
                         f"{a['outcome']}" + (f" - {a['error_message']}"
                                              if a["error_message"] else ""))
        return lines
    lines = ["recent runs"]
    for r in payload["runs"]:
        counts = ", ".join(f"{k}={v}" for k, v in sorted((r["outcome_counts"] or {}).items()))
        lines.append(f"  {r['run_id']} {r['command']:<8} {r['status']:<22} exit "
                     f"{r['exit_code']}  {counts}")
    return lines
