"""The client quotas' part of the views room (`views.kind`): their lines in the output of
`plan` and `apply` (text, Markdown, JSON), their section of a saved plan, their rows in
`report --run-id`, and the report's view of the live quotas no manifest lists
(`--unmanaged-quotas`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf import Conf
from provisioning.conf.quotas import QuotasConf
from provisioning.delta.manifests import read_manifests
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.errors import UsageError
from provisioning.names import quotas as quota_names
from provisioning.results import RunResult
from provisioning.results.quotas import QuotasSummary
from provisioning.transforms.quotas.plan import entity_text, unmanaged_quotas
from provisioning.transforms.quotas.validation import (
    with_duplicate_entity_errors,
    with_quota_row_errors,
)
from provisioning.transforms.scope import topics_matching
from provisioning.views.kind import PlanSection, ViewKind
from provisioning.views.plan_markdown import cell, code
from provisioning.views.report import latest_snapshot, rows_of
from schemas.quotas import ENTITY_COLUMNS, QUOTA_DESIRED, QUOTA_MANIFEST

_TYPES = dict(zip(ENTITY_COLUMNS, quota_names.ENTITY_TYPES, strict=True))


def entity_label(row: Mapping[str, Any]) -> str:
    """"user=orders-app client-id=<default>": the entity's set types, in Kafka's order."""
    return " ".join(f"{_TYPES[c]}={row[c]}" for c in ENTITY_COLUMNS
                    if row.get(c) is not None) or "(no entity)"


def _number(value: float | None) -> str:
    if value is None:
        return "(not set)"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:g}"


def change_text(q: Mapping[str, Any]) -> str:
    """"quota user=orders-app producer_byte_rate 1048576 -> 2097152": the value found live
    before, and the one asked for; a verified row, the value read back."""
    asked = "(removed)" if q.get("action") == quota_names.REMOVE else _number(q.get("value"))
    subject = f"quota {entity_label(q)} {q.get('key') or '(no key)'}"
    if q.get("phase") == names.VERIFY:
        return f"{subject} -> {asked} (read back: {_number(q.get('found'))})"
    return f"{subject} {_number(q.get('found'))} -> {asked}"


def _sign(q: Mapping[str, Any]) -> str:
    if q.get("outcome") in names.ATTENTION:
        return "!"
    if q.get("action") == quota_names.REMOVE:
        return "-"
    if q.get("action") == quota_names.SET_ACTION:
        # Before the change, `found` is the live value (none: a new quota); a verified row's
        # is the value read back.
        return "+" if q.get("found") is None and q.get("phase") != names.VERIFY else "~"
    return "="


def quota_line(q: Mapping[str, Any]) -> str:
    """One quota of a run: its change and its outcome, then why when it did not simply
    happen."""
    line = f"{_sign(q)} {q.get('cluster')} {change_text(q)}  {q.get('outcome')}"
    why = q.get("error_message") or (None if q.get("error_name") in (None, "NONE")
                                     else q.get("error_name"))
    if q.get("outcome") == names.VALIDATED and q.get("action") == quota_names.REMOVE:
        why = why or "made only by apply --allow-quota-removals"
    if why:
        line += f": {why}"
    if q.get("note"):
        line += f" ({q['note']})"
    return line


def quota_lines(summary: QuotasSummary, run_id: str) -> list[str]:
    """The quota part of a run's output: quotas per cluster and action, the quotas that did
    not simply stay as they were, and what is left alone."""
    lines = ["", "Client quotas"]
    lines += [f"  {a['cluster']}: {a['action']} {a['quotas']}" for a in summary.actions] \
        or ["  no client quota in scope"]
    lines += [f"  {quota_line(q)}" for q in summary.quotas]
    if summary.quotas_not_listed:
        lines.append(f"  ... and {summary.quotas_not_listed} more quota(s): report --run-id "
                     f"{run_id} lists every one")
    for cluster, why in sorted(summary.clusters_not_readable.items()):
        lines.append(f"  cluster {cluster}: quotas not read ({why['error_name']}): "
                     f"{why['error_message']}")
    for cluster, count in sorted(summary.unmanaged.items()):
        if count:
            lines.append(f"  cluster {cluster}: {count} unmanaged quota(s) (listed by no quota "
                         "manifest row; left alone): report --unmanaged-quotas lists them")
    if summary.removals_not_allowed:
        lines.append(f"  {summary.removals_not_allowed} quota removal(s) not made: run apply "
                     "with --allow-quota-removals")
    counts = ", ".join(f"{k}={v}" for k, v in sorted(summary.counts.items()))
    lines.append(f"  quota outcomes: {counts or 'nothing to do'}")
    return lines


def quota_markdown(summary: QuotasSummary, run_id: str) -> list[str]:
    """The quota part of `plan --format markdown`: a table of the quotas to look at."""
    counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.counts.items()))
    lines = ["#### Client quotas", "", f"**Outcomes:** {counts or 'nothing to do'}", ""]
    if summary.quotas:
        lines += ["| cluster | change | verdict |", "|---|---|---|"]
        lines += [f"| {code(q.get('cluster') or '-')} | {cell(change_text(q))} | "
                  f"{cell(quota_line(q).split('  ', 1)[1])} |" for q in summary.quotas]
        lines.append("")
    if summary.quotas_not_listed:
        lines += [f"… and {summary.quotas_not_listed} more quota(s): `report --run-id "
                  f"{run_id}` lists every one.", ""]
    if summary.removals_not_allowed:
        lines += [f"{summary.removals_not_allowed} quota removal(s) are made only by "
                  "`apply --allow-quota-removals`.", ""]
    return lines


# -- the saved plan ----------------------------------------------------------------------

QUOTA_CHANGE_FIELDS = (
    "cluster", *ENTITY_COLUMNS, "key", "action", "state", "value", "live_value", "owner",
    "force", "violations", "row_errors", "note", "source_table", "source_version",
)


class QuotaSection(PlanSection):
    key = "quota_changes"
    fields = QUOTA_CHANGE_FIELDS
    diff_prefix = "quota_"

    def collect(self, plan: DataFrame) -> list[dict[str, Any]]:
        nothing_to_do = ((F.col("action") == names.NOOP)
                         & (F.coalesce(F.size("row_errors"), F.lit(0)) <= 0)
                         & (F.coalesce(F.size("policy_violations"), F.lit(0)) <= 0))
        rows = (plan.where(~F.coalesce(nothing_to_do, F.lit(False)))
                .withColumnRenamed("policy_violations", "violations")
                .select(*QUOTA_CHANGE_FIELDS).collect())
        return [self.entry(r.asDict(recursive=True)) for r in rows]

    def entry(self, row: Mapping[str, Any]) -> dict[str, Any]:
        entry = {k: row.get(k) for k in QUOTA_CHANGE_FIELDS}
        entry["violations"] = [{"policy": v["policy"], "message": v["message"]}
                               for v in row.get("violations") or []]
        entry["row_errors"] = list(row.get("row_errors") or [])
        return entry

    def identity(self, entry: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(str(entry.get(k) or "") for k in ("cluster", *ENTITY_COLUMNS, "key"))

    def label(self, entry: Mapping[str, Any]) -> str:
        return f"{entry.get('cluster')} quota {entity_label(entry)} {entry.get('key')}"

    def changed_json(self, label: str, entry: Mapping[str, Any],
                     differences: Sequence[str]) -> dict[str, Any]:
        return {"quota": label, "differences": list(differences)}

    def summary(self, added: int, removed: int, changed: int) -> str | None:
        if not (added or removed or changed):
            return None
        return f"client quotas: {added} added, {removed} removed, {changed} changed"


# -- the report ----------------------------------------------------------------------------

def unmanaged_quota_view(spark: SparkSession, conf: Conf, clusters: Sequence[str]
                         ) -> dict[str, Any]:
    """`report --unmanaged-quotas`: the quotas of each cluster's latest quota snapshot that
    no row of the conf's quota manifests, as they are now, lists."""
    quotas = conf.section(QuotasConf)
    if quotas.manifests is None:
        raise UsageError("the conf manages no client quota (tables.quota_manifests is not "
                         "set)")
    ref = TableRef(quotas.snapshots)
    if not table_exists(spark, ref):
        raise UsageError(f"no quota snapshot taken yet: {quotas.snapshots} does not exist "
                         "(run plan or apply first)")
    snapshot = latest_snapshot(read_table(spark, ref).transform(topics_matching(clusters,
                                                                                None)))
    live = snapshot.where(F.col("key").isNotNull())
    tables = [t for t in quotas.manifests if table_exists(spark, TableRef(t))]
    desired = (read_manifests(spark, tables, QUOTA_MANIFEST, QUOTA_DESIRED, ("cluster",),
                              "quota manifest")
               .transform(with_quota_row_errors(tuple(conf.clusters)))
               .transform(with_duplicate_entity_errors))
    when = snapshot.select("cluster", "run_id", "snapshot_at").distinct()
    rows = rows_of(unmanaged_quotas(live.drop("run_id", "snapshot_at"), desired)
                   .join(when, on="cluster", how="left")
                   .withColumn("entity", entity_text())
                   .orderBy("cluster", "entity", "key"))
    per_cluster: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        per_cluster[r["cluster"]].append(r)
    return {"unmanaged_quotas": [{"cluster": c, "quotas": per_cluster[c]}
                                 for c in sorted(per_cluster)]}


