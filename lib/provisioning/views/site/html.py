"""The site's page frame and small HTML pieces: escaping, tables, numbers, times, stable file
names, and the footer naming the table versions a page was made from.

Everything here is a pure function of its arguments: the same data gives the same bytes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import html
import re
from collections.abc import Iterable, Sequence
from typing import Any

from provisioning.views.report import byte_size
from provisioning.views.site.data import TableRead

NAV = (("index.html", "Overview"), ("runs/index.html", "Runs"),
       ("topics/index.html", "Topics"), ("findings.html", "Findings"),
       ("inventory.html", "Inventory"))

CSS = """\
body{font-family:system-ui,sans-serif;margin:0;color:#1d2430;background:#fafbfc}
header{background:#1d2430;padding:.6em 1.2em}
header a{color:#e8edf3;margin-right:1.4em;text-decoration:none}
header a.here{font-weight:bold;text-decoration:underline}
main{padding:1em 1.6em;max-width:78em}
table{border-collapse:collapse;margin:.6em 0 1.2em}
th,td{border-bottom:1px solid #d9dee5;padding:.25em .7em;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.error{color:#b3261e}.warning{color:#8a5300}.info{color:#44576d}
.failed,.unknown,.rejected,.blocked{color:#b3261e;font-weight:bold}
.muted,footer{color:#66717f;font-size:.9em}
footer{padding:1em 1.6em;border-top:1px solid #d9dee5}
svg.chart{background:#fff;border:1px solid #d9dee5}
svg.chart .line{fill:none;stroke:#2f6fb3;stroke-width:2}
svg.chart .point{fill:#2f6fb3}
svg.chart .bar{fill:#2f6fb3}svg.chart .bar.full{fill:#b3261e}
svg.chart .cap{fill:#e8edf3}
svg.chart text{font-size:11px;fill:#44576d}
input#search{font-size:1.1em;padding:.3em;width:30em}
"""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def slug(text: str, width: int = 80) -> str:
    """A file-name-safe, stable name: the text's safe characters (cut to `width`) and a hash
    of the whole text, so names that differ only in case or unsafe characters never
    collide (case-insensitive file systems included)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", text)[:width].strip(".") or "_"
    return f"{safe}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:10]}"


def topic_file(cluster: str, topic: str) -> str:
    """The topic page's path under the site's root."""
    return f"topics/{slug(cluster + '/' + topic)}.html"


def run_file(run_id: str) -> str:
    return f"runs/{slug(run_id)}.html"


def when(value: Any) -> str:
    """A time as UTC text (a date as it is); '-' for none."""
    if value is None:
        return "-"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.strftime("%Y-%m-%d %H:%M:%S UTC")
    return str(value)


def size(value: int | None) -> str:
    """Bytes in binary units (exact below 1 KiB), '-' for none."""
    return byte_size(value)


def count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def table(headers: Sequence[str], body: Iterable[Sequence[str]], numeric: Sequence[int] = (),
          css: str = "") -> str:
    """A table of cells already escaped; `numeric`: the columns aligned right."""
    head = "".join(f'<th{" class=n" if i in numeric else ""}>{esc(h)}</th>'
                   for i, h in enumerate(headers))
    lines = ["".join(f'<td{" class=n" if i in numeric else ""}>{c}</td>'
                     for i, c in enumerate(cells)) for cells in body]
    if not lines:
        return '<p class="muted">none</p>'
    rows = "".join(f"<tr>{line}</tr>\n" for line in lines)
    attr = f' class="{css}"' if css else ""
    return f"<table{attr}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}</tbody></table>\n"


def link(href: str, text: str) -> str:
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def tables_footer(tables: Sequence[TableRead], roles: Sequence[str]) -> str:
    """What the page was made from: each table's version and when it was committed."""
    items = []
    for t in tables:
        if not any(t.role == r or (r == "manifests" and t.role.startswith("manifest"))
                   for r in roles):
            continue
        if t.version is None:
            items.append(f"<li>{esc(t.role)}: <code>{esc(t.table)}</code> does not exist"
                         "</li>")
        else:
            items.append(f"<li>{esc(t.role)}: <code>{esc(t.table)}</code> version "
                         f"{t.version}, committed {esc(when(t.committed_at))}</li>")
    return "<p>Read from these Delta tables:</p><ul>" + "".join(items) + "</ul>"


def missing(tables: Sequence[TableRead], role: str) -> str | None:
    """A note when the table of `role` does not exist (None: it does)."""
    t = next((t for t in tables if t.role == role), None)
    if t is None or t.version is not None:
        return None
    return (f'<p class="muted">The {esc(role)} table <code>{esc(t.table)}</code> does not '
            "exist yet: nothing to show here.</p>")


def page(path: str, title: str, body: str, footer: str, head: str = "") -> str:
    """A whole page at `path` (relative to the site's root; links are made relative)."""
    up = "../" * path.count("/")
    nav = "".join(
        f'<a href="{up}{href}"{" class=here" if href == path else ""}>{esc(text)}</a>'
        for href, text in NAV)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{esc(title)}</title>\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        f'<link rel="stylesheet" href="{up}site.css">\n{head}</head>\n<body>\n'
        f"<header>{nav}</header>\n<main>\n<h1>{esc(title)}</h1>\n{body}</main>\n"
        f"<footer>{footer}</footer>\n</body>\n</html>\n")
