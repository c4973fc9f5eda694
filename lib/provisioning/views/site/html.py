"""The site's templates and the plain values they show: the Jinja2 environment that renders
the pages (markup in `templates/`, every value escaped as it is written), the pieces a table
cell is made of, stable file names, numbers, times, and which tables a page was made from.

Everything here is a pure function of its arguments: the same data gives the same bytes.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import html
import importlib.resources
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import jinja2

from provisioning.views.report import byte_size
from provisioning.views.site.data import SiteData, TableRead

NAV = (("index.html", "Overview"), ("runs/index.html", "Runs"),
       ("topics/index.html", "Topics"), ("findings.html", "Findings"),
       ("inventory.html", "Inventory"))
# The folder of the templates, beside this module.
TEMPLATES = "templates"


@dataclass(frozen=True)
class Link:
    """A cell's link."""

    href: str
    text: Any


@dataclass(frozen=True)
class Mark:
    """A cell's value styled by a class of the site's CSS (an outcome, a severity, a
    status): the value is its own class."""

    text: Any


# A table cell: a value, a Link, a Mark, or a list of them shown one after the other.
Cell = Any


@dataclass(frozen=True)
class Table:
    """A table's headers and rows of cells; `numeric`: the columns aligned right; `css`:
    the table's class."""

    headers: Sequence[str]
    rows: Sequence[Sequence[Cell]]
    numeric: Sequence[int] = ()
    css: str = ""


class _Escaped:
    """A value escaped as `html.escape` escapes it (`&#x27;`, `&quot;`: the entities the
    pages always had), for Jinja2's autoescaping to write as it is."""

    __slots__ = ("_text",)

    def __init__(self, text: str) -> None:
        self._text = text

    def __html__(self) -> str:
        return self._text


def _escaped(value: Any) -> Any:
    # Markup (a macro's output) is the templates' own; every other value is text, and None
    # an empty cell, as the pages always had it.
    if hasattr(value, "__html__"):
        return value
    return _Escaped(html.escape("" if value is None else str(value), quote=True))


def _read(name: str) -> str:
    return (importlib.resources.files(__name__.rpartition(".")[0]) / TEMPLATES / name
            ).read_text(encoding="utf-8")


@functools.cache
def environment() -> jinja2.Environment:
    """The site's templates, read from the package's data (a directory, or the zip
    spark-submit.sh ships) and autoescaped; a value a template names that is missing is an
    error, never an empty cell."""
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: (_read(name), None, lambda: True)),
        autoescape=True, finalize=_escaped, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.tests.update(link=lambda v: isinstance(v, Link), mark=lambda v: isinstance(v, Mark),
                     pieces=lambda v: isinstance(v, list))
    return env


def render(template: str, **context: Any) -> str:
    """The template `template` of the site's, rendered with `context`."""
    return environment().get_template(template).render(**context)


def macro(template: str, name: str) -> Callable[..., Any]:
    """The macro `name` of the site's template `template`, as a function (its markup out)."""
    return cast(Callable[..., Any], getattr(environment().get_template(template).module, name))


def static(name: str) -> str:
    """A file of the site's templates folder as it is (the style sheet)."""
    return _read(name)


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


def read_from(tables: Sequence[TableRead], roles: Sequence[str]) -> list[dict[str, Any]]:
    """The tables of `roles` a page was made from, for its footer: each one's role, name,
    and the version read and when it was committed (None: it does not exist)."""
    return [{"role": t.role, "table": t.table, "version": t.version,
             "committed": when(t.committed_at)}
            for t in tables
            if any(t.role == r or (r == "manifests" and t.role.startswith("manifest"))
                   for r in roles)]


def missing(tables: Sequence[TableRead], role: str) -> TableRead | None:
    """The table of `role` when it does not exist (None: it does, or the site does not read
    it), for the note the pages that read it show."""
    t = next((t for t in tables if t.role == role), None)
    return t if t is not None and t.version is None else None


def page(path: str, template: str, title: str, data: SiteData, roles: Sequence[str],
         **context: Any) -> str:
    """The whole page at `path` (relative to the site's root; links are made relative):
    `template` (which extends page.html) with `context`, the navigation (`NAV`, then each
    kind's own entries, `ViewKind.site_nav`), and a footer naming the tables of `roles`."""
    nav = (*NAV, *(entry for kind in data.kinds for entry in kind.site_nav))
    return render(template, path=path, up="../" * path.count("/"), nav=nav, title=title,
                  read_from=read_from(data.tables, roles), **context)
