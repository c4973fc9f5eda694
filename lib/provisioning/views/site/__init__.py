"""`report --site DIR`: the audit as a static site, made from the Delta tables alone.

Pages: the overview (per cluster), the runs and each run's changes by kind, each kind's own
pages (`ViewKind.site_pages`: the topics' searchable list and a page per topic), the open
findings and the inventory. Charts are
inline SVG; the topic search's index is a `.js` file loaded with `<script src>`: the site
works opened from the file system and served by any static server, and fetches nothing.
The same table versions give the same files, byte for byte.

What each page shows is gathered here, in Python; its markup is a Jinja2 template of
`templates/` (shipped with the package), which escapes every value it writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from provisioning.conf import Conf
from provisioning.views.kind import ViewKind
from provisioning.views.site.data import SiteData, read_site
from provisioning.views.site.html import static
from provisioning.views.site.pages import findings, inventory, overview
from provisioning.views.site.runs import run_pages, runs_index

# The folders whose pages the site owns: a page there that a new site does not write is
# removed (a topic or run gone from the window).
OWNED_FOLDERS = ("runs", "topics")
MARKER = "site.css"


def render_site(data: SiteData) -> dict[str, str]:
    """Every file of the site, by path under its root."""
    files = {"site.css": static("site.css"), "index.html": overview(data),
             "findings.html": findings(data), "inventory.html": inventory(data),
             "runs/index.html": runs_index(data)}
    files.update(run_pages(data))
    for kind in data.kinds:
        files.update(kind.site_pages(data))
    return dict(sorted(files.items()))


def write_files(root: Path, files: Mapping[str, str]) -> int:
    """Write `files` under `root`, rewriting only those whose bytes changed, and remove the
    pages of the owned folders no longer written. Returns how many files were removed."""
    if root.exists() and any(root.iterdir()) and not (root / MARKER).exists():
        from provisioning.errors import UsageError

        raise UsageError(f"{root} is not empty and holds no site ({MARKER} missing): "
                         "choose an empty or new directory")
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)
    removed = 0
    for folder in OWNED_FOLDERS:
        for old in sorted((root / folder).glob("*")):
            if old.is_file() and f"{folder}/{old.name}" not in files:
                old.unlink()
                removed += 1
    return removed


def build_site(spark: SparkSession, kinds: Sequence[ViewKind], conf: Conf, root: Path,
               clusters: Sequence[str], since_days: int, inventory_table: str,
               disks_table: str) -> dict[str, Any]:
    """Read the tables, render every page of the `kinds`' rows and write them under `root`;
    what was written."""
    data = read_site(spark, kinds, conf, clusters, since_days, inventory_table, disks_table)
    files = render_site(data)
    removed = write_files(root, files)
    return {"site": str(root), "files": len(files), "removed": removed,
            "runs": len(data.runs), "topics": sum(1 for p in files if p.startswith("topics/")
                                                 and p.endswith(".html")) - 1,
            "days": [str(d) for d in data.days[:1] + data.days[-1:]],
            "tables": [{"role": t.role, "table": t.table, "version": t.version,
                        "committed_at": None if t.committed_at is None
                        else t.committed_at.isoformat()} for t in data.tables]}
