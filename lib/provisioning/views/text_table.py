"""Columns of plain text lined up by tabulate, for the views whose output is a table a
person reads in a terminal or a log."""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate


def table_lines(rows: Sequence[Sequence[str]], align: Sequence[str] = (),
                indent: str = "  ") -> list[str]:
    """`rows` (a header is a row like the others) as lines: columns two spaces apart, each
    as wide as its widest cell, `align`ed ("left", the default, or "right") per column,
    every line `indent`ed and without trailing spaces. Cells are text, shown as they are
    (no number parsing)."""
    if not rows:
        return []
    text = tabulate(rows, tablefmt="plain", disable_numparse=True,
                    colalign=tuple(align) or None)
    return [(indent + line).rstrip() for line in text.split("\n")]
