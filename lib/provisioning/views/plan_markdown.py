"""`plan --format markdown`: the plan as GitHub-flavoured Markdown, for a pull-request
comment (the way teams review `terraform plan` output).

A summary table (one row per cluster, a column per action, and the unmanaged topics),
the outcome counts, then one section per action: a table of its topics with what would
change and the verdict (the broker's validateOnly answer, a policy, an invalid row). A
plan longer than `max_topics` is cut with a count and a pointer to `report --run-id`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from provisioning import names as n
from provisioning.results import RunResult
from provisioning.views.plan_text import drift_lines, pairs_text, sizing_text, status_text

# Rows a PR comment can hold comfortably (GitHub caps a comment at 65,536 characters).
MAX_TOPICS = 200
_HEADINGS = {n.CREATE: "Create", n.DELETE: "Delete", n.ALTER: "Alter",
             n.REASSIGN: "Reassign (replica moves)", n.DRIFT: "Drift (reported, never changed)",
             n.NOOP: "Unchanged"}
_COLUMNS = {n.CREATE: "create", n.DELETE: "delete", n.ALTER: "alter",
            n.REASSIGN: "reassign", n.DRIFT: "drift",
            n.NOOP: "unchanged"}
_MARKS = {n.VALIDATED: "✅", n.CREATED: "✅", n.DELETED: "✅", n.ALTERED: "✅",
          n.REASSIGNED: "✅", n.REASSIGNING: "⏳", n.PLANNED: "📝",
          n.DRIFTED: "⚠️", n.BLOCKED: "⛔", n.REJECTED: "❌", n.FAILED: "❌", n.UNKNOWN: "❓"}


def cell(text: object) -> str:
    """`text` safe inside a table cell: pipes escaped, line breaks as <br>."""
    return (str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", "")
            .replace("\n", "<br>"))


def code(text: object) -> str:
    """`text` as inline code in a table cell (names may hold `_` or `*`)."""
    value = str(text)
    if "`" in value:
        return cell(value)
    return f"`{cell(value)}`"


def _changes(t: Mapping[str, Any]) -> list[str]:
    action = t.get("action")
    invalid = t["outcome"] == n.REJECTED and t["phase"] == n.PLAN
    if invalid:
        return []
    if action == n.CREATE:
        parts = [sizing_text(t) or ""]
        if t.get("requested_configs"):
            parts.append(f"configs: {pairs_text(t['requested_configs'])}")
        return [p for p in parts if p]
    if action == n.DELETE:
        return [f"topic id {t['topic_id']}"] if t.get("topic_id") else []
    return drift_lines(t.get("drift"))


def _verdict(t: Mapping[str, Any]) -> str:
    lines = [status_text(t)]
    if t["outcome"] == n.REJECTED and t["phase"] == n.PLAN:
        lines += [e for e in (t.get("error_message") or "").split("; ") if e]
    elif t.get("policy_violations"):
        lines += [f"{v['policy']}: {v['message']}" for v in t["policy_violations"]]
    elif t.get("error_message"):
        lines.append(t["error_message"])
    return "<br>".join(cell(line) for line in lines)


def _summary(result: RunResult) -> list[str]:
    per_cluster: dict[str, dict[str, int]] = defaultdict(dict)
    for a in result.actions:
        per_cluster[a["cluster"] or "(no cluster)"][a["action"] or "NONE"] = int(a["topics"])
    for cluster in result.unmanaged:
        per_cluster.setdefault(cluster, {})
    invalid = any(set(c) - set(n.ACTIONS) for c in per_cluster.values())
    # The reassign column only when some cluster has replica moves.
    shown = [a for a in _COLUMNS
             if a != n.REASSIGN or any(n.REASSIGN in c for c in per_cluster.values())]
    head = ["cluster", *(_COLUMNS[a] for a in shown), *(["invalid"] if invalid else []),
            "unmanaged"]
    lines = ["| " + " | ".join(head) + " |",
             "|---|" + "---:|" * (len(head) - 1)]
    for cluster, counts in sorted(per_cluster.items()):
        values = [str(counts.get(a, 0)) for a in shown]
        if invalid:
            values.append(str(sum(v for a, v in counts.items() if a not in n.ACTIONS)))
        values.append(str(result.unmanaged.get(cluster, 0)))
        lines.append(f"| {code(cluster)} | " + " | ".join(values) + " |")
    return lines


def _section(action: str | None, topics: Sequence[Mapping[str, Any]]) -> list[str]:
    heading = _HEADINGS.get(action or "", "Invalid rows (no action)")
    lines = [f"#### {heading} ({len(topics)})", "",
             "| | cluster | topic | changes | verdict |", "|---|---|---|---|---|"]
    for t in topics:
        changes = "<br>".join(cell(c) for c in _changes(t)) or "-"
        lines.append(f"| {_MARKS.get(t['outcome'], '')} | {code(t.get('cluster') or '-')} | "
                     f"{code(t.get('topic') or '-')} | {changes} | {_verdict(t)} |")
    return [*lines, ""]


def render_markdown(result: RunResult, command: str, max_topics: int = MAX_TOPICS
                    ) -> list[str]:
    """The plan (or apply) as Markdown lines."""
    attention = sum(result.counts.get(o, 0) for o in n.ATTENTION)
    lines = [f"### Topic {command} `{result.run_id}`", ""]
    if not result.actions and not result.unmanaged:
        lines += ["No topic in scope.", ""]
    else:
        lines += [*_summary(result), ""]
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items()))
    lines.append(f"**Outcomes:** {outcomes or 'nothing to do'}"
                 + (f" · **{attention} topic(s) need attention**" if attention else ""))
    lines.append("")
    shown = result.topics[:max_topics]
    by_action: dict[str | None, list[Mapping[str, Any]]] = defaultdict(list)
    for t in shown:
        by_action[t.get("action")].append(t)
    for action in [*n.ACTIONS, None]:
        if by_action.get(action):
            lines += _section(action, by_action[action])
    cut = result.topics_not_listed + len(result.topics) - len(shown)
    if cut:
        lines += [f"… and {cut} more topic(s): `report --run-id {result.run_id}` lists "
                  "every one.", ""]
    if result.alters_not_allowed:
        lines += [f"{result.alters_not_allowed} alter(s) are made only by "
                  "`apply --allow-alter`.", ""]
    if result.reassigns_not_allowed:
        lines += [f"{result.reassigns_not_allowed} topic(s)' replica moves are made only by "
                  "`apply --allow-reassign`.", ""]
    if result.deletes_not_allowed:
        lines += [f"{result.deletes_not_allowed} deletion(s) are made only by "
                  "`apply --allow-deletes`.", ""]
    if any(result.unmanaged.values()):
        lines += ["Unmanaged topics (live, named by no manifest row) are never changed: "
                  "`report --unmanaged` lists them.", ""]
    while lines and not lines[-1]:
        lines.pop()
    return lines
