"""The file's model (every part of the conf's data classes plus every kind's section) and
the reading of parsed YAML against it with pydantic, every problem named by its key.

Each top-level key is read on its own, so the parts that are right are read even when
others are not, and the rules across keys (`conf.rules`) still see them: every problem of
a file is reported at once.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

from provisioning.conf.errors import INLINE_SECRET_KEYS, SECRET_KEY_HINTS, describe
from provisioning.conf.model import (
    ChecksConf,
    ClusterConf,
    KafkaConf,
    MaintenanceConf,
    RunConf,
    SparkConf,
    TablesConf,
)
from provisioning.conf.policies import catalogue, message
from provisioning.conf.section import Section

Loc = tuple[str | int, ...]
# The registered kinds' sections, in registry order (the command line hands them over).
Sections = tuple[Section, ...]
_FORBID = ConfigDict(extra="forbid")

# What each shared top-level key holds, in the order the file's keys are listed.
_SHARED: dict[str, tuple[Any, str]] = {
    "clusters": (None, "The Kafka clusters the job manages, by name (letters, digits, "
                       "'.', '_', '-'): how it connects to each."),
    "tables": (None, "The Delta tables the job reads and writes."),
    "kafka": (KafkaConf, "How the admin requests are sized, timed and retried."),
    "spark": (SparkConf, "The Spark session the job runs on."),
    "policies": (None, "The policies each plan is judged by, per kind of change, in order."),
    "run": (RunConf, "The lease a run holds on its clusters."),
    "maintenance": (MaintenanceConf, "What `maintain` keeps."),
    "checks": (ChecksConf, "How `check` judges the live topics and brokers."),
}
_CLUSTER_NAME = r"^[A-Za-z0-9_.-]+$"


def _dataclass_fields(cls: type) -> dict[str, Any]:
    """A data class's fields as `create_model` takes them: (annotation, default)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default: Any = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = Field(default_factory=f.default_factory)
        else:
            default = ...
        out[f.name] = (hints[f.name], default)
    return out


def _summary(model: type) -> str:
    """What a key's mapping is for: its class's docstring after "The `key` mapping: "."""
    doc = " ".join((model.__doc__ or "").split())
    what = doc.split(" mapping: ", 1)[-1]
    return what[:1].upper() + what[1:]


def _policy_item(key: str, name: str, model: type) -> type[BaseModel]:
    """One policy of `policies.<key>`: its `name` and the parameters of its model."""
    config = getattr(model, "__pydantic_config__", {})
    one_of = getattr(model, "at_least_one", ())
    title = "".join(p.capitalize() for p in (key, *name.split("_"), "policy"))
    named: Any = Literal[name]
    return create_model(
        title, __config__=ConfigDict(
            extra=config.get("extra", "forbid"), title=title,
            json_schema_extra={"anyOf": [{"required": [p]} for p in one_of]} if one_of
            else None),
        __doc__=f"`{name}` in `policies.{key}`: {model.__doc__}",
        name=(named, Field(description="The policy's name.")),
        **_dataclass_fields(model))


def _policy_list(key: str, models: Mapping[str, type]) -> Any:
    """`policies.<key>`: a list of its policies, each told apart by its `name`."""
    items = tuple(_policy_item(key, name, model) for name, model in sorted(models.items()))
    either: Any = Union[items]  # noqa: UP007 - a union of a tuple of models
    return list[Annotated[either, Field(discriminator="name")]] | None


