"""The replica moves' part of the views package (`views.kind`): their rows are topic rows, so
they show in the topics' listing with their own action, status texts, detail lines (each
partition's replicas before -> after) and notes; their field of a saved topic change
(`reassignment`); and `report --reassignments` (read live by the CLI, shaped and rendered
here)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from provisioning import names as n
from provisioning.kinds.reassign import names as move_names
from provisioning.kinds.reassign.results import ReassignSummary
from provisioning.results import RunResult
from provisioning.transforms.scope import glob_to_regex
from provisioning.views.kind import ActionStyle, Need, ViewKind
from provisioning.views.text_table import table_lines


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
                and m["outcome"] not in (move_names.REASSIGNED, move_names.REASSIGNING) else ""
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
        lines += table_lines(cells)
    return lines




class ReassignView(ViewKind):
    name = "reassign"
    title = "replica moves"
    extends = "topics"
    actions: ClassVar[Mapping[str, ActionStyle]] = {
        move_names.REASSIGN: ActionStyle(">", "to reassign", "Reassign (replica moves)",
                                         "reassign")}
    marks: ClassVar[Mapping[str, str]] = {move_names.REASSIGNED: "✅",
                                          move_names.REASSIGNING: "⏳"}
    entry_fields = ("reassignment",)

    def status(self, row: Mapping[str, Any]) -> str | None:
        if row["outcome"] == n.VALIDATED and row["action"] == move_names.REASSIGN:
            return "checked (made only by apply --allow-reassign)"
        if row["outcome"] == move_names.REASSIGNING:
            return "reassigning (still moving: a later apply --allow-reassign finishes it)"
        return None

    def details(self, row: Mapping[str, Any]) -> list[str]:
        return move_lines(row)

    def notes(self, result: RunResult) -> list[str]:
        summary = result.summary(ReassignSummary)
        if summary is None or not summary.reassigns_not_allowed:
            return []
        return [f"{summary.reassigns_not_allowed} topic(s)' replica moves checked but not "
                "made: run apply with --allow-reassign (an ALTER's moves start once its "
                "alter is made: --allow-alter)"]

    def markdown_notes(self, result: RunResult) -> list[str]:
        summary = result.summary(ReassignSummary)
        if summary is None or not summary.reassigns_not_allowed:
            return []
        return [f"{summary.reassigns_not_allowed} topic(s)' replica moves are made only by "
                "`apply --allow-reassign`.", ""]

    def json(self, summary: Any) -> dict[str, Any]:
        return (summary or ReassignSummary()).as_json()

    def needs(self, entry: Mapping[str, Any]) -> list[Need]:
        # A move is made only with --allow-reassign; an ALTER's moves start once its alter
        # is made, which needs --allow-alter too.
        if not entry.get("reassignment") or entry.get("violations") or entry.get("row_errors"):
            return []
        after = (n.allow_option(n.ALLOW_ALTER),) if entry.get("action") == n.ALTER else ()
        return [Need(self.name, move_names.REASSIGN,
                     (*after, n.allow_option(move_names.ALLOW)))]

    def entry(self, row: Mapping[str, Any]) -> dict[str, Any]:
        # Left out of a change without moves (such a change reads, and digests, as it did
        # before moves existed).
        moves = row.get("reassignment")
        if moves is None:
            return {}
        return {"reassignment": [
            {"partition": m["partition"], "before": list(m["before"] or []),
             "after": list(m["after"] or []), "in_flight": bool(m["in_flight"])}
            for m in moves]}


VIEW = ReassignView()
