"""Charts as inline SVG: nothing for a browser to fetch. Here the data of a chart (its
points placed, its labels written); its markup is templates/charts.html.

Each point is a `<circle class="point">` (each bar a `<rect class="bar">`) carrying its
label and value as `data-x` and `data-y`, with a `<title>` a pointer shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from provisioning.views.site.html import macro

WIDTH, HEIGHT = 640, 200
LEFT, RIGHT, TOP, BOTTOM = 70, 16, 14, 30
# Where a bar chart's bars start (its labels to their left), and each bar's row.
BAR_LEFT, BAR_ROW = 200, 26


def nice_top(value: float) -> float:
    """The axis' top: four steps of 1, 2 or 5 times a power of ten, at or above `value`, so
    every tick is a round, whole number; the smallest one, 4, for a value no top can be at
    or above (NaN, infinity: a chart leaves such points out)."""
    if not math.isfinite(value):
        return 4.0
    power = 1.0
    while True:
        for factor in (1, 2, 5):
            if factor * power * 4 >= value:
                return factor * power * 4
        power *= 10


def _known(value: float | None) -> bool:
    """A value a chart can place: a finite number."""
    return value is not None and math.isfinite(value)


def _ticks(top: float) -> list[float]:
    return [top * n / 4 for n in range(5)]


def line_data(name: str, points: Sequence[tuple[str, float | None]],
              label: Callable[[float], str] = lambda v: f"{v:,.0f}") -> dict[str, Any]:
    """A line over `points` (x label, value; a None value, or one that is no finite number,
    is a gap: no point), for templates/charts.html's `line_chart` (no point: no data)."""
    points = [(x, v if _known(v) else None) for x, v in points]
    known = [v for _, v in points if v is not None]
    chart: dict[str, Any] = {"name": name, "width": WIDTH, "height": HEIGHT, "left": LEFT,
                             "right": WIDTH - RIGHT, "tick_x": LEFT - 6,
                             "axis_y": HEIGHT - 8, "ticks": [], "segments": [],
                             "points": [], "axis": []}
    if not known:
        return chart
    top = nice_top(max(known))
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = inner_w / max(len(points) - 1, 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        return LEFT + i * step, TOP + inner_h - inner_h * v / top

    for t in _ticks(top):
        _, y = xy(0, t)
        chart["ticks"].append({"y": f"{y:.1f}", "text_y": f"{y + 4:.1f}", "label": label(t)})
    segment: list[str] = []
    for i, (_, v) in enumerate(points):
        if v is None:
            chart["segments"].append(" ".join(segment))
            segment = []
            continue
        x, y = xy(i, v)
        segment.append(f"{x:.1f},{y:.1f}")
    chart["segments"].append(" ".join(segment))
    chart["segments"] = [s for s in chart["segments"] if s]
    for i, (x_label, v) in enumerate(points):
        if v is None:
            continue
        x, y = xy(i, v)
        chart["points"].append({"x": f"{x:.1f}", "y": f"{y:.1f}", "label_x": x_label,
                                "value": v, "label": label(v)})
    for i, anchor in sorted({0: "start", len(points) - 1: "end"}.items()):
        x, _ = xy(i, 0)
        chart["axis"].append({"x": f"{x:.1f}", "anchor": anchor, "text": points[i][0]})
    return chart


def bar_data(name: str, bars: Sequence[tuple[str, int, int]],
             label: Callable[[float], str] = lambda v: f"{v:,.0f}") -> dict[str, Any]:
    """Horizontal bars of used against capacity: (label, used, capacity); a bar over 85%
    of its capacity is marked `full`. For templates/charts.html's `bar_chart`."""
    inner_w = WIDTH - BAR_LEFT - RIGHT
    chart: dict[str, Any] = {"name": name, "width": WIDTH, "height": TOP + BAR_ROW * len(bars)
                             + 6, "left": BAR_LEFT, "inner_width": inner_w, "bars": []}
    for i, (text, used, capacity) in enumerate(bars):
        y = TOP + i * BAR_ROW
        share = used / capacity if capacity else 0.0
        chart["bars"].append({
            "text": text, "y": y, "text_y": y + 14, "used": used,
            "css": "bar full" if share > 0.85 else "bar",
            "width": f"{inner_w * min(share, 1.0):.1f}", "used_label": label(used),
            "capacity_label": label(capacity), "share": f"{share:.0%}"})
    return chart


def line_chart(name: str, points: Sequence[tuple[str, float | None]],
               label: Callable[[float], str] = lambda v: f"{v:,.0f}") -> str:
    """The line chart of `line_data`, as SVG (or a note that there is no data)."""
    return str(macro("charts.html", "line_chart")(line_data(name, points, label)))


def bar_chart(name: str, bars: Sequence[tuple[str, int, int]],
              label: Callable[[float], str] = lambda v: f"{v:,.0f}") -> str:
    """The bar chart of `bar_data`, as SVG (or a note that there is no data)."""
    return str(macro("charts.html", "bar_chart")(bar_data(name, bars, label)))
