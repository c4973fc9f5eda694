"""Human-readable output of a run: counts per cluster and action, then one line per topic."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from provisioning.pipeline import RunResult

_SIGNS = {"CREATE": "+", "DELETE": "-", "DRIFT": "~", "NOOP": "="}


def _drift_text(drift: list[Mapping[str, Any]] | None) -> str:
    items = []
    for d in drift or []:
        note = "" if d["supported"] else " (not supported: needs a new topic)"
        items.append(f"{d['field']} {d['actual']} -> {d['desired']}{note}")
    return "; ".join(items)


def _result_text(t: Mapping[str, Any]) -> str:
    parts = []
    if t.get("result_partitions") is not None:
        parts.append(f"partitions={t['result_partitions']}")
    if t.get("result_replication_factor") is not None:
        parts.append(f"rf={t['result_replication_factor']}")
    defaults = [f"{c['name']}={c['value']}" for c in t.get("result_configs") or []
                if c["source"] != "DYNAMIC_TOPIC_CONFIG" and c["value"] is not None
                and c["name"] in ("cleanup.policy", "retention.ms", "min.insync.replicas")]
    if defaults:
        parts.append("broker defaults: " + ", ".join(defaults))
    return " ".join(parts)


def render_run(result: RunResult, command: str) -> list[str]:
    """The lines an operator reads after `plan` or `apply`."""
    lines = [f"{command} {result.run_id}"]
    per_cluster: dict[str, dict[str, int]] = defaultdict(dict)
    for a in result.actions:
        per_cluster[a["cluster"] or "(no cluster)"][a["action"] or "?"] = a["topics"]
    for cluster, actions in sorted(per_cluster.items()):
        counts = ", ".join(f"{n} {action.lower()}" for action, n in sorted(actions.items()))
        lines.append(f"cluster {cluster}: {counts}")
    for t in result.topics:
        sign = _SIGNS.get(t["action"] or "", "?")
        head = f"  {sign} {t['cluster'] or '(no cluster)'}/{t['topic'] or '(no topic)'}"
        detail = t["outcome"]
        if t["outcome"] == "drift":
            detail += ": " + _drift_text(t.get("drift"))
        elif t.get("error_message"):
            detail += f": {t['error_message']}"
        elif t["outcome"] in ("validated", "created"):
            detail += f" {_result_text(t)}".rstrip()
        lines.append(f"{head}  {detail}  [{t['phase']}]")
    if result.topics_not_listed:
        lines.append(f"  ... and {result.topics_not_listed} more (see the audit table)")
    if result.deletes_not_allowed:
        lines.append(f"{result.deletes_not_allowed} deletion(s) not made: run apply with "
                     "--allow-deletes")
    summary = ", ".join(f"{k}={v}" for k, v in sorted(result.counts.items()))
    lines.append(f"outcomes: {summary or 'nothing to do'}")
    return lines
