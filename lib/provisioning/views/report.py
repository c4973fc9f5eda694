"""`report`: recent runs, one run's outcomes, one topic's history, drift across clusters,
the unmanaged topics, the trend of `check`'s violations, the reassignments in flight.

Everything is read from the Delta tables the runs wrote (runs, audit, snapshots,
violations) and,
for a topic's history, from the manifest tables themselves as they were at
the version that asked for the topic (Delta time travel, `versionAsOf`). The reassignments
in flight are the exception: read live from each cluster (`kafka.in_flight`), they are
only shaped and rendered here.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf import Conf
from provisioning.delta.manifests import conform_to_manifest, read_manifests
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.errors import UsageError
from provisioning.results import utc_now
from provisioning.session import job_label
from provisioning.transforms.acls.plan import binding_text, orphaned_bindings, unmanaged_bindings
from provisioning.transforms.acls.validation import with_acl_row_errors
from provisioning.transforms.adopt import own_overrides, unmanaged
from provisioning.transforms.audit import phase_order
from provisioning.transforms.check.trend import check_runs, violation_spans, violations_per_day
from provisioning.transforms.scope import glob_to_regex, topics_matching
from provisioning.views.check import render_trend
from provisioning.views.plan_text import drift_lines
from schemas import ACL_DESIRED, ACL_MANIFEST, MANIFEST, VIOLATIONS, column_names

_AUDIT_COLUMNS = ("run_id", "cluster", "topic", "topic_id", "action", "phase", "outcome",
                  "error_name", "error_message", "policy_violations", "drift",
                  "requested_partitions", "requested_replication_factor", "requested_configs",
                  "requested_assignment", "result_partitions", "result_replication_factor",
                  "result_configs", "owner", "source_table", "source_version", "recorded_at",
                  "before_partitions", "before_configs", "config_ops", "acl", "note")
# Source tables that are not manifests (the prune pass's own rows).
_NOT_A_MANIFEST = ("prune",)


def _columns(audit: DataFrame) -> list[str]:
    """The audit columns a view shows that the table has (an audit table written before
    the ALTER columns existed lacks them)."""
    return [c for c in _AUDIT_COLUMNS if c in audit.columns]


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]



def manifest_rows_at(spark: SparkSession, table: str, version: int, cluster: str | None,
                     topic: str) -> dict[str, Any]:
    """The manifest rows of (cluster, topic) as `table` held them at `version`."""
    found: dict[str, Any] = {"source_table": table, "source_version": version}
    try:
        df = read_table(spark, TableRef(table), version).transform(conform_to_manifest)
        match = F.col("topic") == topic
        if cluster is not None:
            match = match & (F.col("cluster") == cluster)
        found["rows"] = _rows(df.where(match).select(*column_names(MANIFEST)))
        found["error"] = None
    # A version may be vacuumed or the table dropped since: the history still stands.
    except Exception as exc:
        found["rows"] = []
        found["error"] = (f"version {version} of {table} is not readable any more: "
                          f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    return found


def topic_history(spark: SparkSession, audit: DataFrame, runs: DataFrame, topic: str
                  ) -> dict[str, Any]:
    """Every audit row of `topic` (oldest first, with the run's command) and the manifest
    rows that asked for it, read at the versions the runs used."""
    commands = runs.select("run_id", F.col("command").alias("run_command"))
    history = _rows(
        audit.where(F.col("topic") == topic)
        .join(commands, on="run_id", how="left")
        .orderBy("recorded_at", "run_id", phase_order())
        .select(*_columns(audit), "run_command"))
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


def latest_snapshot(snapshots: DataFrame) -> DataFrame:
    """Each cluster's rows of its most recent snapshot: the run of the newest `snapshot_at`
    (a run records one snapshot per table; an apply's view read under its lock keeps the
    first read's rows, and times, for the topics it did not read again)."""
    newest = snapshots.groupBy("cluster").agg(
        F.max(F.struct("snapshot_at", "run_id"))["run_id"].alias("_newest"))
    return (snapshots.join(newest, on="cluster", how="inner")
            .where(F.col("run_id") == F.col("_newest"))
            .drop("_newest"))


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
    rows = _rows(unmanaged(live.where(F.col("error_name").isNull()), desired)
                 .transform(topics_matching((), topics_glob))
                 .orderBy("cluster", "topic")
                 .select("cluster", "topic", "topic_id", "partitions", "replication_factor",
                         own_overrides(F.col("configs")).alias("overrides"),
                         "consumer_groups", "run_id", "snapshot_at"))
    per_cluster: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        per_cluster[r["cluster"]].append(r)
    return {"unmanaged": [{"cluster": c, "topics": per_cluster[c]} for c in sorted(per_cluster)]}


def acl_view(spark: SparkSession, conf: Conf, clusters: Sequence[str], kind: str
             ) -> dict[str, Any]:
    """`kind` "unmanaged": the bindings of each cluster's latest ACL snapshot that no row of
    the conf's ACL manifests, as they are now, names; "orphaned": its LITERAL TOPIC bindings
    that name no topic of the cluster's latest topic snapshot."""
    if conf.tables.acl_manifests is None:
        raise UsageError("the conf manages no ACL (tables.acl_manifests is not set)")
    ref = TableRef(conf.tables.acl_snapshots)
    if not table_exists(spark, ref):
        raise UsageError(f"no ACL snapshot taken yet: {conf.tables.acl_snapshots} does not "
                         "exist (run plan or apply first)")
    snapshot = latest_snapshot(read_table(spark, ref).transform(topics_matching(clusters,
                                                                                None)))
    live = snapshot.where(F.col("principal").isNotNull())
    if kind == "unmanaged":
        tables = [t for t in conf.tables.acl_manifests if table_exists(spark, TableRef(t))]
        desired = read_manifests(spark, tables, ACL_MANIFEST, ACL_DESIRED,
                                 ("cluster", "principal"), "ACL manifest").transform(
            with_acl_row_errors(tuple(conf.clusters)))
        found = unmanaged_bindings(live, desired)
    else:
        topics = TableRef(conf.tables.snapshots)
        live_topics = (latest_snapshot(read_table(spark, topics)).where(
            F.col("error_name").isNull()) if table_exists(spark, topics)
            else spark.createDataFrame([], "cluster string, topic string"))
        found = orphaned_bindings(live, live_topics)
    when = snapshot.select("cluster", "run_id", "snapshot_at").distinct()
    rows = _rows(found.join(when, on="cluster", how="left")
                 .withColumn("binding", binding_text())
                 .orderBy("cluster", "binding"))
    per_cluster: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        per_cluster[r["cluster"]].append(r)
    return {f"{kind}_acls": [{"cluster": c, "bindings": per_cluster[c]}
                             for c in sorted(per_cluster)]}


def render_acl_view(payload: Mapping[str, Any]) -> list[str]:
    kind = "unmanaged" if "unmanaged_acls" in payload else "orphaned"
    blocks = payload[f"{kind}_acls"]
    what = ("named by no ACL manifest row" if kind == "unmanaged"
            else "LITERAL TOPIC bindings naming no live topic")
    lines = [f"{kind} ACL bindings (each cluster's latest ACL snapshot, {what})"]
    if not blocks:
        return [*lines, "  none"]
    for block in blocks:
        first = block["bindings"][0]
        lines.append(f"cluster {block['cluster']}: {len(block['bindings'])} binding(s) "
                     f"(snapshot {first['run_id']} at {first['snapshot_at']})")
        lines += [f"  ? {b['binding']}" for b in block["bindings"]]
    lines.append("adopt them with: import --acls --table TABLE" if kind == "unmanaged" else
                 "revoke them with an ACL manifest row `state: absent` and apply "
                 "--allow-revokes")
    return lines


def _checked(spark: SparkSession, conf: Conf, runs: DataFrame, clusters: Sequence[str],
             since_days: int | None, topics_glob: str | None
             ) -> tuple[DataFrame, DataFrame]:
    """The VIOLATIONS rows of `clusters` and topics, and the check runs that count
    (`transforms.check.trend.check_runs`), started in the last `since_days` days (None:
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
    return _rows(violation_spans(found, checks).orderBy("cluster", "topic", "rule",
                                                        "started_at"))


def violations_trend(spark: SparkSession, conf: Conf, clusters: Sequence[str],
                     since_days: int | None, topics_glob: str | None = None
                     ) -> dict[str, Any]:
    """`report --violations`: per cluster, the violations per rule per day (each day's last
    check run over every topic), and when each topic started and stopped breaking a rule.

    since_days: only the check runs started in the last this many days (None: every one).
    """
    runs_ref = TableRef(conf.tables.runs)
    if not table_exists(spark, runs_ref):
        raise UsageError(f"no runs recorded yet: {conf.tables.runs} does not exist")
    found, checks = _checked(spark, conf, read_table(spark, runs_ref), clusters, since_days,
                             topics_glob)
    days = _rows(violations_per_day(found, checks).orderBy("cluster", "day", "rule"))
    return {"violations": {"days": days, "spans": _spans(found, checks)}}


def build_report(spark: SparkSession, conf: Conf, run_id: str | None, topic: str | None,
                 clusters: Sequence[str], limit: int, drift: bool = False,
                 topics_glob: str | None = None, unmanaged: bool = False,
                 violations: bool = False, since_days: int | None = None,
                 unmanaged_acls: bool = False, orphaned_acls: bool = False
                 ) -> dict[str, Any]:
    """The data behind the report, as plain values (rendered or printed as JSON)."""
    chosen = [name for name, on in (("--run-id", run_id), ("--topic", topic),
                                    ("--drift", drift), ("--unmanaged", unmanaged),
                                    ("--violations", violations),
                                    ("--unmanaged-acls", unmanaged_acls),
                                    ("--orphaned-acls", orphaned_acls)) if on]
    if len(chosen) > 1:
        raise UsageError(f"report takes one of --run-id, --topic, --drift, --unmanaged, "
                         f"--violations, --unmanaged-acls, --orphaned-acls; got "
                         f"{' and '.join(chosen)}")
    if since_days is not None and not violations:
        raise UsageError("--since goes with --violations")
    view = chosen[0].lstrip("-") if chosen else "recent runs"
    with job_label(spark, f"report: {view}"):
        if unmanaged:
            return unmanaged_view(spark, conf, clusters, topics_glob)
        if unmanaged_acls or orphaned_acls:
            return acl_view(spark, conf, clusters,
                            "unmanaged" if unmanaged_acls else "orphaned")
        if violations:
            return violations_trend(spark, conf, clusters, since_days, topics_glob)
        return _build(spark, conf, run_id, topic, clusters, limit, drift, topics_glob)


def _build(spark: SparkSession, conf: Conf, run_id: str | None, topic: str | None,
           clusters: Sequence[str], limit: int, drift: bool, topics_glob: str | None
           ) -> dict[str, Any]:
    runs_ref, audit_ref = TableRef(conf.tables.runs), TableRef(conf.tables.audit)
    if not table_exists(spark, runs_ref):
        raise UsageError(f"no runs recorded yet: {conf.tables.runs} does not exist")
    runs = read_table(spark, runs_ref)
    audit = read_table(spark, audit_ref) if table_exists(spark, audit_ref) else None
    if audit is not None:
        audit = audit.transform(topics_matching(clusters, topics_glob))

    if topic is not None:
        found, checks = _checked(spark, conf, runs, clusters, None, topics_glob)
        spans = _spans(found.where(F.col("topic") == topic), checks)
        if audit is None:
            return {"topic": topic, "history": [], "manifest_versions": [],
                    "violation_spans": spans}
        return {**topic_history(spark, audit, runs, topic), "violation_spans": spans}

    if drift:
        rows = [] if audit is None else _rows(drift_view(audit).orderBy("cluster", "topic"))
        per_cluster: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            per_cluster[r["cluster"]].append(r)
        return {"drift": [{"cluster": c, "topics": per_cluster[c]} for c in sorted(per_cluster)]}

    if run_id is not None:
        run = runs.where(F.col("run_id") == run_id).collect()
        if not run:
            raise UsageError(f"no run {run_id} in {conf.tables.runs}")
        rows = [] if audit is None else _rows(
            audit.where(F.col("run_id") == run_id)
            .orderBy("cluster", "topic", phase_order()).select(*_columns(audit))
            .limit(limit * 50))
        return {"run": run[0].asDict(recursive=True), "audit": rows}

    recent = runs.orderBy(F.col("started_at").desc(), F.col("run_id").desc()).limit(limit)
    return {"runs": _rows(recent)}


def _counts(counts: Mapping[str, int] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((counts or {}).items())) or "-"


def _error(a: Mapping[str, Any]) -> str:
    if a.get("error_name") and a["error_name"] != "NONE":
        return f" ({a['error_name']}: {a.get('error_message')})"
    return ""


def _binding(acl: Mapping[str, Any]) -> str:
    return (f"{acl['permission']} {acl['principal']} {acl['operation']} "
            f"{acl['resource_type']} {acl['resource_name']} ({acl['pattern_type']}) host "
            f"{acl['host']}")


def _phase_chains(rows: Sequence[Mapping[str, Any]]
                  ) -> list[tuple[list[Mapping[str, Any]], str]]:
    """The rows of each (run, cluster, topic), in order, and "phase outcome -> ..."."""
    grouped: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        acl = r.get("acl")
        grouped.setdefault((r["run_id"], r["cluster"], r["topic"],
                            tuple(sorted(acl.items())) if acl else None), []).append(r)
    return [(steps, " -> ".join(f"{s['phase']} {s['outcome']}{_error(s)}" for s in steps))
            for steps in grouped.values()]


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
    for steps, chain in _phase_chains(payload["history"]):
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


def reassignments_view(blocks: Sequence[Mapping[str, Any]], topics_glob: str | None
                       ) -> dict[str, Any]:
    """`report --reassignments`: the blocks of `kafka.in_flight.reassignments_in_flight`
    (cluster, error, partitions), each keeping the partitions of the topics `topics_glob`
    matches (all when None)."""
    pattern = re.compile(glob_to_regex(topics_glob)) if topics_glob else None
    return {"reassignments": [
        {**b, "partitions": [r for r in b["partitions"]
                             if pattern is None or pattern.fullmatch(r["topic"])]}
        for b in blocks]}


_IN_FLIGHT_HEADER = ("topic", "partition", "replicas", "adding", "removing", "target",
                     "bytes left")


def _brokers(ids: Sequence[int] | None) -> str:
    return ",".join(str(b) for b in ids or []) or "-"


def render_reassignments(payload: Mapping[str, Any]) -> list[str]:
    """Per cluster: its error, or a table of its partitions being moved."""
    lines = ["partition reassignments in flight (read live from each cluster)"]
    if not payload["reassignments"]:
        return [*lines, "  no cluster selected"]
    for block in payload["reassignments"]:
        if block.get("error"):
            lines.append(f"cluster {block['cluster']}: error: {block['error']}")
            continue
        moving = block["partitions"]
        if not moving:
            lines.append(f"cluster {block['cluster']}: none")
            continue
        lines.append(f"cluster {block['cluster']}: {len(moving)} partition(s) moving")
        cells = [_IN_FLIGHT_HEADER] + [
            (r["topic"], str(r["partition"]), _brokers(r["replicas"]), _brokers(r["adding"]),
             _brokers(r["removing"]), _brokers(r["target"]),
             "unknown" if r["bytes_left"] is None else str(r["bytes_left"]))
            for r in moving]
        widths = [max(len(row[i]) for row in cells) for i in range(len(_IN_FLIGHT_HEADER))]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
                  .rstrip() for row in cells]
    return lines


def render_report(payload: Mapping[str, Any]) -> list[str]:
    """Lines for a person."""
    if "reassignments" in payload:
        return render_reassignments(payload)
    if "violations" in payload:
        return render_trend(payload["violations"]["days"], payload["violations"]["spans"])
    if "unmanaged" in payload:
        return render_unmanaged(payload)
    if "unmanaged_acls" in payload or "orphaned_acls" in payload:
        return render_acl_view(payload)
    if "history" in payload:
        return render_history(payload)
    if "drift" in payload:
        return render_drift(payload)
    if "run" in payload:
        run = payload["run"]
        lines = [f"run {run['run_id']}: {run['command']} {run['status']} "
                 f"(exit {run['exit_code']}) {run['started_at']} -> {run['finished_at']}",
                 f"  outcomes: {_counts(run['outcome_counts'])}"]
        if run.get("message"):
            lines.append(f"  message: {run['message']}")
        for steps, chain in _phase_chains(payload["audit"]):
            last = steps[-1]
            acl = last.get("acl")
            subject = (f"ACL {_binding(acl)}" if acl else f"{last['cluster']}/{last['topic']}")
            if acl:
                subject = f"{last['cluster']} {subject}"
            lines.append(f"  {subject} {last['action']}: {chain}")
        return lines
    lines = ["recent runs (newest first)"]
    for r in payload["runs"]:
        lines.append(f"  {r['run_id']} {r['command']:<8} {r['status']:<22} exit "
                     f"{r['exit_code']}  {r['started_at']} -> {r['finished_at']}  "
                     f"{_counts(r['outcome_counts'])}")
        if r.get("message"):
            lines.append(f"      {r['message'].splitlines()[0]}")
    return lines