def render_unmanaged_quotas(payload: Mapping[str, Any]) -> list[str]:
    lines = ["unmanaged client quotas (each cluster's latest quota snapshot, listed by no "
             "quota manifest row)"]
    blocks = payload["unmanaged_quotas"]
    if not blocks:
        return [*lines, "  none"]
    for block in blocks:
        first = block["quotas"][0]
        lines.append(f"cluster {block['cluster']}: {len(block['quotas'])} quota(s) "
                     f"(snapshot {first['run_id']} at {first['snapshot_at']})")
        lines += [f"  ? quota {entity_label(q)} {q['key']} {_number(q['value'])}"
                  for q in block["quotas"]]
    lines.append("adopt them with: import --quotas --table TABLE")
    return lines


class QuotasView(ViewKind):
    name = "quotas"
    title = "client quotas"
    section = QuotaSection()
    report_columns = ("quota",)

    def json(self, summary: Any) -> dict[str, Any]:
        return {"quotas": None} if summary is None else summary.as_json()

    def text(self, result: RunResult, verbose: bool) -> list[str]:
        summary = result.summary(QuotasSummary)
        return [] if summary is None else quota_lines(summary, result.run_id)

    def markdown(self, result: RunResult, command: str) -> list[str]:
        summary = result.summary(QuotasSummary)
        return [] if summary is None else quota_markdown(summary, result.run_id)

    def owns(self, row: Mapping[str, Any]) -> bool:
        return row.get("quota") is not None

    def subject(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return (row.get("cluster"), tuple(sorted(
            (k, v) for k, v in (row.get("quota") or {}).items() if k not in ("value",
                                                                            "found"))))

    def subject_text(self, row: Mapping[str, Any]) -> str:
        quota = row["quota"]
        return f"{row.get('cluster')} quota {entity_label(quota)} {quota['key']}"


KIND = QuotasView()