@functools.cache
def file_model(parts: Sections) -> type[BaseModel]:
    """The model of the whole file: the shared keys, then every kind's (`parts`), in
    registry order."""
    table_fields = _dataclass_fields(TablesConf)
    for part in parts:
        if part.tables_model is not None:
            table_fields.update(_dataclass_fields(part.tables_model))
    tables = create_model("Tables", __config__=_FORBID, __doc__=TablesConf.__doc__,
                          **table_fields)
    policy_fields: dict[str, Any] = {
        key: (_policy_list(key, models),
              Field(None, description=f"The `{key}` policies, judged in this order."))
        for part in parts for key, models in part.policy_models.items()}
    policies = create_model("Policies", __config__=_FORBID,
                            __doc__="The policies of each kind of change.", **policy_fields)
    cluster_name = Annotated[str, Field(pattern=_CLUSTER_NAME)]
    fields: dict[str, Any] = {}
    for key, (model, description) in _SHARED.items():
        if key == "clusters":
            fields[key] = (dict[cluster_name, ClusterConf],  # type: ignore[valid-type]
                           Field(min_length=1, description=description))
        elif key == "tables":
            fields[key] = (tables, Field(description=description))
        elif key == "policies":
            fields[key] = (policies, Field(default_factory=policies, description=description))
        else:
            fields[key] = (model, Field(default_factory=model, description=description))
    for part in parts:
        for key, model in part.key_models.items():
            fields[key] = (model, Field(default_factory=model, description=_summary(model)))
    return create_model("Conf", __config__=ConfigDict(extra="forbid", title="Conf"),
                        __doc__="The conf of the topic provisioning job (one file per "
                                "environment).", **fields)


@functools.cache
def _adapter(parts: Sections, key: str) -> TypeAdapter[Any]:
    return TypeAdapter(_annotated(file_model(parts).model_fields[key]))


def read_file(top: Mapping[str, Any], parts: Sections
              ) -> tuple[dict[str, Any], list[tuple[Loc, str]]]:
    """Every top-level key read against its model (the ones read without a problem), and
    the problems, each with where it is."""
    model = file_model(parts)
    problems: list[tuple[Loc, str]] = []
    values: dict[str, Any] = {}
    allowed = tuple(model.model_fields)
    for key in top:
        if key not in model.model_fields:
            problems.append(((key,), describe_unknown(str(key), allowed)))
    for key, info in model.model_fields.items():
        if key not in top or top[key] is None:
            if info.is_required():
                problems.append(((key,), "required key is missing"))
            continue
        raw = _without_nulls(top[key], (key,), parts)
        try:
            values[key] = _adapter(parts, key).validate_python(raw)
        except ValidationError as exc:
            problems.extend(_problems_of(exc, (key,), parts))
    return values, problems


def describe_unknown(name: str, allowed: tuple[str, ...]) -> str:
    if name in INLINE_SECRET_KEYS:
        hint = SECRET_KEY_HINTS.get(name, "sasl_username_env / sasl_password_env, or their "
                                          "*_file keys")
        return ("secrets must not be written in the conf; name the environment variable "
                f"or the file that holds it ({hint})")
    return f"unknown key (allowed: {', '.join(allowed)})"


