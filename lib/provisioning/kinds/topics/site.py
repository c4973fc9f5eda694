"""The topics' pages of the static site (`report --site`, `views.site`): the searchable
list (its index a `.js` file that assigns a global, loaded with `<script src>`, since a page
opened from the file system may not fetch() a local file), and one page per topic: its
manifest row, its changes, its findings, its size and records over time. Their markup (and
the search's script) is the site's templates topics.html and topic.html."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from provisioning.views.report import phase_chains
from provisioning.views.site.charts import line_data
from provisioning.views.site.data import SiteData
from provisioning.views.site.html import (
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
from provisioning.views.site.runs import row_order
from schemas import MANIFEST, column_names

ROLES = ("runs", "audit", "snapshots", "violations", "inventory", "manifests")
# Matches the list shows at once (the index holds every topic).
SHOWN = 200


def topic_keys(data: SiteData) -> list[tuple[str, str]]:
    """Every (cluster, topic) the site has a page for: live, in a manifest, or in the
    inventory."""
    keys = {(r["cluster"], r["topic"]) for r in data.live}
    keys |= {(r["cluster"], r["topic"]) for r in data.manifests if r.get("topic")}
    keys |= {(r["cluster"], r["topic"]) for r in data.inventory or []}
    return sorted(k for k in keys if k[0] is not None and k[1] is not None)


def index_js(data: SiteData) -> str:
    """topics/index.js: [cluster, topic, page, size, partitions, open findings] per topic."""
    inventory = {(r["cluster"], r["topic"]): r for r in data.inventory or []}
    live = {(r["cluster"], r["topic"]): r for r in data.live}
    findings: dict[tuple[str, str], int] = {}
    for f in data.findings:
        findings[(f["cluster"], f["topic"])] = findings.get((f["cluster"], f["topic"]), 0) + 1
    entries = []
    for key in topic_keys(data):
        inv, snap = inventory.get(key), live.get(key)
        partitions = (inv or snap or {}).get("partitions")
        entries.append([key[0], key[1], topic_file(*key).removeprefix("topics/"),
                        size(inv["size_bytes"]) if inv else "-",
                        "-" if partitions is None else str(partitions),
                        str(findings.get(key, 0))])
    return ("window.SITE_TOPICS = "
            + json.dumps(entries, separators=(",", ":"), ensure_ascii=True)
            .replace("],[", "],\n[") + ";\n")


def topics_index(data: SiteData) -> str:
    return page("topics/index.html", "topics.html", "Topics", data, ROLES,
                topics=len(topic_keys(data)), shown=SHOWN)


def _manifest_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    def shown(v: Any) -> str:
        if isinstance(v, Mapping):
            return ", ".join(f"{k}={v[k]}" for k in sorted(v))
        if isinstance(v, list) and v and isinstance(v[0], tuple):
            return ", ".join(f"{k}={x}" for k, x in sorted(v))
        return "-" if v is None else str(v)

    cols = column_names(MANIFEST)
    return Table(cols, [[shown(r.get(c)) for c in cols] for r in rows])


def topic_page(data: SiteData, key: tuple[str, str], manifest: Sequence[Mapping[str, Any]],
               history: Sequence[Mapping[str, Any]], spans: Sequence[Mapping[str, Any]],
               series: Mapping[str, Any] | None, inventory: Mapping[str, Any] | None) -> str:
    cluster, topic = key
    up = "../"
    commands = {r["run_id"]: r["command"] for r in data.runs}
    chains = phase_chains(data.kinds, sorted(history, key=row_order))
    by_day = {p["day"]: p for p in (series or {}).get("points") or []}
    days = [str(d) for d in data.days]
    return page(
        topic_file(cluster, topic), "topic.html", f"Topic {topic}", data, ROLES,
        cluster=cluster, manifest=_manifest_table(manifest),
        history=Table(("recorded", "run", "action", "phases"), [
            [when(steps[-1].get("recorded_at")),
             Link(up + run_file(steps[-1]["run_id"]),
                  f"{steps[-1]['run_id']} ({commands.get(steps[-1]['run_id'], '?')})"),
             steps[-1]["action"], chain] for steps, chain in chains], css="history"),
        findings=Table(("rule", "severity", "since", "until", "runs", "detail"), [
            [s["rule"], Mark(s["severity"]), when(s["started_at"]),
             when(s["stopped_at"]) if s.get("stopped_at") else "still open", s["runs"],
             s["detail"]] for s in spans]),
        inventory_missing=missing(data.tables, "inventory"),
        inventory=inventory and {
            "checked": when(inventory["checked_at"]), "size": size(inventory["size_bytes"]),
            "records": count(inventory["records"]),
            "last_write": when(inventory["last_write_at"])},
        size_chart=line_data("size per day", [
            (d, by_day[day]["size_bytes"] if day in by_day else None)
            for d, day in zip(days, data.days, strict=True)], label=lambda v: size(int(v))),
        records_chart=line_data("records per day", [
            (d, by_day[day]["records"] if day in by_day else None)
            for d, day in zip(days, data.days, strict=True)]))


def topic_pages(data: SiteData) -> dict[str, str]:
    """Every topic's page, by path."""
    def grouped(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str],
                                                              list[Mapping[str, Any]]]:
        out: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for r in rows:
            out.setdefault((r["cluster"], r["topic"]), []).append(r)
        return out

    manifests, history = grouped(data.manifests), grouped(
        [r for r in data.audit if r.get("topic") is not None])
    spans = grouped([s for s in data.spans if s.get("topic") is not None])
    series = {(s["cluster"], s["topic"]): s for s in data.topic_series}
    inventory = {(r["cluster"], r["topic"]): r for r in data.inventory or []}
    return {topic_file(*key): topic_page(
        data, key, sorted(manifests.get(key, []), key=lambda r: str(r.get("state"))),
        history.get(key, []), spans.get(key, []), series.get(key), inventory.get(key))
        for key in topic_keys(data)}


def site_pages(data: SiteData) -> dict[str, str]:
    """The topics' files of the site, by path: the list, its search index, a page per
    topic."""
    return {"topics/index.html": topics_index(data), "topics/index.js": index_js(data),
            **topic_pages(data)}
