"""A run's profile (`--profile`, `session.profile`) as lines a person reads: one line per
step with its wall time and the Spark work, commits, Kafka requests and requests to a Spark
Connect server in it, then the totals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from provisioning.views.text_table import table_lines

# The step, its seconds, the Spark work (count, seconds), and what else it held.
_ALIGN = ("left", "right", "left", "right", "right", "left")


def _named(entries: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(f"{e['name']} {e['count']}x {e['seconds']:.2f}s" for e in entries) or "-"


def _server(entry: Mapping[str, Any]) -> str:
    """The requests to the Spark Connect server, by method (none on classic Spark)."""
    server = entry.get("server_requests") or {}
    if not server.get("count"):
        return ""
    kinds = ", ".join(f"{e['name']} {e['count']}" for e in server["by_kind"])
    return f"  server requests {server['count']} ({kinds})"


def _row(name: str, entry: Mapping[str, Any]) -> list[str]:
    spark = entry["spark"]
    tasks = entry.get("tasks") or {}
    return [name, f"{entry['seconds']:.2f}s", "spark", str(spark["count"]),
            f"{spark['seconds']:.2f}s",
            f"commits {_named(entry['commits'])}  kafka {_named(entry['requests'])}"
            + (f"  admin tasks {tasks['count']}x {tasks['seconds']:.2f}s"
               if tasks.get("count") else "")
            + _server(entry)]


def render_profile(report: Mapping[str, Any]) -> list[str]:
    """The profile's lines: each step, then the totals (`Profile.report`)."""
    return [f"profile (spark: {report['spark_measures']}; a step holds what started in it; "
            "overlapping work adds up to more than the wall time):",
            *table_lines([*(_row(s["step"], s) for s in report["steps"]),
                          _row("total", report["totals"])], align=_ALIGN)]
