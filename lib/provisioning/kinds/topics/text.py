"""The topics' part of the human-readable output of `plan` and `apply`, in the spirit of
`terraform plan`.

Per cluster the counts per action, then per topic (cluster by cluster, in name order) a
head line with the action and the final outcome and, under it, what the operator needs to
judge it: the request and what the broker said it would get (validateOnly, KIP-525
configs and their broker defaults), the drift, the policy violations, the invalid row's
errors, the error. The rows of the kinds that extend the topics' rows are topic rows:
their actions, status texts and detail lines come from those kinds (`views.kind`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from provisioning import names as n
from provisioning.kinds.topics.results import TopicsSummary
from provisioning.names import ATTENTION, BROKER_OVERRIDES, TOPIC_OVERRIDE
from provisioning.results import RunResult
from provisioning.views.kind import ActionStyle, ViewKind

NAME = "topics"
ACTIONS: Mapping[str, ActionStyle] = {
    n.CREATE: ActionStyle("+", "to create", "Create", "create"),
    n.DELETE: ActionStyle("-", "to delete", "Delete", "delete"),
    n.ALTER: ActionStyle("^", "to alter", "Alter", "alter"),
    n.DRIFT: ActionStyle("~", "drifted", "Drift (reported, never changed)", "drift"),
    n.NOOP: ActionStyle("=", "unchanged", "Unchanged", "unchanged"),
}
# The broker defaults shown for every validated or created topic; --verbose shows all.
# Any config that a broker-level setting overrides is shown too: it differs per cluster.
NOTABLE_DEFAULTS = ("cleanup.policy", "compression.type", "max.message.bytes",
                    "min.insync.replicas", "retention.bytes", "retention.ms")
INDENT = "      "


# The view parts of the kinds that extend the topics' rows (`views.kind.extensions_of`): each
# function that shows a topic row is given them.
Extensions = Sequence[ViewKind]


def actions(exts: Extensions = ()) -> dict[str, ActionStyle]:
    """Every action a topic row may have, in the order views list them: the topics' own
    changes, the extending kinds' (`exts`) actions, then drift and unchanged."""
    own = list(ACTIONS.items())
    added = [item for ext in exts for item in ext.actions.items()]
    return dict([*own[:3], *added, *own[3:]])


def pairs_text(mapping: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(mapping.items()))


