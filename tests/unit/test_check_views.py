"""`check`'s views: the exact text, Markdown and trend lines for given rows."""

from __future__ import annotations

import datetime as dt
from typing import Any

from provisioning.views.check import check_markdown, render_check, render_trend


def v(cluster: str, topic: str, rule: str, severity: str, detail: str,
      managed: bool = True, owner: str | None = None) -> dict[str, Any]:
    return {"run_id": "check-1", "cluster": cluster, "topic": topic, "rule": rule,
            "severity": severity, "detail": detail, "managed": managed, "owner": owner,
            "snapshot_at": dt.datetime(2026, 11, 22, 3), "recorded_at": None}


ROWS = [
    v("local", "loose.topic", "unmanaged", "info", "no manifest row names it", False),
    v("local", "sick", "under_replicated", "warning", "partition 0 has in-sync replicas 1",
      owner="team-b"),
    v("local", "sick", "offline_partition", "error", "partition 0 has no leader",
      owner="team-b"),
    v("local", "loose.topic", "min_insync_within_rf", "error", "min.insync.replicas 2 > 1",
      False),
    v("east", "big|stream", "partitions_range", "error", "partitions 12\nexceeds 6"),
    v("east", "a.orders", "drift", "warning", "partitions: 3 -> 6", owner="team-a"),
    v("east", "b.orders", "drift", "warning", "partitions: 1 -> 2", owner="team-a"),
]


def test_the_text_counts_per_cluster_and_rule_then_lists_the_errors() -> None:
    assert render_check(ROWS, clusters=["local", "east", "west"]) == [
        "check: 7 violation(s): 3 error, 3 warning, 1 info",
        "cluster east: 3 violation(s)",
        "  error    partitions_range  1",
        "  warning  drift             2",
        "cluster local: 4 violation(s)",
        "  error    min_insync_within_rf  1",
        "  error    offline_partition     1",
        "  warning  under_replicated      1",
        "  info     unmanaged             1",
        "cluster west: no violation",
        "errors (3):",
        "  east/big|stream  partitions_range (managed, no owner): partitions 12\nexceeds 6",
        "  local/loose.topic  min_insync_within_rf (unmanaged): min.insync.replicas 2 > 1",
        "  local/sick  offline_partition (owner team-b): partition 0 has no leader",
    ]


def test_the_text_of_a_clean_check() -> None:
    assert render_check([], clusters=["local"]) == ["check: no violation (local)"]
    assert render_check([v("local", "t", "unmanaged", "info", "d", False)]) == [
        "check: 1 violation(s): 0 error, 0 warning, 1 info",
        "cluster local: 1 violation(s)",
        "  info  unmanaged  1",
        "errors: none",
    ]


def test_the_markdown_table_is_worst_first_and_escaped() -> None:
    assert check_markdown(ROWS, clusters=["local", "east", "west"]) == [
        "### Kafka topic check",
        "",
        "| cluster | error | warning | info |",
        "|---|---:|---:|---:|",
        "| `east` | 1 | 2 | 0 |",
        "| `local` | 2 | 1 | 1 |",
        "| `west` | 0 | 0 | 0 |",
        "",
        "| | severity | cluster | topic | rule | owner | detail |",
        "|---|---|---|---|---|---|---|",
        "| ❌ | error | `east` | `big\\|stream` | `partitions_range` | managed, no owner | "
        "partitions 12<br>exceeds 6 |",
        "| ❌ | error | `local` | `loose.topic` | `min_insync_within_rf` | unmanaged | "
        "min.insync.replicas 2 > 1 |",
        "| ❌ | error | `local` | `sick` | `offline_partition` | `team-b` | "
        "partition 0 has no leader |",
        "| ⚠️ | warning | `east` | `a.orders` | `drift` | `team-a` | partitions: 3 -> 6 |",
        "| ⚠️ | warning | `east` | `b.orders` | `drift` | `team-a` | partitions: 1 -> 2 |",
        "| ⚠️ | warning | `local` | `sick` | `under_replicated` | `team-b` | "
        "partition 0 has in-sync replicas 1 |",
        "| ℹ️ | info | `local` | `loose.topic` | `unmanaged` | unmanaged | "  # noqa: RUF001
        "no manifest row names it |",
    ]


def test_a_long_markdown_table_is_cut_with_a_count() -> None:
    lines = check_markdown(ROWS, max_rows=2)
    assert lines[-5:] == [
        "|---|---|---|---|---|---|---|",
        "| ❌ | error | `east` | `big\\|stream` | `partitions_range` | managed, no owner | "
        "partitions 12<br>exceeds 6 |",
        "| ❌ | error | `local` | `loose.topic` | `min_insync_within_rf` | unmanaged | "
        "min.insync.replicas 2 > 1 |",
        "",
        "… and 5 more violation(s) (fewer severe first): `check --json` or the violations "
        "table lists every one.",
    ]
    assert check_markdown([], clusters=["local"]) == [
        "### Kafka topic check", "", "No violation on `local`."]


def test_the_trend_shows_a_table_per_cluster_and_the_spans() -> None:
    d20, d21 = dt.date(2026, 11, 20), dt.date(2026, 11, 21)
    days = [
        {"cluster": "local", "day": d20, "run_id": "r2", "rule": "drift", "violations": 12},
        {"cluster": "local", "day": d20, "run_id": "r2", "rule": "unmanaged",
         "violations": 1},
        {"cluster": "local", "day": d21, "run_id": "r3", "rule": "drift", "violations": 0},
        {"cluster": "local", "day": d21, "run_id": "r3", "rule": "unmanaged",
         "violations": 1},
        {"cluster": "west", "day": d21, "run_id": "r3", "rule": None, "violations": 0},
    ]
    spans = [
        {"cluster": "local", "topic": "t1", "rule": "drift", "severity": "warning",
         "detail": "partitions: 3 -> 6", "started_at": dt.datetime(2026, 11, 20, 8),
         "started_run_id": "r1", "stopped_at": dt.datetime(2026, 11, 21, 9),
         "stopped_run_id": "r3", "runs": 2},
        {"cluster": "local", "topic": "t2", "rule": "unmanaged", "severity": "info",
         "detail": "no manifest row", "started_at": dt.datetime(2026, 11, 20, 20),
         "started_run_id": "r2", "stopped_at": None, "stopped_run_id": None, "runs": 2},
    ]
    assert render_trend(days, spans) == [
        "violations per rule per day (each day's last check run)",
        "cluster local",
        "  day         drift  unmanaged",
        "  2026-11-20     12          1",
        "  2026-11-21      0          1",
        "cluster west",
        "  no violation in any counted run",
        "when topics started and stopped breaking a rule (newest first)",
        "  local/t2  unmanaged (info): since 2026-11-20 20:00 (run r2), still broken, 2 run(s)",
        "      no manifest row",
        "  local/t1  drift (warning): 2026-11-20 08:00 (run r1) until 2026-11-21 09:00 "
        "(run r3), 2 run(s)",
        "      partitions: 3 -> 6",
    ]
    assert render_trend([], []) == [
        "violations per rule per day (each day's last check run)",
        "  no check run recorded",
        "when topics started and stopped breaking a rule (newest first)",
        "  none",
    ]
