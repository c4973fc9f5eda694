"""`plan --format markdown`: the plan as GitHub-flavoured Markdown, for a pull-request
comment (the way teams review `terraform plan` output): each kind's part
(`ViewKind.markdown`), in registry order."""

from __future__ import annotations

import re
from collections.abc import Sequence

from provisioning.results import RunResult
from provisioning.views.kind import ViewKind

# What GitHub-flavoured Markdown makes something of anywhere in a line of a table cell:
# emphasis and strikethrough, code spans, links and images (no link without its brackets),
# raw HTML and entities, the cell separator; and what starts an autolink (`scheme://`,
# `www.`). Escaped, each renders as itself.
_MARKUP = re.compile(r"[\\`*_~\[\]<&|]|(?<=[A-Za-z]):(?=//)|(?<=\b[Ww][Ww][Ww])\.")
# GitHub links an e-mail address in the text around an `@` whatever escapes it holds; an
# empty comment after the `@` splits that text (and shows nothing).
_AT = "@<!-- -->"


def cell(text: object) -> str:
    """`text` as plain text inside a table cell, whatever it holds: every character Markdown
    would read as markup backslash-escaped (CommonMark renders an escaped character as
    itself), no autolink, line breaks as <br>. Manifest rows write much of what a plan
    shows (names, owners, configs, error texts quoting them), and the plan is read in a
    pull request."""
    escaped = _MARKUP.sub(lambda m: "\\" + m.group(0), str(text).replace("\r", ""))
    return escaped.replace("@", _AT).replace("\n", "<br>")


def code(text: object) -> str:
    """`text` as inline code in a table cell (names may hold `_` or `*`): nothing but a
    backtick ends a code span, so only the cell separator is escaped; a value with a
    backtick is plain text (`cell`)."""
    value = str(text)
    if "`" in value:
        return cell(value)
    return "`" + value.replace("|", "\\|").replace("\r", "").replace("\n", "<br>") + "`"


def render_markdown(kinds: Sequence[ViewKind], result: RunResult, command: str
                    ) -> list[str]:
    """The plan (or apply) as Markdown lines (`kinds`: each kind's part of this package)."""
    lines: list[str] = []
    for kind in kinds:
        lines += kind.markdown(result, command, kinds)
    while lines and not lines[-1]:
        lines.pop()
    return lines
