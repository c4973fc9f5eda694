"""Human-readable output of `plan` and `apply`, in the spirit of `terraform plan`.

Per cluster the counts per action, then per topic (cluster by cluster, in
name order) a head line with the action and the final outcome and, under
it, what the operator needs to judge it: the request and what the broker
said it would get (validateOnly, KIP-525 configs and their broker defaults),
the drift, the policy violations, the invalid row's errors, the error.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from provisioning import names as n
from provisioning.names import ATTENTION, BROKER_OVERRIDES, TOPIC_OVERRIDE
from provisioning.results import RunResult

_SIGNS = {n.CREATE: "+", n.DELETE: "-", n.ALTER: "^", n.REASSIGN: ">", n.DRIFT: "~",
          n.NOOP: "="}
_ACTION_WORDS = {n.CREATE: "to create", n.DELETE: "to delete", n.ALTER: "to alter",
                 n.REASSIGN: "to reassign", n.DRIFT: "drifted", n.NOOP: "unchanged"}
# The broker defaults shown for every validated or created topic; --verbose shows all.
# Any config that a broker-level setting overrides is shown too: it differs per cluster.
NOTABLE_DEFAULTS = ("cleanup.policy", "compression.type", "max.message.bytes",
                    "min.insync.replicas", "retention.bytes", "retention.ms")
INDENT = "      "


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


def status_text(t: Mapping[str, Any]) -> str:
    outcome, phase, action = t["outcome"], t["phase"], t["action"]
    if outcome == n.REJECTED and phase == n.PLAN:
        return "rejected: invalid manifest row"
    if outcome == n.REJECTED:
        by = "the broker's validateOnly pass" if phase == n.VALIDATE else "the broker"
        return f"rejected by {by}: {t.get('error_name')}"
    if outcome == n.BLOCKED:
        return "blocked by policy"
    if outcome == n.VALIDATED and action == n.REASSIGN:
        return "checked (made only by apply --allow-reassign)"
    if outcome == n.REASSIGNING:
        return "reassigning (still moving: a later apply --allow-reassign finishes it)"
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


def _replicas(values: Sequence[int] | None) -> str:
    return "[" + ", ".join(str(v) for v in values or []) + "]"


def move_lines(t: Mapping[str, Any]) -> list[str]:
    """One line per moved partition, `partition P: [before] -> [after]`, with what became of
    it (a result row) or that it is under way since an earlier run (a plan row); the
    throttle used."""
    results = t.get("result_reassignment")
    lines = []
    if results:
        for m in results:
            why = f" ({m['error_name']}: {m['error_message']})" if m.get("error_message") \
                and m["outcome"] not in (n.REASSIGNED, n.REASSIGNING) else ""
            lines.append(f"partition {m['partition']}: {_replicas(m['before'])} -> "
                         f"{_replicas(m['after'])} {m['outcome']}{why}")
    else:
        for m in t.get("reassignment") or []:
            flight = " (in flight since an earlier run)" if m.get("in_flight") else ""
            lines.append(f"partition {m['partition']}: {_replicas(m['before'])} -> "
                         f"{_replicas(m['after'])}{flight}")
    if t.get("throttle_rate"):
        lines.append(f"throttle: {t['throttle_rate']} bytes/s per broker")
    return lines


def topic_lines(t: Mapping[str, Any], verbose: bool = False) -> list[str]:
    """The head line of one topic and the detail lines under it."""
    action = t.get("action")
    sign = "!" if t["outcome"] in ATTENTION else _SIGNS.get(action or "", "?")
    name = f"{t.get('cluster') or '(no cluster)'}/{t.get('topic') or '(no topic)'}"
    lines = [f"  {sign} {name}  {(action or 'no action').lower()}  {status_text(t)}"]
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
    details += move_lines(t)
    shows_id = (action in (n.DELETE, n.DRIFT, n.ALTER)
                or t["outcome"] in (n.CREATED, n.DELETED))
    if shows_id and t.get("topic_id"):
        details.append(f"topic id {t['topic_id']}")
    if t.get("error_message") and not judged_by_plan:
        details.append(f"error: {t['error_message']}")
    return lines + [INDENT + d for d in details]


def action_counts(actions: Sequence[Mapping[str, Any]]) -> list[str]:
    """"cluster X: N to create, M to delete, ..." per cluster."""
    per_cluster: dict[str, dict[str, int]] = defaultdict(dict)
    for a in actions:
        per_cluster[a["cluster"] or "(no cluster)"][a["action"] or "NONE"] = int(a["topics"])
    lines = []
    for cluster, counts in sorted(per_cluster.items()):
        order = [*n.ACTIONS, *sorted(set(counts) - set(n.ACTIONS))]
        text = ", ".join(f"{counts[a]} {_ACTION_WORDS.get(a, 'without an action')}"
                         for a in order if a in counts)
        lines.append(f"cluster {cluster}: {text}")
    return lines


def render_run(result: RunResult, command: str, verbose: bool = False,
               saved_plan: tuple[str, str] | None = None) -> list[str]:
    """The lines an operator reads after `plan` or `apply`.

    saved_plan: (path, digest) when `plan --out` saved the plan.
    """
    lines = [f"{command} {result.run_id}", ""]
    lines += action_counts(result.actions) or ["no topic in scope"]
    previous: object = object()
    for t in result.topics:
        # A blank line before each cluster's topics; every topic line names its cluster.
        if t.get("cluster") != previous:
            lines.append("")
            previous = t.get("cluster")
        lines += topic_lines(t, verbose)
    lines.append("")
    if result.topics_not_listed:
        lines.append(f"... and {result.topics_not_listed} more topic(s): "
                     f"report --run-id {result.run_id} lists every one")
    for cluster, count in sorted(result.unmanaged.items()):
        if count:
            lines.append(f"cluster {cluster}: {count} unmanaged topic(s) (live, named by no "
                         "manifest row; never changed): report --unmanaged lists them")
    if result.alters_not_allowed:
        lines.append(f"{result.alters_not_allowed} alter(s) validated but not made: run "
                     "apply with --allow-alter")
    if result.reassigns_not_allowed:
        lines.append(f"{result.reassigns_not_allowed} topic(s)' replica moves checked but not "
                     "made: run apply with --allow-reassign (an ALTER's moves start once its "
                     "alter is made: --allow-alter)")
    if result.deletes_not_allowed:
        lines.append(f"{result.deletes_not_allowed} deletion(s) not made: run apply with "
                     "--allow-deletes")
    summary = ", ".join(f"{k}={v}" for k, v in sorted(result.counts.items()))
    lines.append(f"outcomes: {summary or 'nothing to do'}")
    if result.acls is not None:
        lines += acl_lines(result.acls, result.run_id)
    if saved_plan is not None:
        path, digest = saved_plan
        lines.append(f"plan saved to {path} (digest {digest[:12]}); apply exactly this plan "
                     f"with: apply --plan {path}")
    return lines


_ACL_SIGNS = {"GRANT": "+", "REVOKE": "-", "NOOP": "="}


def binding_line(b: Mapping[str, Any]) -> str:
    """One binding of a run, as the plan shows it: "+ cluster ALLOW User:orders-app READ
    TOPIC orders (LITERAL) host *  granted", then why, when it did not simply happen."""
    sign = _ACL_SIGNS.get(b.get("action") or "", "?")
    line = f"{sign} {b.get('cluster')} {b.get('binding')}  {b.get('outcome')}"
    why = b.get("error_message") or (None if b.get("error_name") in (None, "NONE")
                                     else b.get("error_name"))
    if b.get("outcome") == n.VALIDATED and b.get("action") == n.REVOKE:
        why = why or "made only by apply --allow-revokes"
    if why:
        line += f": {why}"
    if b.get("note"):
        line += f" ({b['note']})"
    return line


