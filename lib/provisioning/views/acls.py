"""The ACL bindings' part of the views room (`views.kind`): their lines in the output of
`plan` and `apply`, their section of a saved plan, their rows in `report --run-id`, and the
report's views of the live bindings left alone (`--unmanaged-acls`, `--orphaned-acls`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf import Conf
from provisioning.conf.acls import AclsConf
from provisioning.delta.manifests import read_manifests
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.errors import UsageError
from provisioning.names import acls as acl_names
from provisioning.results import RunResult
from provisioning.results.acls import AclsSummary
from provisioning.transforms.acls.plan import binding_text, orphaned_bindings, unmanaged_bindings
from provisioning.transforms.acls.validation import with_acl_row_errors
from provisioning.transforms.scope import topics_matching
from provisioning.views.kind import PlanSection, ViewKind
from provisioning.views.plan_markdown import cell, code
from provisioning.views.report import latest_snapshot, rows_of
from schemas import ACL_DESIRED, ACL_MANIFEST

_SIGNS = {acl_names.GRANT: "+", acl_names.REVOKE: "-", names.NOOP: "="}


def binding_line(b: Mapping[str, Any]) -> str:
    """One binding of a run, as the plan shows it: "+ cluster ALLOW User:orders-app READ
    TOPIC orders (LITERAL) host *  granted", then why, when it did not simply happen."""
    sign = _SIGNS.get(b.get("action") or "", "?")
    line = f"{sign} {b.get('cluster')} {b.get('binding')}  {b.get('outcome')}"
    why = b.get("error_message") or (None if b.get("error_name") in (None, "NONE")
                                     else b.get("error_name"))
    if b.get("outcome") == names.VALIDATED and b.get("action") == acl_names.REVOKE:
        why = why or "made only by apply --allow-revokes"
    if why:
        line += f": {why}"
    if b.get("note"):
        line += f" ({b['note']})"
    return line


def acl_lines(acls: AclsSummary, run_id: str) -> list[str]:
    """The ACL part of a run's output: bindings per cluster and action, the bindings that
    did not simply stay as they were, and what is left alone."""
    lines = ["", "ACL bindings"]
    per = [f"  {a['cluster']}: {a['action']} {a['bindings']}" for a in acls.actions]
    lines += per or ["  no ACL binding in scope"]
    lines += [f"  {binding_line(b)}" for b in acls.bindings]
    if acls.bindings_not_listed:
        lines.append(f"  ... and {acls.bindings_not_listed} more binding(s): report "
                     f"--run-id {run_id} lists every one")
    for cluster, why in sorted(acls.clusters_not_changeable.items()):
        lines.append(f"  cluster {cluster}: ACLs not changed ({why['error_name']}): "
                     f"{why['error_message']}")
    for cluster, count in sorted(acls.unmanaged.items()):
        if count:
            lines.append(f"  cluster {cluster}: {count} unmanaged binding(s) (named by no ACL "
                         "manifest row; left alone): report --unmanaged-acls lists them")
    for cluster, count in sorted(acls.orphaned.items()):
        if count:
            lines.append(f"  cluster {cluster}: {count} orphaned binding(s) (LITERAL TOPIC, "
                         "naming no live topic): report --orphaned-acls lists them")
    if acls.revokes_not_allowed:
        lines.append(f"  {acls.revokes_not_allowed} revoke(s) not made: run apply with "
                     "--allow-revokes")
    summary = ", ".join(f"{k}={v}" for k, v in sorted(acls.counts.items()))
    lines.append(f"  ACL outcomes: {summary or 'nothing to do'}")
    return lines


def acl_markdown(acls: AclsSummary, run_id: str) -> list[str]:
    """The ACL part of `plan --format markdown`: a table of the bindings to look at (the
    action, not a sign, says what the run does to each)."""
    counts = ", ".join(f"{k} {v}" for k, v in sorted(acls.counts.items()))
    lines = ["#### ACL bindings", "", f"**Outcomes:** {counts or 'nothing to do'}", ""]
    if acls.bindings:
        lines += ["| cluster | change | verdict |", "|---|---|---|"]
        lines += [f"| {code(b.get('cluster') or '-')} | "
                  f"{cell(str(b.get('action')) + ' ' + str(b.get('binding')))} | "
                  f"{cell(binding_line(b).split('  ', 1)[1])} |" for b in acls.bindings]
        lines.append("")
    if acls.bindings_not_listed:
        lines += [f"… and {acls.bindings_not_listed} more binding(s): `report --run-id "
                  f"{run_id}` lists every one.", ""]
    if acls.revokes_not_allowed:
        lines += [f"{acls.revokes_not_allowed} revoke(s) are made only by "
                  "`apply --allow-revokes`.", ""]
    return lines


# -- the saved plan ----------------------------------------------------------------------

