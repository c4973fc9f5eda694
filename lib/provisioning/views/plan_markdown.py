"""`plan --format markdown`: the plan as GitHub-flavoured Markdown, for a pull-request
comment (the way teams review `terraform plan` output): each kind's part
(`ViewKind.markdown`), in registry order."""

from __future__ import annotations

from collections.abc import Sequence

from provisioning.results import RunResult
from provisioning.views.kind import ViewKind


def cell(text: object) -> str:
    """`text` safe inside a table cell: pipes escaped, line breaks as <br>."""
    return (str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", "")
            .replace("\n", "<br>"))


def code(text: object) -> str:
    """`text` as inline code in a table cell (names may hold `_` or `*`)."""
    value = str(text)
    if "`" in value:
        return cell(value)
    return f"`{cell(value)}`"


def render_markdown(kinds: Sequence[ViewKind], result: RunResult, command: str
                    ) -> list[str]:
    """The plan (or apply) as Markdown lines (`kinds`: each kind's part of this package)."""
    lines: list[str] = []
    for kind in kinds:
        lines += kind.markdown(result, command, kinds)
    while lines and not lines[-1]:
        lines.pop()
    return lines
