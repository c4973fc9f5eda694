"""The site's topic pages: the searchable list (its index a `.js` file that assigns a global,
loaded with `<script src>`, since a page opened from the file system may not fetch() a local
file), and one page per topic: its manifest row, its changes, its findings, its size and
records over time."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from provisioning.views.report import phase_chains
from provisioning.views.site.charts import line_chart
from provisioning.views.site.data import SiteData
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
from provisioning.views.site.runs import row_order
from schemas import MANIFEST, column_names

ROLES = ("runs", "audit", "snapshots", "violations", "inventory", "manifests")
# Matches the list shows at once (the index holds every topic).
SHOWN = 200

SEARCH = """<script>
(function () {
  var all = window.SITE_TOPICS || [];
  var box = document.getElementById("search");
  var body = document.getElementById("matches");
  var note = document.getElementById("shown");
  function cell(tr, text, href) {
    var td = document.createElement("td");
    if (href) { var a = document.createElement("a"); a.href = href; a.textContent = text;
      td.appendChild(a); } else { td.textContent = text; }
    tr.appendChild(td);
  }
  function show() {
    var words = box.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var found = all.filter(function (t) {
      var name = (t[0] + "/" + t[1]).toLowerCase();
      return words.every(function (w) { return name.indexOf(w) >= 0; });
    });
    body.textContent = "";
    found.slice(0, @SHOWN@).forEach(function (t) {
      var tr = document.createElement("tr");
      cell(tr, t[0]); cell(tr, t[1], t[2]); cell(tr, t[3]); cell(tr, t[4]); cell(tr, t[5]);
      body.appendChild(tr);
    });
    note.textContent = found.length + " of " + all.length + " topics match" +
      (found.length > @SHOWN@ ? " (the first @SHOWN@ shown)" : "");
  }
  box.addEventListener("input", show);
  show();
})();
</script>
""".replace("@SHOWN@", str(SHOWN))


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
    body = (f"<p>{len(topic_keys(data))} topic(s): live in each cluster's newest snapshot, "
            "named by a manifest, or in the newest inventory. Type part of a name.</p>"
            '<p><input id="search" type="search" placeholder="cluster/topic" '
            'autocomplete="off"></p><p id="shown" class="muted"></p>'
            "<noscript><p>The search needs JavaScript; every topic has a page under "
            "topics/.</p></noscript>"
            '<table class="search"><thead><tr><th>cluster</th><th>topic</th><th>size</th>'
            '<th>partitions</th><th>open findings</th></tr></thead>'
            '<tbody id="matches"></tbody></table>\n')
    return page("topics/index.html", "Topics", body + '<script src="index.js"></script>\n'
                + SEARCH, tables_footer(data.tables, ROLES))


def _manifest_table(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return '<p class="muted">No manifest row names this topic.</p>'

    def shown(v: Any) -> str:
        if isinstance(v, Mapping):
            return ", ".join(f"{k}={v[k]}" for k in sorted(v))
        if isinstance(v, list) and v and isinstance(v[0], tuple):
            return ", ".join(f"{k}={x}" for k, x in sorted(v))
        return "-" if v is None else str(v)

    cols = column_names(MANIFEST)
    return table(cols, ([esc(shown(r.get(c))) for c in cols] for r in rows))


def topic_page(data: SiteData, key: tuple[str, str], manifest: Sequence[Mapping[str, Any]],
               history: Sequence[Mapping[str, Any]], spans: Sequence[Mapping[str, Any]],
               series: Mapping[str, Any] | None, inventory: Mapping[str, Any] | None) -> str:
    cluster, topic = key
    up = "../"
    body = [f"<p>Cluster <b>{esc(cluster)}</b>.</p>", "<h2>Manifest</h2>",
            _manifest_table(manifest), "<h2>Changes</h2>"]
    commands = {r["run_id"]: r["command"] for r in data.runs}
    chains = phase_chains(data.kinds, sorted(history, key=row_order))
    body.append(table(("recorded", "run", "action", "phases"), (
        [esc(when(steps[-1].get("recorded_at"))),
         link(up + run_file(steps[-1]["run_id"]),
              f"{steps[-1]['run_id']} ({commands.get(steps[-1]['run_id'], '?')})"),
         esc(steps[-1]["action"]), esc(chain)] for steps, chain in chains), css="history"))
    body.append("<h2>Findings</h2>")
    body.append(table(("rule", "severity", "since", "until", "runs", "detail"), (
        [esc(s["rule"]), f'<span class="{esc(s["severity"])}">{esc(s["severity"])}</span>',
         esc(when(s["started_at"])),
         esc(when(s["stopped_at"])) if s.get("stopped_at") else "still open",
         esc(s["runs"]), esc(s["detail"])] for s in spans)))
    body.append("<h2>Size and records</h2>")
    note = missing(data.tables, "inventory")
    if note:
        body.append(note)
    else:
        if inventory:
            body.append(f"<p>Newest inventory ({esc(when(inventory['checked_at']))}): "
                        f"{esc(size(inventory['size_bytes']))} in "
                        f"{esc(count(inventory['records']))} records, last write "
                        f"{esc(when(inventory['last_write_at']))}.</p>")
        by_day = {p["day"]: p for p in (series or {}).get("points") or []}
        days = [str(d) for d in data.days]
        body.append(line_chart("size per day", [
            (d, by_day[day]["size_bytes"] if day in by_day else None)
            for d, day in zip(days, data.days, strict=True)], label=lambda v: size(int(v))))
        body.append(line_chart("records per day", [
            (d, by_day[day]["records"] if day in by_day else None)
            for d, day in zip(days, data.days, strict=True)]))
    return page(topic_file(cluster, topic), f"Topic {topic}", "".join(body),
                tables_footer(data.tables, ROLES))


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
