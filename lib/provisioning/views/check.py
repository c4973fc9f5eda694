"""`check`'s views: the lines a person reads, a GitHub-flavoured Markdown table for a pull
request or a ticket, and the trend `report --violations` shows.

Pure functions over plain values: VIOLATIONS rows as dicts, and the rows of
`transforms.trend` (`violations_per_day`, `violation_spans`) as dicts.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from provisioning.names import ERROR, INFO, SEVERITIES, WARNING
from provisioning.views.plan_markdown import cell, code
from provisioning.views.text_table import table_lines

# Rows a PR comment holds comfortably (GitHub caps a comment at 65,536 characters).
MAX_ROWS = 200
_MARKS = {ERROR: "❌", WARNING: "⚠️", INFO: "ℹ️"}  # noqa: RUF001 (an emoji)

Row = Mapping[str, Any]


def _rank(severity: str | None) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def in_order(rows: Sequence[Row]) -> list[Row]:
    """Worst first: by severity (error, warning, info), then cluster, topic and rule."""
    return sorted(rows, key=lambda r: (_rank(r["severity"]), r["cluster"] or "",
                                       r["topic"] or "", r["rule"] or ""))


def _severity_counts(rows: Sequence[Row]) -> str:
    counts = Counter(r["severity"] for r in rows)
    return ", ".join(f"{counts[s]} {s}" for s in SEVERITIES)


def _whose(row: Row) -> str:
    if not row.get("managed"):
        return "unmanaged"
    return f"owner {row['owner']}" if row.get("owner") else "managed, no owner"


def subject(row: Row) -> str:
    """What a row judges: "cluster/topic", or "cluster (brokers)" for a rule that judges the
    cluster's brokers (the disk rules)."""
    if row.get("topic") is None:
        return f"{row['cluster']} (brokers)"
    return f"{row['cluster']}/{row['topic']}"


def _clusters(rows: Sequence[Row], clusters: Sequence[str]) -> list[str]:
    return sorted({*clusters, *(r["cluster"] for r in rows)})


def render_check(rows: Sequence[Row], clusters: Sequence[str] = ()) -> list[str]:
    """Lines for a person: the totals, the counts per cluster and rule (worst first), then
    every error row.

    clusters: the clusters the check judged (one with no violation is named too).
    """
    if not rows:
        judged = ", ".join(_clusters(rows, clusters))
        return [f"check: no violation{f' ({judged})' if judged else ''}"]
    lines = [f"check: {len(rows)} violation(s): {_severity_counts(rows)}"]
    per_cluster: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        per_cluster[r["cluster"]].append(r)
    for cluster in _clusters(rows, clusters):
        found = per_cluster.get(cluster, [])
        if not found:
            lines.append(f"cluster {cluster}: no violation")
            continue
        lines.append(f"cluster {cluster}: {len(found)} violation(s)")
        counts = Counter((r["severity"], r["rule"]) for r in found)
        lines += table_lines([[severity, rule, str(n)] for (severity, rule), n in sorted(
            counts.items(), key=lambda i: (_rank(i[0][0]), i[0][1]))])
    errors = [r for r in in_order(rows) if r["severity"] == ERROR]
    lines.append(f"errors ({len(errors)}):" if errors else "errors: none")
    for r in errors:
        lines.append(f"  {subject(r)}  {r['rule']} ({_whose(r)}): {r['detail']}")
    return lines


def check_markdown(rows: Sequence[Row], clusters: Sequence[str] = (),
                   max_rows: int = MAX_ROWS) -> list[str]:
    """The check as Markdown lines: a summary table per cluster, then one table row per
    violation, worst first, cut after `max_rows` with a count."""
    lines = ["### Kafka topic check", ""]
    if not rows:
        judged = ", ".join(code(c) for c in _clusters(rows, clusters))
        return [*lines, f"No violation{f' on {judged}' if judged else ''}."]
    lines += ["| cluster | " + " | ".join(SEVERITIES) + " |",
              "|---|" + "---:|" * len(SEVERITIES)]
    for cluster in _clusters(rows, clusters):
        counts = Counter(r["severity"] for r in rows if r["cluster"] == cluster)
        lines.append(f"| {code(cluster)} | " + " | ".join(str(counts[s]) for s in SEVERITIES)
                     + " |")
    lines += ["", "| | severity | cluster | topic | rule | owner | detail |",
              "|---|---|---|---|---|---|---|"]
    ordered = in_order(rows)
    for r in ordered[:max_rows]:
        owner = code(r["owner"]) if r.get("managed") and r.get("owner") else cell(_whose(r))
        lines.append(f"| {_MARKS.get(r['severity'], '')} | {r['severity']} | "
                     f"{code(r['cluster'])} | {code(r['topic'] or '(brokers)')} | "
                     f"{code(r['rule'])} | "
                     f"{owner} | {cell(r['detail'])} |")
    if len(ordered) > max_rows:
        lines += ["", f"… and {len(ordered) - max_rows} more violation(s) (fewer severe "
                  "first): `check --json` or the violations table lists every one."]
    return lines


def _time(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)


def render_trend(days: Sequence[Row], spans: Sequence[Row]) -> list[str]:
    """Lines for `report --violations`: per cluster, a table of violations per rule per day
    (each day's last check run), then when each topic started and stopped breaking a rule
    (newest first)."""
    lines = ["violations per rule per day (each day's last check run)"]
    if not days:
        lines.append("  no check run recorded")
    per_cluster: dict[str, list[Row]] = defaultdict(list)
    for d in days:
        per_cluster[d["cluster"]].append(d)
    for cluster in sorted(per_cluster):
        found = per_cluster[cluster]
        rules = sorted({d["rule"] for d in found if d["rule"] is not None})
        lines.append(f"cluster {cluster}")
        if not rules:
            lines.append("  no violation in any counted run")
            continue
        counts = {(d["day"], d["rule"]): d["violations"] for d in found}
        lines += table_lines(
            [["day", *rules], *([str(day), *(str(counts.get((day, rule), 0)) for rule in rules)]
                                for day in sorted({d["day"] for d in found}))],
            align=("left", *("right" for _ in rules)))
    lines.append("when topics started and stopped breaking a rule (newest first)")
    if not spans:
        lines.append("  none")
    for s in sorted(spans, key=lambda s: (s["started_at"], s["cluster"], s["topic"] or "",
                                          s["rule"]), reverse=True):
        start = f"{_time(s['started_at'])} (run {s['started_run_id']})"
        if s.get("stopped_at") is None:
            when = f"since {start}, still broken"
        else:
            when = f"{start} until {_time(s['stopped_at'])} (run {s['stopped_run_id']})"
        lines.append(f"  {subject(s)}  {s['rule']} ({s['severity']}): {when}, "
                     f"{s['runs']} run(s)")
        lines.append(f"      {s['detail']}")
    return lines
