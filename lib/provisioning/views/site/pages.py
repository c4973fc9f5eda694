"""The site's overview, findings and inventory pages."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from provisioning.names import DISK_FORECAST, EMPTY_TOPIC, ERROR, IDLE_TOPIC, SEVERITIES, WARNING
from provisioning.views.site.charts import bar_chart, line_chart
from provisioning.views.site.data import LARGEST, SiteData
from provisioning.views.site.html import (
    count,
    esc,
    link,
    missing,
    page,
    run_file,
    size,
    table,
    tables_footer,
    topic_file,
    when,
)


def _severity(s: Any) -> str:
    return f'<span class="{esc(s)}">{esc(s)}</span>'


def _topic_link(up: str, cluster: str, topic: str | None) -> str:
    return "-" if topic is None else link(up + topic_file(cluster, topic), topic)


def overview(data: SiteData) -> str:
    """index.html: per cluster, its topics and bytes, its last run, its open findings by
    severity, and its findings and bytes per day."""
    window = (f"{data.days[0]} to {data.days[-1]}" if data.days else "no run recorded yet")
    body = [f"<p>Window: {esc(window)} ({len(data.days)} day(s), ending on the day of the "
            "newest run).</p>"]
    inventory_note = missing(data.tables, "inventory")
    live = Counter(r["cluster"] for r in data.live)
    stored = Counter[str]()
    for r in data.inventory or []:
        stored[r["cluster"]] += r["size_bytes"] or 0
    for cluster in data.clusters:
        body.append(f'<section class="cluster" data-cluster="{esc(cluster)}">'
                    f"<h2>Cluster {esc(cluster)}</h2>")
        last = next((r for r in data.runs if cluster in (r["clusters"] or [])), None)
        severities = Counter(f["severity"] for f in data.findings if f["cluster"] == cluster)
        body.append(table(("live topics", "bytes (one copy)", "last run", "open findings"), [[
            count(live.get(cluster)),
            "-" if data.inventory is None else esc(size(stored.get(cluster, 0))),
            "none" if last is None else
            f'{link(run_file(last["run_id"]), last["command"])} {_severity(last["status"])} '
            f'{esc(when(last["started_at"]))}',
            ", ".join(f"{severities[s]} {_severity(s)}" for s in SEVERITIES)]]))
        body.append("<h3>Findings per day</h3>")
        per_day = {r["day"]: r["findings"] for r in data.findings_per_day
                   if r["cluster"] == cluster}
        body.append(line_chart(f"findings per day: {cluster}",
                               [(str(d), per_day.get(d)) for d in data.days]))
        body.append("<h3>Bytes per day</h3>")
        if inventory_note:
            body.append(inventory_note)
        else:
            per_day = {r["day"]: r["size_bytes"] for r in data.bytes_per_day
                       if r["cluster"] == cluster}
            body.append(line_chart(f"bytes per day: {cluster}",
                                   [(str(d), per_day.get(d)) for d in data.days],
                                   label=lambda v: size(int(v))))
        body.append("</section>\n")
    return page("index.html", "Kafka topics: overview", "".join(body),
                tables_footer(data.tables, ("runs", "snapshots", "violations", "inventory")))


def findings(data: SiteData) -> str:
    """findings.html: the errors and warnings of each cluster's newest check run, and when
    each started."""
    started = {(s["cluster"], s["topic"], s["rule"]): s for s in data.spans
               if s.get("stopped_at") is None}
    shown = sorted((f for f in data.findings if f["severity"] in (ERROR, WARNING)),
                   key=lambda f: (SEVERITIES.index(f["severity"]), f["cluster"],
                                  f["topic"] or "", f["rule"], f["detail"] or ""))
    note = missing(data.tables, "violations") or ""
    body = [note, f"<p>{len(shown)} open error(s) and warning(s), as each cluster's newest "
                  "check run found them.</p>"]
    body.append(table(("severity", "cluster", "topic", "rule", "since", "detail", "owner"), (
        [_severity(f["severity"]), esc(f["cluster"]), _topic_link("", f["cluster"],
                                                                  f["topic"]),
         esc(f["rule"]),
         esc(when(started[(f["cluster"], f["topic"], f["rule"])]["started_at"]))
         if (f["cluster"], f["topic"], f["rule"]) in started else "-",
         esc(f["detail"]), esc(f["owner"] or ("-" if f["managed"] else "unmanaged"))]
        for f in shown), css="findings"))
    return page("findings.html", "Findings", "".join(body),
                tables_footer(data.tables, ("runs", "violations")))


def _rows_of_rule(data: SiteData, rule: str) -> list[Mapping[str, Any]]:
    return sorted((f for f in data.findings if f["rule"] == rule),
                  key=lambda f: (f["cluster"], f["topic"] or "", f["detail"] or ""))


def inventory(data: SiteData) -> str:
    """inventory.html: the largest topics, the idle and empty ones, each broker's disk use
    against its capacity, and the disk forecast."""
    body: list[str] = []
    note = missing(data.tables, "inventory")
    body.append(f"<h2>Largest topics (top {LARGEST})</h2>")
    if note:
        body.append(note)
    else:
        largest = sorted(data.inventory or [], key=lambda r: (-(r["size_bytes"] or 0),
                                                               r["cluster"], r["topic"]))
        body.append(table(("cluster", "topic", "size", "stored", "records", "last write",
                           "consumer groups"), (
            [esc(r["cluster"]), _topic_link("", r["cluster"], r["topic"]),
             esc(size(r["size_bytes"])), esc(size(r["stored_bytes"])),
             esc(count(r["records"])), esc(when(r["last_write_at"])), esc(r["groups"])]
            for r in largest[:LARGEST]), numeric=(2, 3, 4, 6), css="largest"))
    for title, rule in (("Idle topics", IDLE_TOPIC), ("Empty topics", EMPTY_TOPIC)):
        body.append(f"<h2>{title}</h2>")
        body.append(table(("cluster", "topic", "detail"), (
            [esc(f["cluster"]), _topic_link("", f["cluster"], f["topic"]), esc(f["detail"])]
            for f in _rows_of_rule(data, rule))))
    body.append("<h2>Disk use per broker</h2>")
    disks_note = missing(data.tables, "disks")
    if disks_note:
        body.append(disks_note)
    else:
        body.append(_disks(data.disks or []))
    body.append("<h2>Forecast</h2>")
    body.append(table(("cluster", "severity", "detail"), (
        [esc(f["cluster"]), _severity(f["severity"]), esc(f["detail"])]
        for f in _rows_of_rule(data, DISK_FORECAST))))
    return page("inventory.html", "Inventory", "".join(body),
                tables_footer(data.tables, ("runs", "inventory", "disks", "violations")))


def _disks(disks: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for cluster in sorted({d["cluster"] for d in disks}):
        of = [d for d in disks if d["cluster"] == cluster]
        parts.append(f"<h3>Cluster {esc(cluster)}</h3>")
        parts.append(bar_chart(f"disk use: {cluster}", [
            (f"broker {d['broker']} {d['log_dir']}", d["used_bytes"] or 0,
             d["total_bytes"] or 0) for d in of if not d.get("error")],
            label=lambda v: size(int(v))))
        parts.append(table(("broker", "log dir", "used", "kafka", "usable", "total", "error"),
                           ([esc(d["broker"]), esc(d["log_dir"]), esc(size(d["used_bytes"])),
                             esc(size(d["kafka_bytes"])), esc(size(d["usable_bytes"])),
                             esc(size(d["total_bytes"])), esc(d.get("error") or "-")]
                            for d in of), numeric=(2, 3, 4, 5)))
    return "".join(parts) or '<p class="muted">No disk was described.</p>'
