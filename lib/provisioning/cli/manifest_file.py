"""Manifest files (YAML or JSON lists of rows): reading the list, and reporting every
problem of its rows at once. Each kind turns the rows into its manifest schema's rows
(`CliKind.manifest_rows`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
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


def raise_problems(p: Path, problems: list[str]) -> None:
    if problems:
        raise UsageError(f"{p}: {len(problems)} problem(s)\n" +
                         "\n".join(f"  - {x}" for x in problems))


def force_value(where: str, item: Mapping[str, Any], problems: list[str]) -> bool | None:
    """A row's `force`: true, false or absent."""
    force = item.get("force")
    if force is not None and not isinstance(force, bool):
        problems.append(f"{where}.force: expected true or false")
        return None
    return force
