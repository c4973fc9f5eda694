"""The topics' section of a saved plan (`views.planfile`): per cluster and topic the action,
the request (partitions, replication factor, configs, assignment, owner, force), the drift,
the policy violations and row errors, the live topic id the plan saw (or why it could not
see the topic), the manifest table and version that asked for it, and the fields the kinds
extending the topics' rows add (left out when null, so a change without them reads, and
digests, as it did before they existed). Clean NOOP rows (nothing to do) are left out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.kinds.topics.text import Extensions
from provisioning.names import NOOP
from provisioning.views.kind import Need, PlanSection

# The topics' own actions an apply makes, and the change each needs allowed (None: none).
_ALLOWED_BY = {names.CREATE: None, names.DELETE: names.ALLOW_DELETES,
               names.ALTER: names.ALLOW_ALTER}

# The fields of one saved change, in the order a difference is reported (then the
# extending kinds').
BASE_FIELDS = (
    "cluster", "topic", "action", "partitions", "replication_factor", "replica_assignment",
    "configs", "owner", "force", "drift", "violations", "row_errors", "live_topic_id",
    "live_error", "source_table", "source_version",
)


def plan_changes(plan: DataFrame, exts: Extensions = ()) -> DataFrame:
    """The PLAN rows a saved plan holds (all but clean NOOPs), as its change columns (and
    the extending kinds' (`exts`) columns the plan has).

    A NOOP whose live topic the job may not see (`live_error`) stays: it is a failure an
    operator approves knowingly, and the plan changes when the job gets to see it.
    """
    nothing_to_do = ((F.col("action") == NOOP)
                     & (F.coalesce(F.size("row_errors"), F.lit(0)) <= 0)
                     & (F.coalesce(F.size("policy_violations"), F.lit(0)) <= 0)
                     & F.col("live_error").isNull())
    added = [f for ext in exts for f in ext.entry_fields if f in plan.columns]
    return plan.where(~F.coalesce(nothing_to_do, F.lit(False))).select(
        "cluster", "topic", "action", "partitions", "replication_factor",
        "replica_assignment", "configs", "owner", "force", "drift",
        F.col("policy_violations").alias("violations"), "row_errors", "live_topic_id",
        "live_error", "source_table", "source_version", *added,
    )


def change_entry(row: Mapping[str, Any], exts: Extensions = ()) -> dict[str, Any]:
    """One saved change as plain JSON values, from a `plan_changes` row (as a dict) or a
    saved change (with the fields the extending kinds, `exts`, add)."""
    assignment = row.get("replica_assignment")
    configs = row.get("configs")
    entry = {
        "cluster": row.get("cluster"),
        "topic": row.get("topic"),
        "action": row.get("action"),
        "partitions": row.get("partitions"),
        "replication_factor": row.get("replication_factor"),
        "replica_assignment": None if assignment is None else {
            str(p): list(brokers or []) for p, brokers in sorted(assignment.items())},
        "configs": None if configs is None else dict(sorted(configs.items())),
        "owner": row.get("owner"),
        "force": row.get("force"),
        "drift": [{"field": d["field"], "desired": d["desired"], "actual": d["actual"],
                   "supported": d["supported"]} for d in row.get("drift") or []],
        "violations": [{"policy": v["policy"], "message": v["message"]}
                       for v in row.get("violations") or []],
        "row_errors": list(row.get("row_errors") or []),
        "live_topic_id": row.get("live_topic_id"),
        "live_error": row.get("live_error"),
        "source_table": row.get("source_table"),
        "source_version": row.get("source_version"),
    }
    for ext in exts:
        entry.update(ext.entry(row))
    return entry


class TopicsSection(PlanSection):
    """The section, with the fields of the kinds that extend the topics' rows (`exts`)."""

    key = "changes"
    required = True
    diff_prefix = ""

    def __init__(self, exts: Extensions = ()) -> None:
        self.exts = tuple(exts)

    @property
    def fields(self) -> tuple[str, ...]:  # type: ignore[override]
        return (*BASE_FIELDS, *self.optional)

    @property
    def optional(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(f for ext in self.exts for f in ext.entry_fields)

    def collect(self, plan: DataFrame) -> list[dict[str, Any]]:
        return [change_entry(r.asDict(recursive=True), self.exts)
                for r in plan_changes(plan, self.exts).collect()]

    def entry(self, row: Mapping[str, Any]) -> dict[str, Any]:
        return change_entry(row, self.exts)

    def identity(self, entry: Mapping[str, Any]) -> tuple[str, ...]:
        return (entry.get("cluster") or "", entry.get("topic") or "")

    def label(self, entry: Mapping[str, Any]) -> str:
        return (f"{entry.get('cluster') or '(no cluster)'}/"
                f"{entry.get('topic') or '(no topic)'}")

    def needs(self, entry: Mapping[str, Any]) -> list[Need]:
        if entry.get("violations") or entry.get("row_errors"):
            return []
        action = entry.get("action")
        found = []
        if action in _ALLOWED_BY:
            change = _ALLOWED_BY[action]
            found.append(Need("topics", action, () if change is None
                              else (names.allow_option(change),)))
        return [*found, *(n for ext in self.exts for n in ext.needs(entry))]

    def added_json(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        return {"cluster": entry["cluster"], "topic": entry["topic"], "action": entry["action"]}

    def changed_json(self, label: str, entry: Mapping[str, Any],
                     differences: Sequence[str]) -> dict[str, Any]:
        return {"cluster": entry["cluster"], "topic": entry["topic"],
                "differences": list(differences)}

    def summary(self, added: int, removed: int, changed: int) -> str:
        return f"{added} added, {removed} removed, {changed} changed"