def acl_lines(acls: Mapping[str, Any], run_id: str) -> list[str]:
    """The ACL part of a run's output: bindings per cluster and action, the bindings that
    did not simply stay as they were, and what is left alone."""
    lines = ["", "ACL bindings"]
    per = [f"  {a['cluster']}: {a['action']} {a['bindings']}" for a in acls.get("actions", [])]
    lines += per or ["  no ACL binding in scope"]
    lines += [f"  {binding_line(b)}" for b in acls.get("bindings", [])]
    if acls.get("bindings_not_listed"):
        lines.append(f"  ... and {acls['bindings_not_listed']} more binding(s): report "
                     f"--run-id {run_id} lists every one")
    for cluster, why in sorted((acls.get("clusters_not_changeable") or {}).items()):
        lines.append(f"  cluster {cluster}: ACLs not changed ({why['error_name']}): "
                     f"{why['error_message']}")
    for cluster, count in sorted((acls.get("unmanaged") or {}).items()):
        if count:
            lines.append(f"  cluster {cluster}: {count} unmanaged binding(s) (named by no ACL "
                         "manifest row; left alone): report --unmanaged-acls lists them")
    for cluster, count in sorted((acls.get("orphaned") or {}).items()):
        if count:
            lines.append(f"  cluster {cluster}: {count} orphaned binding(s) (LITERAL TOPIC, "
                         "naming no live topic): report --orphaned-acls lists them")
    if acls.get("revokes_not_allowed"):
        lines.append(f"  {acls['revokes_not_allowed']} revoke(s) not made: run apply with "
                     "--allow-revokes")
    summary = ", ".join(f"{k}={v}" for k, v in sorted(acls.get("counts", {}).items()))
    lines.append(f"  ACL outcomes: {summary or 'nothing to do'}")
    return lines