# The fields of one saved ACL binding change (ACL_PLAN rows but clean NOOPs).
ACL_CHANGE_FIELDS = (
    "cluster", "principal", "host", "resource_type", "resource_name", "pattern_type",
    "operation", "permission", "action", "state", "owner", "force", "violations",
    "row_errors", "note", "source_table", "source_version",
)
_ACL_KEY = ACL_CHANGE_FIELDS[:8]


class AclSection(PlanSection):
    key = "acl_changes"
    fields = ACL_CHANGE_FIELDS
    diff_prefix = "acl_"

    def collect(self, plan: DataFrame) -> list[dict[str, Any]]:
        nothing_to_do = ((F.col("action") == names.NOOP)
                         & (F.coalesce(F.size("row_errors"), F.lit(0)) <= 0)
                         & (F.coalesce(F.size("policy_violations"), F.lit(0)) <= 0))
        rows = (plan.where(~F.coalesce(nothing_to_do, F.lit(False)))
                .withColumnRenamed("policy_violations", "violations")
                .select(*ACL_CHANGE_FIELDS).collect())
        return [self.entry(r.asDict(recursive=True)) for r in rows]

    def entry(self, row: Mapping[str, Any]) -> dict[str, Any]:
        entry = {k: row.get(k) for k in ACL_CHANGE_FIELDS}
        entry["violations"] = [{"policy": v["policy"], "message": v["message"]}
                               for v in row.get("violations") or []]
        entry["row_errors"] = list(row.get("row_errors") or [])
        return entry

    def identity(self, entry: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(str(entry.get(k) or "") for k in _ACL_KEY)

    def label(self, entry: Mapping[str, Any]) -> str:
        return (f"{entry.get('cluster')} ACL {entry.get('permission')} "
                f"{entry.get('principal')} {entry.get('operation')} "
                f"{entry.get('resource_type')} {entry.get('resource_name')} "
                f"({entry.get('pattern_type')}) host {entry.get('host')}")

    def changed_json(self, label: str, entry: Mapping[str, Any],
                     differences: Sequence[str]) -> dict[str, Any]:
        return {"binding": label, "differences": list(differences)}

    def summary(self, added: int, removed: int, changed: int) -> str | None:
        if not (added or removed or changed):
            return None
        return f"ACL bindings: {added} added, {removed} removed, {changed} changed"


# -- the report ----------------------------------------------------------------------------

def acl_view(spark: SparkSession, conf: Conf, clusters: Sequence[str], kind: str
             ) -> dict[str, Any]:
    """`kind` "unmanaged": the bindings of each cluster's latest ACL snapshot that no row of
    the conf's ACL manifests, as they are now, names; "orphaned": its LITERAL TOPIC bindings
    that name no topic of the cluster's latest topic snapshot."""
    acls = conf.section(AclsConf)
    if acls.manifests is None:
        raise UsageError("the conf manages no ACL (tables.acl_manifests is not set)")
    ref = TableRef(acls.snapshots)
    if not table_exists(spark, ref):
        raise UsageError(f"no ACL snapshot taken yet: {acls.snapshots} does not "
                         "exist (run plan or apply first)")
    snapshot = latest_snapshot(read_table(spark, ref).transform(topics_matching(clusters,
                                                                                None)))
    live = snapshot.where(F.col("principal").isNotNull())
    if kind == "unmanaged":
        tables = [t for t in acls.manifests if table_exists(spark, TableRef(t))]
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
    rows = rows_of(found.join(when, on="cluster", how="left")
                 .withColumn("binding", binding_text())
                 .orderBy("cluster", "binding"))
    per_cluster: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        per_cluster[r["cluster"]].append(r)
    return {f"{kind}_acls": [{"cluster": c, "bindings": per_cluster[c]}
                             for c in sorted(per_cluster)]}


def render_acl_view(payload: Mapping[str, Any], kind: str) -> list[str]:
    """`acl_view`'s payload of `kind` ("unmanaged", "orphaned"), as lines."""
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


class AclsView(ViewKind):
    name = "acls"
    title = "ACL bindings"
    section = AclSection()
    report_columns = ("acl", "note")

    def json(self, summary: Any) -> dict[str, Any]:
        return {"acls": None} if summary is None else summary.as_json()

    def text(self, result: RunResult, verbose: bool) -> list[str]:
        summary = result.summary(AclsSummary)
        return [] if summary is None else acl_lines(summary, result.run_id)

    def markdown(self, result: RunResult, command: str) -> list[str]:
        summary = result.summary(AclsSummary)
        return [] if summary is None else acl_markdown(summary, result.run_id)

    def owns(self, row: Mapping[str, Any]) -> bool:
        return row.get("acl") is not None

    def subject(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return (row.get("cluster"), tuple(sorted((row.get("acl") or {}).items())))

    def subject_text(self, row: Mapping[str, Any]) -> str:
        acl = row["acl"]
        return (f"{row.get('cluster')} ACL {acl['permission']} {acl['principal']} "
                f"{acl['operation']} {acl['resource_type']} {acl['resource_name']} "
                f"({acl['pattern_type']}) host {acl['host']}")


KIND = AclsView()
