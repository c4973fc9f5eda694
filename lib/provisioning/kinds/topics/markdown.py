"""The topics' part of `plan --format markdown`: the plan as GitHub-flavoured Markdown, for
a pull-request comment (the way teams review `terraform plan` output).

A summary table (one row per cluster, a column per action, and the unmanaged topics),
the outcome counts, then one section per action: a table of its topics with what would
change and the verdict (the broker's validateOnly answer, a policy, an invalid row). A
plan longer than `max_topics` is cut with a count and a pointer to `report --run-id`.
The kinds that extend the topics' rows give their actions' headings and columns, and
their notes (`views.kind`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from provisioning import names as n
from provisioning.kinds.topics.results import TopicsSummary
from provisioning.kinds.topics.text import (
    Extensions,
    actions,
    drift_lines,
    pairs_text,
    sizing_text,
    status_text,
)
from provisioning.results import RunResult
from provisioning.views.plan_markdown import cell, code

# Rows a PR comment can hold comfortably (GitHub caps a comment at 65,536 characters).
MAX_TOPICS = 200
# Outcomes that mean done, under way, or still to look at; any other is unmarked.
_DONE = "✅"
_MARKS = {n.VALIDATED: _DONE, n.CREATED: _DONE, n.DELETED: _DONE, n.ALTERED: _DONE,
          n.PLANNED: "📝", n.DRIFTED: "⚠️", n.BLOCKED: "⛔", n.REJECTED: "❌", n.FAILED: "❌",
          n.UNKNOWN: "❓"}


def _mark(outcome: str, exts: Extensions) -> str:
    found = _MARKS.get(outcome)
    if found is not None:
        return found
    return next((ext.marks[outcome] for ext in exts if outcome in ext.marks), "")


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


def _verdict(t: Mapping[str, Any], exts: Extensions) -> str:
    lines = [status_text(t, exts)]
    if t["outcome"] == n.REJECTED and t["phase"] == n.PLAN:
        lines += [e for e in (t.get("error_message") or "").split("; ") if e]
    elif t.get("policy_violations"):
        lines += [f"{v['policy']}: {v['message']}" for v in t["policy_violations"]]
    elif t.get("error_message"):
        lines.append(t["error_message"])
    return "<br>".join(cell(line) for line in lines)


def _summary(summary: TopicsSummary, exts: Extensions) -> list[str]:
    per_cluster: dict[str, dict[str, int]] = defaultdict(dict)
    for a in summary.actions:
        per_cluster[a["cluster"] or "(no cluster)"][a["action"] or "NONE"] = int(a["topics"])
    for cluster in summary.unmanaged:
        per_cluster.setdefault(cluster, {})
    styles = actions(exts)
    invalid = any(set(c) - set(styles) for c in per_cluster.values())
    # An extending kind's column only when some cluster has rows of its action.
    shown = [a for a in styles
             if a in n.ACTIONS or any(a in c for c in per_cluster.values())]
    head = ["cluster", *(styles[a].column for a in shown), *(["invalid"] if invalid else []),
            "unmanaged"]
    lines = ["| " + " | ".join(head) + " |",
             "|---|" + "---:|" * (len(head) - 1)]
    for cluster, counts in sorted(per_cluster.items()):
        values = [str(counts.get(a, 0)) for a in shown]
        if invalid:
            values.append(str(sum(v for a, v in counts.items() if a not in styles)))
        values.append(str(summary.unmanaged.get(cluster, 0)))
        lines.append(f"| {code(cluster)} | " + " | ".join(values) + " |")
    return lines


def _section(action: str | None, topics: Sequence[Mapping[str, Any]], exts: Extensions
             ) -> list[str]:
    style = actions(exts).get(action or "")
    heading = style.heading if style else "Invalid rows (no action)"
    lines = [f"#### {heading} ({len(topics)})", "",
             "| | cluster | topic | changes | verdict |", "|---|---|---|---|---|"]
    for t in topics:
        changes = "<br>".join(cell(c) for c in _changes(t)) or "-"
        lines.append(f"| {_mark(t['outcome'], exts)} | {code(t.get('cluster') or '-')} | "
                     f"{code(t.get('topic') or '-')} | {changes} | {_verdict(t, exts)} |")
    return [*lines, ""]


def topics_markdown(result: RunResult, command: str, exts: Extensions = (),
                    max_topics: int = MAX_TOPICS) -> list[str]:
    """The plan (or apply) of the topics as Markdown lines (`exts`: the kinds that extend
    the topics' rows)."""
    summary = result.summary(TopicsSummary) or TopicsSummary()
    attention = sum(summary.counts.get(o, 0) for o in n.ATTENTION)
    lines = [f"### Topic {command} `{result.run_id}`", ""]
    if not summary.actions and not summary.unmanaged:
        lines += ["No topic in scope.", ""]
    else:
        lines += [*_summary(summary, exts), ""]
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(summary.counts.items()))
    lines.append(f"**Outcomes:** {outcomes or 'nothing to do'}"
                 + (f" · **{attention} topic(s) need attention**" if attention else ""))
    lines.append("")
    shown = summary.topics[:max_topics]
    by_action: dict[str | None, list[Mapping[str, Any]]] = defaultdict(list)
    for t in shown:
        by_action[t.get("action")].append(t)
    for action in [*actions(exts), None]:
        if by_action.get(action):
            lines += _section(action, by_action[action], exts)
    cut = summary.topics_not_listed + len(summary.topics) - len(shown)
    if cut:
        lines += [f"… and {cut} more topic(s): `report --run-id {result.run_id}` lists "
                  "every one.", ""]
    if summary.alters_not_allowed:
        lines += [f"{summary.alters_not_allowed} alter(s) are made only by "
                  "`apply --allow-alter`.", ""]
    for ext in exts:
        lines += ext.markdown_notes(result)
    if summary.deletes_not_allowed:
        lines += [f"{summary.deletes_not_allowed} deletion(s) are made only by "
                  "`apply --allow-deletes`.", ""]
    if any(summary.unmanaged.values()):
        lines += ["Unmanaged topics (live, named by no manifest row) are never changed: "
                  "`report --unmanaged` lists them.", ""]
    return lines
