"""Charts as inline SVG, made here: nothing for a browser to fetch.

Each point is a `<circle class="point">` (each bar a `<rect class="bar">`) carrying its
label and value as `data-x` and `data-y`, with a `<title>` a pointer shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from provisioning.views.site.html import esc

WIDTH, HEIGHT = 640, 200
LEFT, RIGHT, TOP, BOTTOM = 70, 16, 14, 30


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


def line_chart(name: str, points: Sequence[tuple[str, float | None]],
               label: Callable[[float], str] = lambda v: f"{v:,.0f}") -> str:
    """A line over `points` (x label, value; a None value, or one that is no finite number,
    is a gap: no point)."""
    points = [(x, v if _known(v) else None) for x, v in points]
    known = [v for _, v in points if v is not None]
    if not known:
        return f'<p class="muted">{esc(name)}: no data in the window.</p>'
    top = nice_top(max(known))
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = inner_w / max(len(points) - 1, 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        return LEFT + i * step, TOP + inner_h - inner_h * v / top

    parts = [f'<svg class="chart" role="img" aria-label="{esc(name)}" '
             f'data-chart="{esc(name)}" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" xmlns="http://www.w3.org/2000/svg">']
    for t in _ticks(top):
        _, y = xy(0, t)
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
                     'stroke="#eef1f5"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                     f"{esc(label(t))}</text>")
    segment: list[str] = []
    segments = []
    for i, (_, v) in enumerate(points):
        if v is None:
            segments.append(segment)
            segment = []
            continue
        x, y = xy(i, v)
        segment.append(f"{x:.1f},{y:.1f}")
    segments.append(segment)
    parts += [f'<polyline class="line" points="{" ".join(s)}"/>' for s in segments if s]
    for i, (x_label, v) in enumerate(points):
        if v is None:
            continue
        x, y = xy(i, v)
        parts.append(f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3" '
                     f'data-x="{esc(x_label)}" data-y="{v}"><title>{esc(x_label)}: '
                     f"{esc(label(v))}</title></circle>")
    for i, anchor in sorted({0: "start", len(points) - 1: "end"}.items()):
        x, _ = xy(i, 0)
        parts.append(f'<text x="{x:.1f}" y="{HEIGHT - 8}" text-anchor="{anchor}">'
                     f"{esc(points[i][0])}</text>")
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def bar_chart(name: str, bars: Sequence[tuple[str, int, int]],
              label: Callable[[float], str] = lambda v: f"{v:,.0f}") -> str:
    """Horizontal bars of used against capacity: (label, used, capacity); a bar over 85%
    of its capacity is marked `full`."""
    if not bars:
        return f'<p class="muted">{esc(name)}: no data.</p>'
    row, inner_w = 26, WIDTH - 200 - RIGHT
    height = TOP + row * len(bars) + 6
    parts = [f'<svg class="chart" role="img" aria-label="{esc(name)}" '
             f'data-chart="{esc(name)}" width="{WIDTH}" height="{height}" '
             f'viewBox="0 0 {WIDTH} {height}" xmlns="http://www.w3.org/2000/svg">']
    for i, (text, used, capacity) in enumerate(bars):
        y = TOP + i * row
        share = used / capacity if capacity else 0.0
        full = " full" if share > 0.85 else ""
        parts.append(f'<text x="4" y="{y + 14}">{esc(text)}</text>')
        parts.append(f'<rect class="cap" x="200" y="{y}" width="{inner_w}" height="18"/>')
        parts.append(f'<rect class="bar{full}" x="200" y="{y}" '
                     f'width="{inner_w * min(share, 1.0):.1f}" height="18" '
                     f'data-x="{esc(text)}" data-y="{used}"><title>{esc(text)}: '
                     f"{esc(label(used))} of {esc(label(capacity))} ({share:.0%})</title></rect>")
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
