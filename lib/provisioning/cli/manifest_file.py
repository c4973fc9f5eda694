"""Manifest files (YAML or JSON lists of rows): reading the list, its rows read against the
kind's row model (`conf.manifests`), and every problem of its rows reported at once. Each
kind turns the rows into its manifest schema's rows (`CliKind.manifest_rows`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from provisioning.errors import UsageError


def read_list(path: str | Path, what: str) -> tuple[Path, list[Any]]:
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise UsageError(f"{p}: cannot parse: {exc}") from None
    if not isinstance(data, list):
        raise UsageError(f"{p}: expected a list of {what} rows")
    return p, data


def read_rows(path: str | Path, what: str, model: type,
              label: Callable[[Mapping[str, Any]], str]) -> list[dict[str, Any]]:
    """The file's rows read against `model`, by column; UsageError lists every problem.

    label: what names a row in a problem (its topic, principal or entity)."""
    from provisioning.conf.manifests import read_rows as read_against

    p, data = read_list(path, what)
    rows, problems = read_against(data, model, label)
    raise_problems(p, problems)
    return [row for row in rows if row is not None]


def raise_problems(p: Path, problems: list[str]) -> None:
    if problems:
        raise UsageError(f"{p}: {len(problems)} problem(s)\n" +
                         "\n".join(f"  - {x}" for x in problems))
