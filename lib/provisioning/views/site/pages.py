"""The site's overview, findings and inventory pages: what each shows, for its template
(templates/overview.html, findings.html, inventory.html)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from provisioning.names import DISK_FORECAST, EMPTY_TOPIC, ERROR, IDLE_TOPIC, SEVERITIES, WARNING
from provisioning.views.site.charts import bar_data, line_data
from provisioning.views.site.data import LARGEST, SiteData
from provisioning.views.site.html import (
    Cell,
    Link,
    Mark,
    Table,
    count,
    missing,
    page,
    run_file,
    size,
    topic_file,
    when,
)


def _topic_link(up: str, cluster: str, topic: str | None) -> Cell:
    return "-" if topic is None else Link(up + topic_file(cluster, topic), topic)


def _cluster(data: SiteData, cluster: str, live: Counter[str],
             stored: Counter[str]) -> dict[str, Any]:
    last = next((r for r in data.runs if cluster in (r["clusters"] or [])), None)
    severities = Counter(f["severity"] for f in data.findings if f["cluster"] == cluster)
    open_findings: list[Cell] = []
    for s in SEVERITIES:
        open_findings += [*([", "] if open_findings else []), f"{severities[s]} ", Mark(s)]
    findings_per_day = {r["day"]: r["findings"] for r in data.findings_per_day
                        if r["cluster"] == cluster}
    bytes_per_day = {r["day"]: r["size_bytes"] for r in data.bytes_per_day
                     if r["cluster"] == cluster}
    return {
        "name": cluster,
        "table": Table(("live topics", "bytes (one copy)", "last run", "open findings"), [[
            count(live.get(cluster)),
            "-" if data.inventory is None else size(stored.get(cluster, 0)),
            "none" if last is None else
            [Link(run_file(last["run_id"]), last["command"]), " ", Mark(last["status"]), " ",
             when(last["started_at"])],
            open_findings]]),
        "findings": line_data(f"findings per day: {cluster}",
                              [(str(d), findings_per_day.get(d)) for d in data.days]),
        "bytes": line_data(f"bytes per day: {cluster}",
                           [(str(d), bytes_per_day.get(d)) for d in data.days],
                           label=lambda v: size(int(v))),
    }


def overview(data: SiteData) -> str:
    """index.html: per cluster, its topics and bytes, its last run, its open findings by
    severity, and its findings and bytes per day."""
    live = Counter(r["cluster"] for r in data.live)
    stored = Counter[str]()
    for r in data.inventory or []:
        stored[r["cluster"]] += r["size_bytes"] or 0
    return page("index.html", "overview.html", "Kafka topics: overview", data,
                ("runs", "snapshots", "violations", "inventory"),
                window=(f"{data.days[0]} to {data.days[-1]}" if data.days
                        else "no run recorded yet"),
                days=len(data.days), inventory_missing=missing(data.tables, "inventory"),
                clusters=[_cluster(data, c, live, stored) for c in data.clusters])


def findings(data: SiteData) -> str:
    """findings.html: the errors and warnings of each cluster's newest check run, and when
    each started."""
    started = {(s["cluster"], s["topic"], s["rule"]): s for s in data.spans
               if s.get("stopped_at") is None}
    shown = sorted((f for f in data.findings if f["severity"] in (ERROR, WARNING)),
                   key=lambda f: (SEVERITIES.index(f["severity"]), f["cluster"],
                                  f["topic"] or "", f["rule"], f["detail"] or ""))
    return page("findings.html", "findings.html", "Findings", data,
                ("runs", "violations"), violations_missing=missing(data.tables, "violations"),
                shown=len(shown), table=Table(
                    ("severity", "cluster", "topic", "rule", "since", "detail", "owner"), [
                        [Mark(f["severity"]), f["cluster"],
                         _topic_link("", f["cluster"], f["topic"]), f["rule"],
                         when(started[(f["cluster"], f["topic"], f["rule"])]["started_at"])
                         if (f["cluster"], f["topic"], f["rule"]) in started else "-",
                         f["detail"], f["owner"] or ("-" if f["managed"] else "unmanaged")]
                        for f in shown], css="findings"))


def _rows_of_rule(data: SiteData, rule: str) -> list[Mapping[str, Any]]:
    return sorted((f for f in data.findings if f["rule"] == rule),
                  key=lambda f: (f["cluster"], f["topic"] or "", f["detail"] or ""))


def inventory(data: SiteData) -> str:
    """inventory.html: the largest topics, the idle and empty ones, each broker's disk use
    against its capacity, and the disk forecast."""
    largest = sorted(data.inventory or [], key=lambda r: (-(r["size_bytes"] or 0),
                                                          r["cluster"], r["topic"]))
    return page(
        "inventory.html", "inventory.html", "Inventory", data,
        ("runs", "inventory", "disks", "violations"), largest_count=LARGEST,
        inventory_missing=missing(data.tables, "inventory"),
        largest=Table(("cluster", "topic", "size", "stored", "records", "last write",
                       "consumer groups"), [
            [r["cluster"], _topic_link("", r["cluster"], r["topic"]), size(r["size_bytes"]),
             size(r["stored_bytes"]), count(r["records"]), when(r["last_write_at"]),
             r["groups"]]
            for r in largest[:LARGEST]], numeric=(2, 3, 4, 6), css="largest"),
        rules=[(title, Table(("cluster", "topic", "detail"), [
            [f["cluster"], _topic_link("", f["cluster"], f["topic"]), f["detail"]]
            for f in _rows_of_rule(data, rule)]))
            for title, rule in (("Idle topics", IDLE_TOPIC), ("Empty topics", EMPTY_TOPIC))],
        disks_missing=missing(data.tables, "disks"), disks=_disks(data.disks or []),
        forecast=Table(("cluster", "severity", "detail"), [
            [f["cluster"], Mark(f["severity"]), f["detail"]]
            for f in _rows_of_rule(data, DISK_FORECAST)]))


def _disks(disks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per cluster: its brokers' disk use as a chart and a table."""
    clusters = []
    for cluster in sorted({d["cluster"] for d in disks}):
        of = [d for d in disks if d["cluster"] == cluster]
        clusters.append({"name": cluster, "chart": bar_data(f"disk use: {cluster}", [
            (f"broker {d['broker']} {d['log_dir']}", d["used_bytes"] or 0,
             d["total_bytes"] or 0) for d in of if not d.get("error")],
            label=lambda v: size(int(v))),
            "table": Table(("broker", "log dir", "used", "kafka", "usable", "total", "error"),
                           [[d["broker"], d["log_dir"], size(d["used_bytes"]),
                             size(d["kafka_bytes"]), size(d["usable_bytes"]),
                             size(d["total_bytes"]), d.get("error") or "-"] for d in of],
                           numeric=(2, 3, 4, 5))})
    return clusters
