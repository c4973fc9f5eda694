"""The topics' views of `report`: a topic's history across runs (with the manifest rows that
asked for it, read at the versions the runs used: Delta time travel, `versionAsOf`), the
drift across clusters, the unmanaged topics, and the trend of `check`'s violations."""

from __future__ import annotations

import datetime as dt
import functools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf import Conf
from provisioning.delta.manifests import conform_to_manifest
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.errors import UsageError
from provisioning.kinds.topics.plan import own_overrides, unmanaged
from provisioning.kinds.topics.text import drift_lines
from provisioning.kinds.topics.view import VIEW
from provisioning.results import utc_now
from provisioning.transforms.audit import phase_order
from provisioning.transforms.scope import topics_matching
from provisioning.transforms.trend import check_runs, violation_spans, violations_per_day
from provisioning.views.kind import ViewKind
from provisioning.views.report import (
    audit_table,
    latest_snapshot,
    phase_chains,
    report_columns,
    rows_of,
    runs_table,
)
from schemas import MANIFEST, VIOLATIONS, column_names

# Source tables that are not manifests (the prune pass's own rows).
_NOT_A_MANIFEST = ("prune",)


def _columns(audit: DataFrame, kinds: Sequence[ViewKind]) -> list[str]:
    """The audit columns a view shows (the shared ones and each of `kinds`') that the table
    has (an audit table written before the ALTER columns existed lacks them)."""
    return [c for c in report_columns(kinds) if c in audit.columns]


def history_view(spark: SparkSession, kinds: Sequence[ViewKind], conf: Conf, topic: str,
                 clusters: Sequence[str], topics_glob: str | None) -> dict[str, Any]:
    """`report --topic`: the topic's history and its violations' spans."""
    runs = runs_table(spark, conf)
    audit = audit_table(spark, conf, clusters, topics_glob)
    found, checks = _checked(spark, conf, runs, clusters, None, topics_glob)
    spans = _spans(found.where(F.col("topic") == topic), checks)
    if audit is None:
        return {"topic": topic, "history": [], "manifest_versions": [],
                "violation_spans": spans}
    return {**topic_history(spark, kinds, audit, runs, topic), "violation_spans": spans}


def drift_report(spark: SparkSession, conf: Conf, clusters: Sequence[str],
                 topics_glob: str | None) -> dict[str, Any]:
    """`report --drift`: the topics whose latest plan found drift, per cluster."""
    runs_table(spark, conf)
    audit = audit_table(spark, conf, clusters, topics_glob)
    rows = [] if audit is None else rows_of(drift_view(audit).orderBy("cluster", "topic"))
    per_cluster: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        per_cluster[r["cluster"]].append(r)
    return {"drift": [{"cluster": c, "topics": per_cluster[c]} for c in sorted(per_cluster)]}


