"""Manifest files (YAML or JSON lists of rows) turned into MANIFEST rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from provisioning.errors import UsageError
from schemas import ACL_MANIFEST, MANIFEST, column_names

_INT_COLUMNS = ("partitions", "replication_factor")
_STR_COLUMNS = ("cluster", "topic", "state", "owner")


def _read_list(path: str | Path, what: str) -> tuple[Path, list[Any]]:
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise UsageError(f"{p}: cannot parse: {exc}") from None
    if not isinstance(data, list):
        raise UsageError(f"{p}: expected a list of {what} rows")
    return p, data


def _raise(p: Path, problems: list[str]) -> None:
    if problems:
        raise UsageError(f"{p}: {len(problems)} problem(s)\n" +
                         "\n".join(f"  - {x}" for x in problems))


_ACL_STR_COLUMNS = ("cluster", "principal", "host", "resource_type", "resource_name",
                    "pattern_type", "permission", "state", "owner")


def load_acl_manifest_file(path: str | Path) -> list[tuple[Any, ...]]:
    """ACL_MANIFEST rows, in column order; shape errors reported all at once by row and key
    (whether a binding makes sense is the job's call, as data)."""
    p, data = _read_list(path, "ACL")
    problems: list[str] = []
    known = column_names(ACL_MANIFEST)
    rows = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            problems.append(f"row {i}: expected a mapping")
            continue
        where = f"row {i} ({item.get('principal')!r})"
        problems += [f"{where}.{k}: unknown column (columns: {', '.join(sorted(known))})"
                     for k in item if k not in known]
        values: dict[str, Any] = {k: None if item.get(k) is None else str(item[k])
                                  for k in _ACL_STR_COLUMNS}
        ops = item.get("operations")
        if isinstance(ops, str):
            ops = [ops]
        if ops is not None and not (isinstance(ops, list)
                                    and all(isinstance(o, str) for o in ops)):
            problems.append(f"{where}.operations: expected a list of operation names")
            ops = None
        values["operations"] = ops
        force = item.get("force")
        if force is not None and not isinstance(force, bool):
            problems.append(f"{where}.force: expected true or false")
            force = None
        values["force"] = force
        rows.append(tuple(values[c] for c in known))
    _raise(p, problems)
    return rows


def load_manifest_file(path: str | Path) -> list[tuple[Any, ...]]:
    """Rows in MANIFEST column order; type errors are reported all at once by row and key.

    Only the shape is checked here (a number where a number goes); whether a
    row makes sense is decided by the job, as data, so one bad row never
    stops the others.
    """
    p, data = _read_list(path, "topic")
    problems: list[str] = []
    rows = [_row(p, i, item, problems) for i, item in enumerate(data)]
    _raise(p, problems)
    return rows


def _row(p: Path, i: int, item: Any, problems: list[str]) -> tuple[Any, ...]:
    where = f"row {i}"
    if not isinstance(item, dict):
        problems.append(f"{where}: expected a mapping")
        return tuple(None for _ in MANIFEST.fields)
    where = f"row {i} ({item.get('topic')!r})"
    known = set(column_names(MANIFEST))
    for key in item:
        if key not in known:
            problems.append(f"{where}.{key}: unknown column (columns: {', '.join(sorted(known))})")
    values: dict[str, Any] = {}
    for key in _STR_COLUMNS:
        v = item.get(key)
        values[key] = None if v is None else str(v)
    for key in _INT_COLUMNS:
        v = item.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            problems.append(f"{where}.{key}: expected an integer, got {v!r}")
            v = None
        values[key] = v
    configs = item.get("configs")
    if configs is not None and not isinstance(configs, dict):
        problems.append(f"{where}.configs: expected a mapping of config name -> value")
        configs = None
    # Kafka configs are strings on the wire; YAML may have read 604800000 as a number.
    values["configs"] = None if configs is None else {
        str(k): _config_text(v) for k, v in configs.items()
    }
    assignment = item.get("replica_assignment")
    values["replica_assignment"] = None
    if assignment is not None:
        try:
            values["replica_assignment"] = {int(k): [int(b) for b in v]
                                            for k, v in assignment.items()}
        except (AttributeError, TypeError, ValueError):
            problems.append(f"{where}.replica_assignment: expected partition -> [broker ids]")
    force = item.get("force")
    if force is not None and not isinstance(force, bool):
        problems.append(f"{where}.force: expected true or false")
        force = None
    values["force"] = force
    return tuple(values[c] for c in column_names(MANIFEST))


def _config_text(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
