"""`report`: what every kind's report views share (reading the job's tables), the recent
runs, and one run's rows of every kind (`--run-id`).

Everything is read from the Delta tables the runs wrote (runs, audit, snapshots). Each
kind's own views (a topic's history, the drift, the unmanaged subjects, ...) are its module
of this package; the CLI (`cli.report`) offers every kind's views and renders each payload with
the view that made it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning.conf import Conf
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.errors import UsageError
from provisioning.transforms.audit import phase_order
from provisioning.transforms.scope import topics_matching
from provisioning.views.kind import ViewKind, owner_of
from provisioning.views.text_table import table_lines

# Rows of one run `report --run-id` shows per `--limit` (the run's subjects, each with its
# phases).
ROWS_PER_LIMIT = 50


def rows_of(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]


def latest_snapshot(snapshots: DataFrame) -> DataFrame:
    """Each cluster's rows of its most recent snapshot: the run of the newest `snapshot_at`
    (a run records one snapshot per table; an apply's view read under its lock keeps the
    first read's rows, and times, for the subjects it did not read again)."""
    newest = snapshots.groupBy("cluster").agg(
        F.max(F.struct("snapshot_at", "run_id"))["run_id"].alias("_newest"))
    return (snapshots.join(newest, on="cluster", how="inner")
            .where(F.col("run_id") == F.col("_newest"))
            .drop("_newest"))


def runs_table(spark: SparkSession, conf: Conf) -> DataFrame:
    """The runs table; UsageError when no run was recorded yet."""
    ref = TableRef(conf.tables.runs)
    if not table_exists(spark, ref):
        raise UsageError(f"no runs recorded yet: {conf.tables.runs} does not exist")
    return read_table(spark, ref)


def audit_table(spark: SparkSession, conf: Conf, clusters: Sequence[str],
                topics_glob: str | None) -> DataFrame | None:
    """The audit table's rows of `clusters` and the topics `topics_glob` matches (None when
    the table does not exist yet)."""
    ref = TableRef(conf.tables.audit)
    if not table_exists(spark, ref):
        return None
    return read_table(spark, ref).transform(topics_matching(clusters, topics_glob))


def recent_runs(spark: SparkSession, conf: Conf, limit: int) -> dict[str, Any]:
    """The `limit` latest runs, newest first."""
    runs = runs_table(spark, conf)
    recent = runs.orderBy(F.col("started_at").desc(), F.col("run_id").desc()).limit(limit)
    return {"runs": rows_of(recent)}


def run_view(spark: SparkSession, kinds: Sequence[ViewKind], conf: Conf, run_id: str,
             clusters: Sequence[str], topics_glob: str | None, limit: int) -> dict[str, Any]:
    """One run's row in the runs table and its audit rows (every kind's, by subject and
    phase), up to `limit` x ROWS_PER_LIMIT of them: `audit_not_shown` says how many more
    there are, and the output says how to see them."""
    runs = runs_table(spark, conf)
    run = runs.where(F.col("run_id") == run_id).collect()
    if not run:
        raise UsageError(f"no run {run_id} in {conf.tables.runs}")
    audit = audit_table(spark, conf, clusters, topics_glob)
    cap = limit * ROWS_PER_LIMIT
    rows: list[dict[str, Any]] = []
    not_shown = 0
    if audit is not None:
        of_run = audit.where(F.col("run_id") == run_id)
        rows = rows_of(of_run.orderBy("cluster", "topic", phase_order())
                       .select(*[c for c in report_columns(kinds) if c in audit.columns])
                       .limit(cap + 1))
        if len(rows) > cap:
            rows = rows[:cap]
            not_shown = of_run.count() - cap
    return {"run": run[0].asDict(recursive=True), "audit": rows,
            "audit_not_shown": not_shown, "limit": limit}


# The audit columns the report shows (and those each kind adds: `ViewKind.report_columns`).
BASE_COLUMNS = ("run_id", "cluster", "topic", "topic_id", "action", "phase", "outcome",
                "error_name", "error_message", "policy_violations", "drift",
                "requested_partitions", "requested_replication_factor", "requested_configs",
                "requested_assignment", "result_partitions", "result_replication_factor",
                "result_configs", "owner", "source_table", "source_version", "recorded_at",
                "before_partitions", "before_configs", "config_ops")


def report_columns(kinds: Sequence[ViewKind]) -> tuple[str, ...]:
    """The audit columns the report shows: the shared ones and each of `kinds`'."""
    return tuple(dict.fromkeys((*BASE_COLUMNS, *(c for k in kinds
                                                 for c in k.report_columns))))


def byte_size(value: int | None, none: str = "-") -> str:
    """Bytes in binary units (exact below 1 KiB); `none` for an unknown size."""
    if value is None:
        return none
    amount = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(amount) < 1024:
            return f"{int(amount)} B" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{amount:.1f} TiB"


def counts_text(counts: Mapping[str, int] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((counts or {}).items())) or "-"


def error_text(a: Mapping[str, Any]) -> str:
    if a.get("error_name") and a["error_name"] != "NONE":
        return f" ({a['error_name']}: {a.get('error_message')})"
    return ""


def phase_chains(kinds: Sequence[ViewKind], rows: Sequence[Mapping[str, Any]]
                 ) -> list[tuple[list[Mapping[str, Any]], str]]:
    """The rows of each (run, subject), in order, and "phase outcome -> ..."; a row's
    subject is its kind's (`ViewKind.subject`)."""
    grouped: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        kind = owner_of(kinds, r)
        grouped.setdefault((r["run_id"], kind.name, kind.subject(r)), []).append(r)
    return [(steps, " -> ".join(f"{s['phase']} {s['outcome']}{error_text(s)}" for s in steps))
            for steps in grouped.values()]


def render_run_view(kinds: Sequence[ViewKind], payload: Mapping[str, Any]) -> list[str]:
    """`run_view` as lines: the run, then each subject's chain of phases."""
    run = payload["run"]
    lines = [f"run {run['run_id']}: {run['command']} {run['status']} "
             f"(exit {run['exit_code']}) {run['started_at']} -> {run['finished_at']}",
             f"  outcomes: {counts_text(run['outcome_counts'])}"]
    if run.get("message"):
        lines.append(f"  message: {run['message']}")
    for steps, chain in phase_chains(kinds, payload["audit"]):
        last = steps[-1]
        lines.append(f"  {owner_of(kinds, last).subject_text(last)} {last['action']}: {chain}")
    if payload.get("audit_not_shown"):
        shown, limit = len(payload["audit"]), payload.get("limit") or 1
        lines.append(f"  ... {payload['audit_not_shown']} more audit row(s) not shown "
                     f"(the first {shown}, {ROWS_PER_LIMIT} per --limit): report --run-id "
                     f"{run['run_id']} --limit "
                     f"{limit + -(-payload['audit_not_shown'] // ROWS_PER_LIMIT)} shows "
                     "them all, or --cluster / --topics narrow it")
    return lines


def render_recent_runs(payload: Mapping[str, Any]) -> list[str]:
    """A line per run in columns, each followed by the first line of its message."""
    lines = ["recent runs (newest first)"]
    runs = payload["runs"]
    rows = table_lines([[r["run_id"], r["command"], r["status"], f"exit {r['exit_code']}",
                         f"{r['started_at']} -> {r['finished_at']}",
                         counts_text(r["outcome_counts"])] for r in runs])
    for r, row in zip(runs, rows, strict=True):
        lines.append(row)
        if r.get("message"):
            lines.append(f"      {r['message'].splitlines()[0]}")
    return lines
