"""Saved plans: the canonical document `plan --out` writes and `apply --plan` checks.

A saved plan holds what an operator approves: per cluster and topic the
action, the request (partitions, replication factor, configs, assignment,
owner, force), the drift, the policy violations and row errors, the live
topic id the plan saw (or why it could not see the topic), the manifest table
and version that asked for it, plus the conf digest and the run's scope
(clusters, topic glob). Clean NOOP rows (nothing to do) are left out.

`apply --plan FILE` builds a fresh plan and proceeds only when its canonical
content equals the saved one; run ids, timestamps and outcome counts live in
the file's `meta` block and never take part in the comparison.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning.errors import UsageError
from provisioning.names import NOOP

FORMAT = "topic-provisioning-plan/1"

# The fields of one saved change, in the order a difference is reported.
CHANGE_FIELDS = (
    "cluster", "topic", "action", "partitions", "replication_factor", "replica_assignment",
    "configs", "owner", "force", "drift", "violations", "row_errors", "live_topic_id",
    "live_error", "source_table", "source_version", "reassignment",
)
# Change fields a saved change may lack (read as null): left out when null.
_OPTIONAL_FIELDS = ("reassignment",)

Key = tuple[str | None, str | None]

# The fields of one saved ACL binding change (ACL_PLAN rows but clean NOOPs).
ACL_CHANGE_FIELDS = (
    "cluster", "principal", "host", "resource_type", "resource_name", "pattern_type",
    "operation", "permission", "action", "state", "owner", "force", "violations",
    "row_errors", "note", "source_table", "source_version",
)
_ACL_KEY = ACL_CHANGE_FIELDS[:8]


class StalePlan(UsageError):
    """The saved plan no longer matches what a fresh plan says; nothing was applied."""

    def __init__(self, path: str, diff: PlanDiff) -> None:
        self.path = path
        self.diff = diff
        lines = "\n".join(f"  {line}" for line in diff.lines())
        super().__init__(
            f"the saved plan {path} is stale: a fresh plan differs from it, so nothing was "
            f"validated or applied. Review a new plan (plan --out) and apply that.\n{lines}")

    @property
    def details(self) -> dict[str, Any]:
        """What `--json` adds to the error document."""
        return {"reason": "stale_plan", "plan_file": self.path, "plan_diff": self.diff.as_dict()}


def plan_changes(plan: DataFrame) -> DataFrame:
    """The PLAN rows a saved plan holds (all but clean NOOPs), as its change columns.

    A NOOP whose live topic the job may not see (`live_error`) stays: it is a failure an
    operator approves knowingly, and the plan changes when the job gets to see it.
    """
    nothing_to_do = ((F.col("action") == NOOP)
                     & (F.coalesce(F.size("row_errors"), F.lit(0)) <= 0)
                     & (F.coalesce(F.size("policy_violations"), F.lit(0)) <= 0)
                     & F.col("live_error").isNull())
    return plan.where(~F.coalesce(nothing_to_do, F.lit(False))).select(
        "cluster", "topic", "action", "partitions", "replication_factor",
        "replica_assignment", "configs", "owner", "force", "drift",
        F.col("policy_violations").alias("violations"), "row_errors", "live_topic_id",
        "live_error", "source_table", "source_version", "reassignment",
    )


def change_entry(row: Mapping[str, Any]) -> dict[str, Any]:
    """One saved change as plain JSON values, from a `plan_changes` row (as a dict)."""
    assignment = row.get("replica_assignment")
    configs = row.get("configs")
    return {
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
        # Replica moves: left out of a change without any (such a change reads, and
        # digests, as it did before moves existed).
        **({} if row.get("reassignment") is None else {"reassignment": [
            {"partition": m["partition"], "before": list(m["before"] or []),
             "after": list(m["after"] or []), "in_flight": bool(m["in_flight"])}
            for m in row["reassignment"]]}),
    }


def acl_changes(acl_plan: DataFrame) -> list[dict[str, Any]]:
    """The ACL_PLAN rows a saved plan holds (all but clean NOOPs), as plain JSON values."""
    nothing_to_do = ((F.col("action") == NOOP)
                     & (F.coalesce(F.size("row_errors"), F.lit(0)) <= 0)
                     & (F.coalesce(F.size("policy_violations"), F.lit(0)) <= 0))
    rows = (acl_plan.where(~F.coalesce(nothing_to_do, F.lit(False)))
            .withColumnRenamed("policy_violations", "violations")
            .select(*ACL_CHANGE_FIELDS).collect())
    return [acl_change_entry(r.asDict(recursive=True)) for r in rows]


def acl_change_entry(row: Mapping[str, Any]) -> dict[str, Any]:
    entry = {k: row.get(k) for k in ACL_CHANGE_FIELDS}
    entry["violations"] = [{"policy": v["policy"], "message": v["message"]}
                           for v in row.get("violations") or []]
    entry["row_errors"] = list(row.get("row_errors") or [])
    return entry


def _acl_key(entry: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(entry.get(k) or "") for k in _ACL_KEY)


def _acl_label(entry: Mapping[str, Any]) -> str:
    return (f"{entry.get('cluster')} ACL {entry.get('permission')} {entry.get('principal')} "
            f"{entry.get('operation')} {entry.get('resource_type')} "
            f"{entry.get('resource_name')} ({entry.get('pattern_type')}) host "
            f"{entry.get('host')}")


def canonical_json(value: Any) -> str:
    """The one spelling of a JSON value that digests and comparisons use."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sort_key(entry: Mapping[str, Any]) -> tuple[str, str, str]:
    return (entry["cluster"] or "", entry["topic"] or "", canonical_json(entry))