def drift_lines(drift: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """One line per difference: "field: live -> desired"."""
    lines = []
    for d in drift or []:
        field = d["field"]
        name = f"config {field[len('config:'):]}" if field.startswith("config:") else field
        actual = "(not set)" if d["actual"] is None else d["actual"]
        desired = "(not set)" if d["desired"] is None else d["desired"]
        if d["supported"]:
            note = ""
        elif field.startswith("config:") and d["desired"] is None:
            note = " (left alone: not listed in the manifest row)"
        else:
            note = " (not supported: needs a new topic)"
        lines.append(f"{name}: {actual} -> {desired}{note}")
    return lines


def sizing_text(t: Mapping[str, Any]) -> str | None:
    """"partitions N, replication factor M", with where each came from."""
    assignment = t.get("requested_assignment")
    parts = []
    for label, result, requested in (
            ("partitions", t.get("result_partitions"), t.get("requested_partitions")),
            ("replication factor", t.get("result_replication_factor"),
             t.get("requested_replication_factor"))):
        if assignment:
            continue
        if result is not None:
            note = " (broker default)" if requested is None else ""
            parts.append(f"{label} {result}{note}")
        elif requested is not None:
            parts.append(f"{label} {requested}")
        else:
            parts.append(f"{label}: broker default")
    if assignment:
        replicas = "; ".join(f"{p}: {', '.join(str(b) for b in brokers or [])}"
                             for p, brokers in sorted(assignment.items(), key=lambda i: int(i[0])))
        parts.append(f"replica assignment {replicas}")
    return ", ".join(parts) if parts else None


def broker_defaults(configs: Sequence[Mapping[str, Any]] | None, verbose: bool) -> str | None:
    """The configs the topic gets from the broker rather than from its own request."""
    shown = []
    for c in sorted(configs or [], key=lambda c: c["name"]):
        if c["source"] == TOPIC_OVERRIDE:
            continue
        if not (verbose or c["name"] in NOTABLE_DEFAULTS or c["source"] in BROKER_OVERRIDES):
            continue
        value = "(sensitive)" if c.get("sensitive") or c["value"] is None else c["value"]
        where = f" [{c['source']}]" if c["source"] in BROKER_OVERRIDES else ""
        shown.append(f"{c['name']}={value}{where}")
    return ", ".join(shown) if shown else None


def status_text(t: Mapping[str, Any], exts: Extensions = ()) -> str:
    outcome, phase, action = t["outcome"], t["phase"], t["action"]
    if outcome == n.REJECTED and phase == n.PLAN:
        return "rejected: invalid manifest row"
    if outcome == n.REJECTED:
        by = "the broker's validateOnly pass" if phase == n.VALIDATE else "the broker"
        return f"rejected by {by}: {t.get('error_name')}"
    if outcome == n.BLOCKED:
        return "blocked by policy"
    for ext in exts:
        text = ext.status(t)
        if text is not None:
            return text
    if outcome == n.VALIDATED and action == n.ALTER:
        return "validated by the broker (validateOnly; made only by apply --allow-alter)"
    if outcome == n.VALIDATED:
        return "validated by the broker (validateOnly)"
    if outcome == n.PLANNED and action == n.DELETE:
        return "planned (made only by apply --allow-deletes)"
    if outcome == n.PLANNED:
        return "planned (not validated: --no-validate)"
    if outcome == n.DRIFTED:
        return "drift (reported, never changed by this job)"
    if outcome in (n.FAILED, n.UNKNOWN) and t.get("error_name"):
        return f"{outcome} in phase {phase}: {t['error_name']}"
    return str(outcome)


def topic_lines(t: Mapping[str, Any], verbose: bool = False, exts: Extensions = ()
                ) -> list[str]:
    """The head line of one topic and the detail lines under it (`exts`: the kinds that
    extend the topics' rows)."""
    action = t.get("action")
    style = actions(exts).get(action or "")
    sign = "!" if t["outcome"] in ATTENTION else (style.sign if style else "?")
    name = f"{t.get('cluster') or '(no cluster)'}/{t.get('topic') or '(no topic)'}"
    lines = [f"  {sign} {name}  {(action or 'no action').lower()}  {status_text(t, exts)}"]
    details: list[str] = []
    invalid = t["outcome"] == n.REJECTED and t["phase"] == n.PLAN
    judged_by_plan = t["outcome"] in (n.REJECTED, n.BLOCKED) and t["phase"] == n.PLAN
    if invalid:
        details += [f"row error: {e}" for e in (t.get("error_message") or "").split("; ") if e]
    for v in t.get("policy_violations") or []:
        details.append(f"policy {v['policy']}: {v['message']}")
    details += drift_lines(t.get("drift"))
    if action == n.CREATE and not invalid:
        sizing = sizing_text(t)
        if sizing:
            details.append(sizing)
        if t.get("requested_configs"):
            details.append(f"configs: {pairs_text(t['requested_configs'])}")
        defaults = broker_defaults(t.get("result_configs"), verbose)
        if defaults:
            details.append(f"broker defaults: {defaults}")
    if action == n.ALTER and t["outcome"] == n.ALTERED and t.get("result_configs"):
        after = {c["name"]: c["value"] for c in t["result_configs"]
                 if c["source"] == TOPIC_OVERRIDE}
        details.append(f"now: partitions {t.get('result_partitions')}, topic configs "
                       f"{pairs_text(after) or '(none)'}")
    for ext in exts:
        details += ext.details(t)
    shows_id = (action in (n.DELETE, n.DRIFT, n.ALTER)
                or t["outcome"] in (n.CREATED, n.DELETED))
    if shows_id and t.get("topic_id"):
        details.append(f"topic id {t['topic_id']}")
    if t.get("error_message") and not judged_by_plan:
        details.append(f"error: {t['error_message']}")
    return lines + [INDENT + d for d in details]


def action_counts(rows: Sequence[Mapping[str, Any]], exts: Extensions = ()) -> list[str]:
    """"cluster X: N to create, M to delete, ..." per cluster."""
    per_cluster: dict[str, dict[str, int]] = defaultdict(dict)
    for a in rows:
        per_cluster[a["cluster"] or "(no cluster)"][a["action"] or "NONE"] = int(a["topics"])
    styles = actions(exts)
    lines = []
    for cluster, counts in sorted(per_cluster.items()):
        order = [*styles, *sorted(set(counts) - set(styles))]
        text = ", ".join(f"{counts[a]} {styles[a].word if a in styles else 'without an action'}"
                         for a in order if a in counts)
        lines.append(f"cluster {cluster}: {text}")
    return lines


def topics_text(result: RunResult, verbose: bool, exts: Extensions = ()) -> list[str]:
    """The topics' lines of a run: counts per cluster, the listed topics, what is left
    alone or not made, the outcome counts."""
    summary = result.summary(TopicsSummary) or TopicsSummary()
    lines = action_counts(summary.actions, exts) or ["no topic in scope"]
    previous: object = object()
    for t in summary.topics:
        # A blank line before each cluster's topics; every topic line names its cluster.
        if t.get("cluster") != previous:
            lines.append("")
            previous = t.get("cluster")
        lines += topic_lines(t, verbose, exts)
    lines.append("")
    if summary.topics_not_listed:
        lines.append(f"... and {summary.topics_not_listed} more topic(s): "
                     f"report --run-id {result.run_id} lists every one")
    for cluster, count in sorted(summary.unmanaged.items()):
        if count:
            lines.append(f"cluster {cluster}: {count} unmanaged topic(s) (live, named by no "
                         "manifest row; never changed): report --unmanaged lists them")
    if summary.alters_not_allowed:
        lines.append(f"{summary.alters_not_allowed} alter(s) validated but not made: run "
                     "apply with --allow-alter")
    for ext in exts:
        lines += ext.notes(result)
    if summary.deletes_not_allowed:
        lines.append(f"{summary.deletes_not_allowed} deletion(s) not made: run apply with "
                     "--allow-deletes")
    counts = ", ".join(f"{k}={v}" for k, v in sorted(summary.counts.items()))
    lines.append(f"outcomes: {counts or 'nothing to do'}")
    return lines
