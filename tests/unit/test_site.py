"""The site's pure parts: file names, charts, a run's changes by kind, whole pages from plain
data (no Spark)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from provisioning.views.site import render_site, write_files
from provisioning.views.site.charts import bar_chart, line_chart, nice_top
from provisioning.views.site.data import SiteData, TableRead
from provisioning.views.site.html import run_file, slug, topic_file
from provisioning.views.site.runs import run_groups
from tests.helpers import VIEWS

T0 = dt.datetime(2026, 11, 1, 3, 0)


def test_file_names_are_safe_and_never_collide() -> None:
    names = {topic_file("local", t) for t in ("Orders", "orders", "a/b", "a_b", "x" * 249)}
    assert len(names) == 5
    assert all(re.fullmatch(r"topics/[A-Za-z0-9._-]+\.html", n) for n in names)
    assert topic_file("local", "orders") == f"topics/{slug('local/orders')}.html"
    assert run_file("r1") == run_file("r1")


def test_a_line_chart_has_one_point_per_known_value() -> None:
    svg = line_chart("c", [("d1", 3), ("d2", None), ("d3", 5)])
    assert re.findall(r'data-x="([^"]+)" data-y="([^"]+)"', svg) == [("d1", "3"), ("d3", "5")]
    assert svg.count("<polyline") == 2  # the gap splits the line


def test_a_chart_without_data_says_so() -> None:
    assert line_chart("c", [("d1", None)]) == '<p class="muted">c: no data in the window.</p>'
    assert bar_chart("b", []) == '<p class="muted">b: no data.</p>'


def test_a_disk_over_85_percent_is_marked_full() -> None:
    svg = bar_chart("disks", [("broker 1", 90, 100), ("broker 2", 10, 100)])
    assert re.findall(r'class="(bar[^"]*)"', svg) == ["bar full", "bar"]


def _row(topic: str | None, phase: str, outcome: str, action: str = "CREATE",
         **kw: object) -> dict[str, object]:
    return {"run_id": "r1", "cluster": "local", "topic": topic, "action": action,
            "phase": phase, "outcome": outcome, "error_name": None, "error_message": None,
            "recorded_at": T0, **kw}


def test_a_runs_changes_are_grouped_by_kind_failures_first() -> None:
    rows = [_row("a", "plan", "planned"), _row("a", "apply", "created"),
            _row("b", "plan", "planned"), _row("b", "apply", "failed"),
            _row("c", "plan", "planned", action="REASSIGN"),
            _row(None, "plan", "planned", action="GRANT",
                 acl={"principal": "User:x", "host": "*", "resource_type": "TOPIC",
                      "resource_name": "a", "pattern_type": "LITERAL", "operation": "READ",
                      "permission": "ALLOW"})]
    groups = [(kind.name, [(chain[0][-1].get("topic"), text) for chain in chains
                           for text in [chain[1]]]) for kind, chains in run_groups(VIEWS, rows)]
    assert groups == [
        ("topics", [("b", "plan planned -> apply failed"), ("a", "plan planned -> apply created")]),
        ("acls", [(None, "plan planned")]),
        ("reassign", [("c", "plan planned")]),
    ]


def _data(inventory: bool) -> SiteData:
    tables = [TableRead("runs", "wh/runs", 3, dt.datetime(2026, 11, 1, 4, tzinfo=dt.UTC)),
              TableRead("inventory", "wh/inv", 1 if inventory else None, None)]
    day = T0.date()
    return SiteData(
        clusters=["local"], tables=tables, days=[day], kinds=VIEWS,
        runs=[{"run_id": "r1", "command": "apply", "status": "succeeded", "exit_code": 0,
               "message": None, "started_at": T0, "finished_at": T0 + dt.timedelta(seconds=4),
               "outcome_counts": {"created": 1}, "clusters": ["local"], "kinds": []}],
        audit=[_row("a", "plan", "planned"), _row("a", "apply", "created")],
        live=[{"cluster": "local", "topic": "a", "partitions": 1, "replication_factor": 1,
               "snapshot_at": T0}],
        findings_per_day=[{"cluster": "local", "day": day, "findings": 2}],
        inventory=[] if inventory else None)


def test_a_missing_inventory_table_is_named_on_the_pages_that_read_it() -> None:
    files = render_site(_data(inventory=False))
    note = "The inventory table <code>wh/inv</code> does not exist yet"
    assert note in files["index.html"] and note in files["inventory.html"]
    assert "wh/runs</code> version 3, committed 2026-11-01 04:00:00 UTC" in files["index.html"]


def test_the_same_data_gives_the_same_bytes() -> None:
    assert render_site(_data(True)) == render_site(_data(True))
    files = render_site(_data(True))
    assert list(files) == sorted(["findings.html", "groups/index.html", "index.html",
                                  "inventory.html",
                                  run_file("r1"), "runs/index.html", "site.css",
                                  topic_file("local", "a"), "topics/index.html",
                                  "topics/index.js"])


def test_pages_no_longer_written_are_removed_from_the_sites_own_folders(
        tmp_path: Path) -> None:
    write_files(tmp_path, {"site.css": "", "runs/old.html": "x", "runs/index.html": "y"})
    (tmp_path / "notes.txt").write_text("kept")
    assert write_files(tmp_path, {"site.css": "", "runs/index.html": "y"}) == 1
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")
                  if p.is_file()) == ["notes.txt", "runs/index.html", "site.css"]


@pytest.mark.timeout(10)
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), -3.0, 0.0])
def test_an_axis_top_is_made_for_any_value_the_data_may_hold(value: float) -> None:
    # No round top lies at or above NaN or infinity: the smallest one is taken.
    assert nice_top(value) == 4.0


@pytest.mark.timeout(10)
def test_a_point_that_is_no_finite_number_is_a_gap_in_its_line() -> None:
    svg = line_chart("c", [("d1", 3), ("d2", float("nan")), ("d3", float("inf")), ("d4", 5)])
    assert re.findall(r'data-x="([^"]+)" data-y="([^"]+)"', svg) == [("d1", "3"), ("d4", "5")]
    assert svg.count("<polyline") == 2
    assert line_chart("c", [("d1", float("nan"))]) == (
        '<p class="muted">c: no data in the window.</p>')


# Markup in a topic's name, owner and config value: the pages must show it as text.
HOSTILE = "<script>window.injected = 1</script> \"quoted\" 'single' & &amp;"
HOSTILE_TOPIC = f"t{HOSTILE}"


def hostile_data() -> SiteData:
    """A site's data whose topic, owner and config value carry a script, quotes and
    ampersands (`tests/integration/test_site.py` opens its pages in a browser too)."""
    data = _data(inventory=True)
    data.live.append({"cluster": "local", "topic": HOSTILE_TOPIC, "partitions": 1,
                      "replication_factor": 1, "snapshot_at": T0})
    data.manifests.append({"cluster": "local", "topic": HOSTILE_TOPIC, "state": "present",
                           "partitions": 1, "replication_factor": 1,
                           "replica_assignment": None, "configs": {"x.note": HOSTILE},
                           "owner": HOSTILE, "force": None})
    data.findings.append({"cluster": "local", "topic": HOSTILE_TOPIC,
                          "rule": "required_configs", "severity": "error",
                          "detail": f"config missing: {HOSTILE}", "managed": True,
                          "owner": HOSTILE})
    return data


def test_markup_in_a_topic_owner_and_config_is_escaped_on_every_page() -> None:
    files = render_site(hostile_data())
    escaped = ("&lt;script&gt;window.injected = 1&lt;/script&gt; &quot;quoted&quot; "
               "&#x27;single&#x27; &amp; &amp;amp;")
    page = files[topic_file("local", HOSTILE_TOPIC)]
    assert f"<title>Topic t{escaped}</title>" in page
    assert (f"<tr><td>local</td><td>t{escaped}</td><td>present</td><td>1</td><td>1</td>"
            f"<td>-</td><td>x.note={escaped}</td><td>{escaped}</td><td>-</td></tr>") in page
    assert (f"<td>config missing: {escaped}</td><td>{escaped}</td></tr>"
            in files["findings.html"])
    # topics/index.js holds the name as a JSON string: data, which the search writes into
    # the page as text (textContent), never as markup.
    assert [p for p, text in files.items()
            if p.endswith(".html") and "<script>window" in text] == []