def _problems_of(exc: ValidationError, prefix: Loc, parts: Sections
                 ) -> list[tuple[Loc, str]]:
    out = []
    for error in exc.errors():
        loc = prefix + tuple(error["loc"])
        if loc[-1] == "[key]":  # a mapping's key (a cluster's name)
            loc = loc[:-1]
        if loc[0] == "policies" and len(loc) >= 3:
            out.append(_policy_problem(error, loc, parts))
            continue
        if error["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
            out.append((loc, describe_unknown(str(loc[-1]), keys_at(loc[:-1], parts))))
        else:
            out.append((loc, describe(error, loc)))
    return out


def _policy_problem(error: Any, loc: Loc, parts: Sections) -> tuple[Loc, str]:
    """A problem of the policy at `loc[:3]`: its name, or one of its parameters (pydantic
    puts the policy's name, the union's tag, after the policy's index)."""
    key, value = str(loc[1]), error.get("input")
    if len(loc) == 3:
        name = value.get("name") if isinstance(value, Mapping) else None
        if error["type"] == "union_tag_invalid" and isinstance(name, str):
            known = ", ".join(sorted(catalogue(key, parts))) or "none"
            return (*loc, "name"), f"unknown {key} policy {name!r} (known: {known})"
        # A policy is a mapping with a name; anything else is that, whatever is wrong.
        return loc, "expected a mapping with a `name` and the policy's parameters"
    where = (*loc[:3], *loc[4:])
    return where, message(catalogue(key, parts)[str(loc[3])], error, where)


def _annotated(info: Any) -> Any:
    """A model field's type with its constraints, as a TypeAdapter reads it."""
    return Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation


def _strip(tp: Any) -> tuple[Any, bool]:
    """The type under Annotated and Optional, and whether None is allowed."""
    optional = False
    while True:
        if typing.get_origin(tp) is Annotated:
            tp = typing.get_args(tp)[0]
        elif typing.get_origin(tp) in (Union, type(int | None)):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            optional = optional or len(args) < len(typing.get_args(tp))
            if len(args) != 1:
                return tp, optional
            tp = args[0]
        else:
            return tp, optional


def _fields(tp: Any) -> dict[str, Any] | None:
    """A model's or data class's fields with their annotations (None: not one)."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return {k: _annotated(v) for k, v in tp.model_fields.items()}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp, include_extras=True)
        return {f.name: hints[f.name] for f in dataclasses.fields(tp)
                if f.name != "name" or tp is not ClusterConf}
    return None


def type_at(loc: Loc, parts: Sections) -> Any:
    """The type the file's model expects at `loc` (None: not a place the model knows)."""
    tp: Any = file_model(parts)
    for part in loc:
        tp, _ = _strip(tp)
        fields = _fields(tp)
        if fields is not None:
            if part not in fields:
                return None
            tp = fields[part]
            continue
        args = typing.get_args(tp)
        origin = typing.get_origin(tp)
        if origin in (dict, Mapping, typing.get_origin(Mapping[str, str])) and len(args) == 2:
            tp = args[1]
        elif origin in (list, tuple) and args:
            tp = args[0]
        else:
            return None
    return tp


def keys_at(loc: Loc, parts: Sections, node: Any = None) -> tuple[str, ...]:
    """The keys the model knows at `loc`; in a list of policies, those of the policy
    `node` (as written) names."""
    tp = _strip(type_at(loc, parts))[0]
    if typing.get_origin(tp) is Union and isinstance(node, Mapping):
        tp = next((m for m in typing.get_args(tp) if isinstance(m, type)
                   and issubclass(m, BaseModel) and "name" in m.model_fields
                   and typing.get_args(m.model_fields["name"].annotation) == (
                       node.get("name"),)), None)
    fields = _fields(tp)
    return tuple(fields or ())


def _without_nulls(node: Any, loc: Loc, parts: Sections) -> Any:
    """`node` without the keys set to null whose value may not be null: a null there means
    "the default", as a key left out does."""
    if not isinstance(node, Mapping):
        return node
    fields = _fields(_strip(type_at(loc, parts))[0])
    out = {}
    for key, value in node.items():
        where = (*loc, key)
        if value is None and fields is not None and key in fields \
                and not _strip(fields[key])[1]:
            continue
        out[key] = _without_nulls(value, where, parts)
    return out


def order(problems: list[tuple[Loc, str]], top: Mapping[str, Any], parts: Sections
          ) -> list[tuple[Loc, str]]:
    """Problems in the file's order: under each key, its unknown keys first (as written),
    then its keys in the order the model lists them (the entries of a list or a mapping
    by name as written); one key's in the order found."""
    def rank(loc: Loc) -> tuple[tuple[int, int], ...]:
        ranks = []
        node: Any = top
        for i, part in enumerate(loc):
            known = keys_at(loc[:i], parts, node)
            written = list(node) if isinstance(node, Mapping) else []
            if isinstance(part, int):
                ranks.append((1, part))
            elif part in known:
                ranks.append((1, known.index(part)))
            elif not known and part in written:
                ranks.append((1, written.index(part)))
            else:
                ranks.append((0, 0))
            node = _child(node, part)
        return tuple(ranks)

    return sorted(problems, key=lambda p: rank(p[0]))


def _child(node: Any, part: str | int) -> Any:
    if isinstance(node, Mapping):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and part < len(node):
        return node[part]
    return None


def key_name(loc: Loc) -> str:
    """`policies.create[1].name` for ("policies", "create", 1, "name")."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def loc_of(problem: str) -> Loc:
    """The place a problem written "key: message" names: ("policies", "create", 1, ...)."""
    key = problem.split(": ", 1)[0]
    loc: list[str | int] = []
    for part in key.split("."):
        name, *indexes = part.split("[")
        loc += [name] if name else []
        loc += [int(i.rstrip("]")) for i in indexes]
    return tuple(loc)
