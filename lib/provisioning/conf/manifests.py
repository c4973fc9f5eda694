"""The rows of manifest files (the YAML or JSON lists `load_manifest` writes to a kind's
manifest table): the value types of their columns, the reading of a file's rows against
a kind's row model (`Section.manifest_row`), and the files' JSON Schema.

Only a row's shape is checked here (a number where a number goes); whether a row makes
sense is the job's call, as data, so one bad row never stops the others. Every shape
problem of a file is reported at once, by row and column.

    python -m provisioning.conf.manifests schemas/manifest.schema.json
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator, Field, TypeAdapter, ValidationError, WithJsonSchema

from provisioning.conf.schema import DIALECT

if TYPE_CHECKING:
    from provisioning.conf.section import Section


def _text(v: Any) -> Any:
    # A scalar YAML read as a number or a boolean is the text it was written as.
    return None if v is None else str(v)


def _integer(v: Any) -> Any:
    if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
        raise ValueError(f"expected an integer, got {v!r}")
    return v


def _configs(v: Any) -> Any:
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise ValueError("expected a mapping of config name -> value")
    # Kafka configs are strings on the wire; YAML may have read 604800000 as a number.
    return {str(k): None if x is None else "true" if x is True else "false" if x is False
            else str(x) for k, x in v.items()}


def _flag(v: Any) -> Any:
    if v is not None and not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


# A text column: a string (a number or a boolean is read as its text) or null.
Text = Annotated[str | None, BeforeValidator(_text),
                 WithJsonSchema({"type": ["string", "number", "boolean", "null"]})]
# An integer column (never a boolean), or null; its bounds are the job's to judge.
Integer = Annotated[int | None, BeforeValidator(_integer),
                    WithJsonSchema({"type": ["integer", "null"]})]
# A map of Kafka configs (name -> value; numbers and booleans read as the text Kafka takes).
Configs = Annotated[dict[str, str | None] | None, BeforeValidator(_configs), WithJsonSchema(
    {"type": ["object", "null"],
     "additionalProperties": {"type": ["string", "number", "boolean", "null"]}})]
# A row's `force`: true, false or absent.
Force = Annotated[bool | None, BeforeValidator(_flag),
                  WithJsonSchema({"type": ["boolean", "null"]})]
# The `force` column of every kind's manifest rows.
ForceColumn = Annotated[Force, Field(description="Lift the policies that allow it for this "
                                                 "row.")]


def read_rows(data: list[Any], model: type, label: Callable[[Mapping[str, Any]], str]
              ) -> tuple[list[dict[str, Any] | None], list[str]]:
    """Each item of `data` read against `model` (None where it was refused), and every
    problem, "row I (LABEL).column: message" in the rows' order.

    label: what names a row in a problem (its topic, principal or entity)."""
    adapter = _adapter(model)
    columns = [f.name for f in dataclasses.fields(model)]
    rows: list[dict[str, Any] | None] = []
    problems: list[str] = []
    for i, item in enumerate(data):
        if not isinstance(item, Mapping):
            problems.append(f"row {i}: expected a mapping")
            rows.append(None)
            continue
        try:
            row = adapter.validate_python(dict(item))
        except ValidationError as exc:
            where = f"row {i} ({label(item)})"
            written = list(item)
            errors = sorted(exc.errors(), key=lambda e: _rank(e, columns, written))
            problems += [f"{where}.{'.'.join(map(str, e['loc']))}: {_message(e, columns)}"
                         for e in errors]
            rows.append(None)
            continue
        rows.append({c: getattr(row, c) for c in columns})
    return rows, problems


@functools.cache
def _adapter(model: type) -> TypeAdapter[Any]:
    return TypeAdapter(model)


def _rank(error: Any, columns: list[str], written: list[Any]) -> tuple[int, int]:
    """Unknown columns first, as written; then the model's columns in order."""
    column = error["loc"][0]
    if error["type"] == "unexpected_keyword_argument" or column not in columns:
        return (0, written.index(column) if column in written else 0)
    return (1, columns.index(column))


def _message(error: Any, columns: list[str]) -> str:
    if error["type"] == "unexpected_keyword_argument" or error["loc"][0] not in columns:
        return f"unknown column (columns: {', '.join(sorted(columns))})"
    if error["type"] == "value_error":
        return str(error["ctx"]["error"])
    return str(error["msg"])


def manifest_schema(parts: Sequence[Section]) -> dict[str, Any]:
    """The manifest files' JSON Schema: a list of one kind's rows, for every kind with
    manifest files (`Section.manifest_row`) among the kinds' sections `parts`."""
    defs: dict[str, Any] = {}
    kinds = []
    for part in parts:
        if part.manifest_row is None:
            continue
        name = part.manifest_row.__name__
        schema = TypeAdapter(part.manifest_row).json_schema(
            mode="validation", ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        defs[name] = schema
        kind = part.file_kind or part.kind
        kinds.append({"title": f"{kind} manifest", "type": "array",
                      "description": f"`load_manifest --kind {kind}`: a list of "
                                     f"{kind} manifest rows.",
                      "items": {"$ref": f"#/$defs/{name}"}})
    return {"$schema": DIALECT, "title": "Manifest",
            "description": "A manifest file of the topic provisioning job: a list of rows "
                           "of one kind, which `load_manifest` writes to that kind's "
                           "manifest table.",
            "anyOf": kinds, "$defs": defs}

