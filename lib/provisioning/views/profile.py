"""A run's profile (`--profile`, `session.profile`) as lines a person reads: one line per
step with its wall time and the Spark work, commits and Kafka requests in it, then the
totals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _named(entries: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(f"{e['name']} {e['count']}x {e['seconds']:.2f}s" for e in entries) or "-"


def _line(name: str, entry: Mapping[str, Any], width: int) -> str:
    spark = entry["spark"]
    tasks = entry.get("tasks") or {}
    return (f"  {name:<{width}} {entry['seconds']:8.2f}s  spark {spark['count']:3d} "
            f"{spark['seconds']:7.2f}s  commits {_named(entry['commits'])}  "
            f"kafka {_named(entry['requests'])}"
            + (f"  admin tasks {tasks['count']}x {tasks['seconds']:.2f}s"
               if tasks.get("count") else ""))


def render_profile(report: Mapping[str, Any]) -> list[str]:
    """The profile's lines: each step, then the totals (`Profile.report`)."""
    steps = report["steps"]
    width = max([len(s["step"]) for s in steps] + [len("total")])
    lines = [f"profile (spark: {report['spark_measures']}; a step holds what started in it; "
             "overlapping work adds up to more than the wall time):"]
    lines += [_line(s["step"], s, width) for s in steps]
    lines.append(_line("total", report["totals"], width))
    return lines