@dataclass(frozen=True)
class PlanDocument:
    """The canonical content of a plan: what is compared, digested and approved."""

    conf_digest: str
    clusters: tuple[str, ...]
    topics: str | None
    changes: tuple[dict[str, Any], ...] = ()
    # ACL binding changes (ACL_CHANGE_FIELDS); left out of the document when there are none.
    acl_changes: tuple[dict[str, Any], ...] = ()

    @classmethod
    def build(cls, conf_digest: str, clusters: Sequence[str], topics: str | None,
              changes: Sequence[Mapping[str, Any]],
              acl_changes: Sequence[Mapping[str, Any]] = ()) -> PlanDocument:
        entries = sorted((change_entry(c) for c in changes), key=_sort_key)
        acls = sorted((acl_change_entry(c) for c in acl_changes),
                      key=lambda e: (_acl_key(e), canonical_json(e)))
        return cls(conf_digest, tuple(sorted(clusters)), topics, tuple(entries), tuple(acls))

    def canonical(self) -> dict[str, Any]:
        doc = {"conf_digest": self.conf_digest,
               "scope": {"clusters": list(self.clusters), "topics": self.topics},
               "changes": [dict(c) for c in self.changes]}
        if self.acl_changes:
            doc["acl_changes"] = [dict(c) for c in self.acl_changes]
        return doc

    @property
    def digest(self) -> str:
        return hashlib.sha256(canonical_json(self.canonical()).encode("utf-8")).hexdigest()

    def by_key(self) -> dict[Key, list[dict[str, Any]]]:
        grouped: dict[Key, list[dict[str, Any]]] = defaultdict(list)
        for c in self.changes:
            grouped[(c["cluster"], c["topic"])].append(c)
        return grouped


def collect_document(plan: DataFrame, conf_digest: str, clusters: Sequence[str],
                     topics: str | None) -> PlanDocument:
    """The canonical document of a run's PLAN rows (collects the changes on the driver)."""
    rows = [r.asDict(recursive=True) for r in plan.transform(plan_changes).collect()]
    return PlanDocument.build(conf_digest, clusters, topics, rows)


@dataclass(frozen=True)
class SavedPlan:
    path: str
    document: PlanDocument
    meta: Mapping[str, Any]


def save_plan(path: str | Path, document: PlanDocument, meta: Mapping[str, Any]) -> None:
    """Write the plan file: format, digest, canonical plan and the run's meta, atomically."""
    target = Path(path)
    payload = {"format": FORMAT, "digest": document.digest, "plan": document.canonical(),
               "meta": dict(meta)}
    text = json.dumps(payload, sort_keys=True, indent=2, ensure_ascii=False, default=str)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(target)
    except OSError as exc:
        raise UsageError(f"cannot write the plan file {path}: {exc.strerror or exc}") from None