def manifest_rows_at(spark: SparkSession, table: str, version: int, cluster: str | None,
                     topic: str) -> dict[str, Any]:
    """The manifest rows of (cluster, topic) as `table` held them at `version`."""
    found: dict[str, Any] = {"source_table": table, "source_version": version}
    try:
        df = read_table(spark, TableRef(table), version).transform(conform_to_manifest)
        match = F.col("topic") == topic
        if cluster is not None:
            match = match & (F.col("cluster") == cluster)
        found["rows"] = rows_of(df.where(match).select(*column_names(MANIFEST)))
        found["error"] = None
    # A version may be vacuumed or the table dropped since: the history still stands.
    except Exception as exc:
        found["rows"] = []
        found["error"] = (f"version {version} of {table} is not readable any more: "
                          f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    return found


def topic_history(spark: SparkSession, kinds: Sequence[ViewKind], audit: DataFrame,
                  runs: DataFrame, topic: str) -> dict[str, Any]:
    """Every audit row of `topic` (oldest first, with the run's command) and the manifest
    rows that asked for it, read at the versions the runs used."""
    commands = runs.select("run_id", F.col("command").alias("run_command"))
    history = rows_of(
        audit.where(F.col("topic") == topic)
        .join(commands, on="run_id", how="left")
        .orderBy("recorded_at", "run_id", phase_order())
        .select(*_columns(audit, kinds), "run_command"))
    versions = sorted({(h["source_table"], h["source_version"], h["cluster"]) for h in history
                       if h["source_table"] and h["source_version"] is not None
                       and h["source_table"] not in _NOT_A_MANIFEST},
                      key=lambda v: (v[0], v[1], v[2] or ""))
    manifests = [manifest_rows_at(spark, table, version, cluster, topic)
                 for table, version, cluster in versions]
    return {"topic": topic, "history": history, "manifest_versions": manifests}


def drift_view(audit: DataFrame) -> DataFrame:
    """Per (cluster, topic): its latest plan-phase row, where that shows drift the job does
    not change in place (a DRIFT, or an ALTER that leaves some difference)."""
    latest = Window.partitionBy("cluster", "topic").orderBy(
        F.col("recorded_at").desc(), F.col("run_id").desc())
    left = (F.col("action") == names.DRIFT) | (
        (F.col("action") == names.ALTER) & F.exists("drift", lambda d: ~d["supported"]))
    return (audit.where(F.col("phase") == names.PLAN)
            .withColumn("_n", F.row_number().over(latest))
            .where((F.col("_n") == 1) & left)
            .select("cluster", "topic", "topic_id", "drift", "run_id", "recorded_at",
                    "owner", "source_table", "source_version"))

def unmanaged_view(spark: SparkSession, conf: Conf, clusters: Sequence[str],
                   topics_glob: str | None) -> dict[str, Any]:
    """The live topics (not internal) of each cluster's latest snapshot that no row of the
    conf's manifest tables, as they are now, names."""
    ref = TableRef(conf.tables.snapshots)
    if not table_exists(spark, ref):
        raise UsageError(f"no snapshot taken yet: {conf.tables.snapshots} does not exist "
                         "(run snapshot, plan or apply first)")
    live = latest_snapshot(read_table(spark, ref).transform(
        topics_matching(clusters, None)))
    manifests = [read_table(spark, TableRef(t)).select("cluster", "topic")
                 for t in conf.tables.manifests if table_exists(spark, TableRef(t))]
    desired = (functools.reduce(DataFrame.unionByName, manifests) if manifests
               else spark.createDataFrame([], "cluster string, topic string"))
    rows = rows_of(unmanaged(live.where(F.col("error_name").isNull()), desired)
                 .transform(topics_matching((), topics_glob))
                 .orderBy("cluster", "topic")
                 .select("cluster", "topic", "topic_id", "partitions", "replication_factor",
                         own_overrides(F.col("configs")).alias("overrides"),
                         "consumer_groups", "run_id", "snapshot_at"))
    per_cluster: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        per_cluster[r["cluster"]].append(r)
    return {"unmanaged": [{"cluster": c, "topics": per_cluster[c]} for c in sorted(per_cluster)]}

def _checked(spark: SparkSession, conf: Conf, runs: DataFrame, clusters: Sequence[str],
             since_days: int | None, topics_glob: str | None
             ) -> tuple[DataFrame, DataFrame]:
    """The VIOLATIONS rows of `clusters` and topics, and the check runs that count
    (`transforms.trend.check_runs`), started in the last `since_days` days (None:
    every one)."""
    checks = check_runs(runs)
    if clusters:
        checks = checks.where(F.col("cluster").isin(list(clusters)))
    if since_days is not None:
        cutoff = utc_now() - dt.timedelta(days=since_days)
        checks = checks.where(F.col("checked_at") >= F.lit(cutoff))
    ref = TableRef(conf.tables.violations)
    found = (read_table(spark, ref) if table_exists(spark, ref)
             else spark.createDataFrame([], VIOLATIONS))
    return found.transform(topics_matching(clusters, topics_glob)), checks


def _spans(found: DataFrame, checks: DataFrame) -> list[dict[str, Any]]:
    return rows_of(violation_spans(found, checks).orderBy("cluster", "topic", "rule",
                                                        "started_at"))


def violations_trend(spark: SparkSession, conf: Conf, clusters: Sequence[str],
                     since_days: int | None, topics_glob: str | None = None
                     ) -> dict[str, Any]:
    """`report --violations`: per cluster, the violations per rule per day (each day's last
    check run over every topic), and when each topic started and stopped breaking a rule.

    since_days: only the check runs started in the last this many days (None: every one).
    """
    found, checks = _checked(spark, conf, runs_table(spark, conf), clusters, since_days,
                             topics_glob)
    days = rows_of(violations_per_day(found, checks).orderBy("cluster", "day", "rule"))
    return {"violations": {"days": days, "spans": _spans(found, checks)}}

def _requested(h: Mapping[str, Any]) -> str:
    parts = []
    if h.get("requested_partitions") is not None:
        parts.append(f"partitions {h['requested_partitions']}")
    if h.get("requested_replication_factor") is not None:
        parts.append(f"replication factor {h['requested_replication_factor']}")
    if h.get("requested_assignment"):
        parts.append("assignment " + "; ".join(
            f"{p}: {', '.join(str(b) for b in bs or [])}"
            for p, bs in sorted(h["requested_assignment"].items(), key=lambda i: int(i[0]))))
    if h.get("requested_configs"):
        parts.append("configs " + ", ".join(
            f"{k}={v}" for k, v in sorted(h["requested_configs"].items())))
    return ", ".join(parts) or "broker defaults only"


def _returned(steps: Sequence[Mapping[str, Any]]) -> str | None:
    """What the broker said the topic got (KIP-525), from the last step that carries it."""
    answered = [s for s in steps if s.get("result_configs")]
    if not answered:
        return None
    h = answered[-1]
    overrides = [f"{c['name']}={c['value']}" for c in h["result_configs"]
                 if c["source"] == names.TOPIC_OVERRIDE]
    return (f"{h['phase']}: partitions {h.get('result_partitions')}, replication factor "
            f"{h.get('result_replication_factor')}, topic configs "
            f"{', '.join(sorted(overrides)) or '(none)'}")


def _topic_id(steps: Sequence[Mapping[str, Any]]) -> str | None:
    """The id of the live or created topic; validateOnly answers with a throwaway id."""
    ids = [s.get("topic_id") for s in steps if s["phase"] != names.VALIDATE and s.get("topic_id")]
    return ids[-1] if ids else None


def _manifest_row(row: Mapping[str, Any]) -> str:
    shown = []
    for name in column_names(MANIFEST):
        value = row.get(name)
        if value is None:
            continue
        if isinstance(value, Mapping):
            value = "{" + ", ".join(f"{k}: {v}" for k, v in sorted(value.items())) + "}"
        shown.append(f"{name}={value}")
    return " ".join(shown)


def _violation_lines(spans: Sequence[Mapping[str, Any]]) -> list[str]:
    if not spans:
        return []
    lines = ["  check's violations (when each started and stopped):"]
    for s in spans:
        stopped = (f"until run {s['stopped_run_id']} ({s['stopped_at']})"
                   if s.get("stopped_run_id") else "still broken")
        lines.append(f"    {s['cluster']} {s['rule']} ({s['severity']}): from run "
                     f"{s['started_run_id']} ({s['started_at']}) {stopped}, {s['runs']} "
                     f"run(s); {s['detail']}")
    return lines


def render_history(payload: Mapping[str, Any]) -> list[str]:
    lines = [f"history of topic {payload['topic']}"]
    if not payload["history"]:
        return [*lines, "  no audit row names this topic",
                *_violation_lines(payload.get("violation_spans") or [])]
    # Every row of a topic's history is a topic row: one chain per run.
    for steps, chain in phase_chains((VIEW,), payload["history"]):
        last = steps[-1]
        lines.append(f"  {last['recorded_at']} run {last['run_id']} "
                     f"({last.get('run_command') or '?'}) {last['cluster']} "
                     f"{last['action']}: {chain}")
        details = [f"requested {_requested(last)}; owner {last.get('owner') or '(none)'}; "
                   f"manifest {last['source_table']}@{last['source_version']}"]
        if last.get("config_ops") or last.get("before_partitions") is not None:
            before = ", ".join(f"{k}={v}" for k, v in
                               sorted((last.get("before_configs") or {}).items()))
            ops = ", ".join(f"{o['op']} {o['name']}" + (f"={o['value']}" if o["value"] else "")
                            for o in last.get("config_ops") or [])
            details.append(f"before: partitions {last.get('before_partitions')}, topic "
                           f"configs {before or '(none)'}; operations {ops or '(none)'}")
        returned = _returned(steps)
        if returned:
            details.append(f"broker returned ({returned})")
        topic_id = _topic_id(steps)
        if topic_id:
            details.append(f"topic id {topic_id}")
        details += [f"policy {v['policy']}: {v['message']}"
                    for v in last.get("policy_violations") or []]
        details += drift_lines(last.get("drift"))
        lines += [f"      {d}" for d in details]
    lines.append("  manifest rows as they were at those versions:")
    for m in payload["manifest_versions"]:
        head = f"    {m['source_table']}@{m['source_version']}"
        if m.get("error"):
            lines.append(f"{head}: {m['error']}")
        elif not m["rows"]:
            lines.append(f"{head}: no row for this topic")
        for row in m["rows"]:
            lines.append(f"{head}: {_manifest_row(row)}")
    return [*lines, *_violation_lines(payload.get("violation_spans") or [])]

def render_drift(payload: Mapping[str, Any]) -> list[str]:
    lines = ["drift across clusters (each topic's latest plan)"]
    if not payload["drift"]:
        return [*lines, "  no topic shows drift"]
    for block in payload["drift"]:
        lines.append(f"cluster {block['cluster']}: {len(block['topics'])} topic(s) drifted")
        for t in block["topics"]:
            lines.append(f"  ~ {t['topic']}  (run {t['run_id']} at {t['recorded_at']}, "
                         f"owner {t.get('owner') or '(none)'})")
            lines += [f"      {d}" for d in drift_lines(t["drift"])]
    return lines


def render_unmanaged(payload: Mapping[str, Any]) -> list[str]:
    lines = ["unmanaged topics (live in each cluster's latest snapshot, named by no manifest)"]
    if not payload["unmanaged"]:
        return [*lines, "  none"]
    for block in payload["unmanaged"]:
        first = block["topics"][0]
        taken = max(t["snapshot_at"] for t in block["topics"])
        lines.append(f"cluster {block['cluster']}: {len(block['topics'])} topic(s) "
                     f"(snapshot {first['run_id']} at {taken})")
        for t in block["topics"]:
            overrides = ", ".join(f"{k}={v}" for k, v in sorted((t["overrides"] or {}).items()))
            groups = ("unknown" if t["consumer_groups"] is None
                      else ", ".join(t["consumer_groups"]) or "none")
            lines.append(f"  ? {t['topic']}  partitions {t['partitions']}, replication factor "
                         f"{t['replication_factor']}")
            lines.append(f"      overrides: {overrides or '(none)'}; consumer groups: {groups}")
    lines.append("adopt them with: import --table TABLE --topics GLOB")
    return lines