def load_plan(path: str | Path) -> SavedPlan:
    """Read a plan file; UsageError names what is wrong with it."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read the plan file {p}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"the plan file {p} is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        raise UsageError(f"the plan file {p} is not a saved plan of format {FORMAT} "
                         f"(format: {found!r})")
    try:
        plan = data["plan"]
        scope = plan["scope"]
        changes = plan["changes"]
        missing = [f"changes[{i}].{k}" for i, c in enumerate(changes)
                   for k in CHANGE_FIELDS if k not in c and k not in _OPTIONAL_FIELDS]
        if missing:
            raise UsageError(f"the plan file {p} lacks {', '.join(missing[:5])}")
        acls = plan.get("acl_changes") or []
        missing = [f"acl_changes[{i}].{k}" for i, c in enumerate(acls)
                   for k in ACL_CHANGE_FIELDS if k not in c]
        if missing:
            raise UsageError(f"the plan file {p} lacks {', '.join(missing[:5])}")
        document = PlanDocument.build(plan["conf_digest"], scope["clusters"], scope["topics"],
                                      changes, acls)
    except (KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"the plan file {p} is malformed: missing or bad {exc}") from None
    if document.digest != data.get("digest"):
        raise UsageError(f"the plan file {p} was modified after it was saved (its digest "
                         "does not match its content); run plan --out again")
    return SavedPlan(str(p), document, data.get("meta") or {})


def _short(value: Any) -> str:
    if isinstance(value, str):
        return value
    return canonical_json(value)


def field_differences(saved: Mapping[str, Any], fresh: Mapping[str, Any]) -> list[str]:
    """"field: saved -> fresh" for every change field that differs."""
    return [f"{name}: {_short(saved.get(name))} -> {_short(fresh.get(name))}"
            for name in CHANGE_FIELDS if saved.get(name) != fresh.get(name)]


def _label(key: Key) -> str:
    return f"{key[0] or '(no cluster)'}/{key[1] or '(no topic)'}"


@dataclass(frozen=True)
class PlanDiff:
    """How a fresh plan differs from a saved one."""

    conf_digest: tuple[str, str] | None = None
    scope: tuple[dict[str, Any], dict[str, Any]] | None = None
    added: tuple[dict[str, Any], ...] = ()
    removed: tuple[dict[str, Any], ...] = ()
    changed: tuple[tuple[Key, tuple[str, ...]], ...] = field(default=())
    # ACL binding changes in one plan and not the other, or changed ("field: a -> b").
    acl_added: tuple[dict[str, Any], ...] = ()
    acl_removed: tuple[dict[str, Any], ...] = ()
    acl_changed: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.conf_digest or self.scope or self.added or self.removed
                    or self.changed or self.acl_added or self.acl_removed
                    or self.acl_changed)

    def lines(self, limit: int = 50) -> list[str]:
        """What an operator reads: the conf and scope, then one line per topic."""
        out = []
        if self.conf_digest:
            out.append(f"conf changed: digest {self.conf_digest[0][:12]} -> "
                       f"{self.conf_digest[1][:12]}")
        if self.scope:
            out.append(f"scope changed: {canonical_json(self.scope[0])} -> "
                       f"{canonical_json(self.scope[1])}")
        topics = ([f"+ {_label((c['cluster'], c['topic']))} {c['action']}: in the fresh plan, "
                   "not in the saved one" for c in self.added]
                  + [f"- {_label((c['cluster'], c['topic']))} {c['action']}: in the saved "
                     "plan, not in the fresh one" for c in self.removed]
                  + [f"~ {_label(key)}: {'; '.join(diffs)}" for key, diffs in self.changed]
                  + [f"+ {_acl_label(c)} {c['action']}: in the fresh plan, not in the saved "
                     "one" for c in self.acl_added]
                  + [f"- {_acl_label(c)} {c['action']}: in the saved plan, not in the "
                     "fresh one" for c in self.acl_removed]
                  + [f"~ {label}: {'; '.join(diffs)}" for label, diffs in self.acl_changed])
        out += topics[:limit]
        if len(topics) > limit:
            out.append(f"... and {len(topics) - limit} more topic(s)")
        out.append(f"{len(self.added)} added, {len(self.removed)} removed, "
                   f"{len(self.changed)} changed")
        if self.acl_added or self.acl_removed or self.acl_changed:
            out.append(f"ACL bindings: {len(self.acl_added)} added, {len(self.acl_removed)} "
                       f"removed, {len(self.acl_changed)} changed")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "conf_digest": None if self.conf_digest is None else {
                "saved": self.conf_digest[0], "fresh": self.conf_digest[1]},
            "scope": None if self.scope is None else {
                "saved": self.scope[0], "fresh": self.scope[1]},
            "added": [{"cluster": c["cluster"], "topic": c["topic"], "action": c["action"]}
                      for c in self.added],
            "removed": [{"cluster": c["cluster"], "topic": c["topic"], "action": c["action"]}
                        for c in self.removed],
            "changed": [{"cluster": k[0], "topic": k[1], "differences": list(d)}
                        for k, d in self.changed],
            # Only when ACL bindings differ (topic-only documents keep their shape).
            **({"acl_added": [dict(c) for c in self.acl_added],
                "acl_removed": [dict(c) for c in self.acl_removed],
                "acl_changed": [{"binding": label, "differences": list(d)}
                                for label, d in self.acl_changed]}
               if self.acl_added or self.acl_removed or self.acl_changed else {}),
        }


def diff_plans(saved: PlanDocument, fresh: PlanDocument) -> PlanDiff:
    """The differences between a saved and a fresh plan, topic by topic."""
    conf = None if saved.conf_digest == fresh.conf_digest else (
        saved.conf_digest, fresh.conf_digest)
    saved_scope = {"clusters": list(saved.clusters), "topics": saved.topics}
    fresh_scope = {"clusters": list(fresh.clusters), "topics": fresh.topics}
    scope = None if saved_scope == fresh_scope else (saved_scope, fresh_scope)
    old, new = saved.by_key(), fresh.by_key()
    added: list[dict[str, Any]] = []
    removed: list[dict[str, Any]] = []
    changed: list[tuple[Key, tuple[str, ...]]] = []
    for key in sorted(set(old) | set(new), key=lambda k: (k[0] or "", k[1] or "")):
        before, after = old.get(key, []), new.get(key, [])
        if before == after:
            continue
        if not before:
            added += after
        elif not after:
            removed += before
        elif len(before) == len(after) == 1:
            changed.append((key, tuple(field_differences(before[0], after[0]))))
        else:
            changed.append((key, (f"{len(before)} manifest row(s) saved, {len(after)} in the "
                                  "fresh plan",)))
    acl_old = {_acl_key(c): c for c in saved.acl_changes}
    acl_new = {_acl_key(c): c for c in fresh.acl_changes}
    acl_changed = tuple(
        (_acl_label(acl_new[k]), tuple(
            f"{name}: {_short(acl_old[k].get(name))} -> {_short(acl_new[k].get(name))}"
            for name in ACL_CHANGE_FIELDS if acl_old[k].get(name) != acl_new[k].get(name)))
        for k in sorted(set(acl_old) & set(acl_new)) if acl_old[k] != acl_new[k])
    return PlanDiff(conf, scope, tuple(added), tuple(removed), tuple(changed),
                    tuple(acl_new[k] for k in sorted(set(acl_new) - set(acl_old))),
                    tuple(acl_old[k] for k in sorted(set(acl_old) - set(acl_new))),
                    acl_changed)


def recorder(conf_digest: str, clusters: Sequence[str], topics: str | None
             ) -> tuple[Callable[[DataFrame], None], Callable[[DataFrame], None],
                        Callable[[], PlanDocument]]:
    """Plan hooks (topics, ACL bindings) that keep the run's canonical document, and a
    getter for it."""
    kept: list[PlanDocument] = []
    acls: list[list[dict[str, Any]]] = []

    def keep(plan: DataFrame) -> None:
        kept.append(collect_document(plan, conf_digest, clusters, topics))

    def keep_acls(acl_plan: DataFrame) -> None:
        acls.append(acl_changes(acl_plan))

    def document() -> PlanDocument:
        if not kept:
            raise RuntimeError("the plan hook was never called")
        doc = kept[-1]
        if acls:
            doc = PlanDocument.build(doc.conf_digest, doc.clusters, doc.topics, doc.changes,
                                     acls[-1])
        return doc

    return keep, keep_acls, document


def stale_check(saved: SavedPlan, conf_digest: str, clusters: Sequence[str],
                topics: str | None
                ) -> tuple[Callable[[DataFrame], None], Callable[[DataFrame], None]]:
    """Plan hooks (topics, then ACL bindings) that raise StalePlan unless the fresh plan
    equals `saved`; both run before anything changes Kafka. A run without ACL bindings
    never calls the second: a saved plan with ACL changes is then stale at the first."""
    def check(plan: DataFrame) -> None:
        fresh = collect_document(plan, conf_digest, clusters, topics)
        diff = diff_plans(saved.document, PlanDocument(
            fresh.conf_digest, fresh.clusters, fresh.topics, fresh.changes,
            saved.document.acl_changes))
        if not diff.empty:
            raise StalePlan(saved.path, diff)

    def check_acls(acl_plan: DataFrame) -> None:
        fresh = PlanDocument.build(saved.document.conf_digest, saved.document.clusters,
                                   saved.document.topics, saved.document.changes,
                                   acl_changes(acl_plan))
        diff = diff_plans(saved.document, fresh)
        if not diff.empty:
            raise StalePlan(saved.path, diff)

    return check, check_acls


def plan_meta(run_id: str, command: str, conf_source: str, counts: Mapping[str, int],
              exit_code: int, created_at: dt.datetime) -> dict[str, Any]:
    """The file's non-canonical part: which run wrote it, when, and what it found."""
    return {"run_id": run_id, "command": command, "conf": conf_source,
            "created_at": created_at.isoformat(), "counts": dict(sorted(counts.items())),
            "exit_code": exit_code}
