r"""The models of the policies' parameter blocks (no Spark here): the value types their
parameters are read with, the custom policy's model, the catalogue of the policies a conf
may name (each kind's section declares its own: `Section.policy_models`, policy key ->
policy name -> the data class of its parameters), and the problems of one block.

The conf's model reads each list of `policies` as a union of these models told apart by
`name` (`conf.validate`), so a bad block is reported with the other conf problems, by key,
and the conf's JSON Schema checks every policy's parameters; the transforms that enforce
the policies are built from the same names and check their block again
(`require_valid`). A custom policy's `callable` is imported here to prove it exists.

What one parameter cannot say is declared on the model and checked across its parameters
(`cross_problems`): `at_least_one` (one of these parameters is set) and `ordered`
(low <= high).

Regular expressions are checked with Python's `re`; Spark evaluates them with
java.util.regex. The two agree on the syntax policies need (classes, groups,
alternation, quantifiers); the one common Python-only construct, `(?P<name>...)`,
is refused here. Java-only syntax such as `\p{Alpha}` is refused by `re` too,
which errs on the safe side.
"""

from __future__ import annotations

import importlib
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from provisioning.conf.errors import describe, type_name
from provisioning.errors import PolicyError

try:  # the loader's side only (conf.model says why)
    from pydantic import BeforeValidator, Field, TypeAdapter, ValidationError, WithJsonSchema
except ImportError:  # pragma: no cover
    if TYPE_CHECKING:
        raise

if TYPE_CHECKING:
    from provisioning.conf.section import Section


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` is not a usable regular expression, or None."""
    try:
        re.compile(pattern)
    except re.error as exc:
        # Quoted as written: a repr would double every backslash of the pattern.
        return f"not a valid regular expression '{pattern}': {exc}"
    if "(?P" in pattern:
        # Valid for Python, a PatternSyntaxException in Spark, mid-run.
        return (f"'{pattern}' uses Python-only (?P...) named groups; Spark evaluates Java "
                "regular expressions: use a plain group")
    return None


# -- the value checks of parameters: each raises ValueError with the problem's message ---

MISSING = "required parameter is missing"


def optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`check` of a parameter that may be left out (null: left out)."""
    return lambda v: None if v is None else check(v)


def required(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`check` of a parameter that must be set (null: missing)."""
    def run(v: Any) -> Any:
        if v is None:
            raise ValueError(MISSING)
        return check(v)
    return run


def regex(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError(f"expected a regular expression string, got {type_name(v)}")
    if message := regex_problem(v):
        raise ValueError(message)
    return v


def keyed(v: Any) -> dict[str, Any]:
    if not isinstance(v, Mapping) or not all(isinstance(k, str) and k for k in v):
        raise ValueError(f"expected a mapping with non-empty string keys, got {type_name(v)}")
    return dict(v)


def _callable(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError("expected a string 'package.module:function'")
    resolve_callable(v)
    return v


def string_list(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
        raise ValueError("expected a non-empty list of non-empty strings")
    return tuple(v)


if "Field" in globals():  # the loader's side (conf.model says why)
    _REGEX = {"type": "string", "format": "regex"}
    Regex = Annotated[str | None, BeforeValidator(optional(regex)), WithJsonSchema(_REGEX)]
    # {key: regex}, e.g. an owner's naming rule.
    RegexMap = Annotated[dict[str, Annotated[str, BeforeValidator(regex)]] | None,
                         BeforeValidator(optional(keyed)), WithJsonSchema(
                             {"type": "object", "additionalProperties": _REGEX})]
    StringList = Annotated[tuple[str, ...] | None, BeforeValidator(optional(string_list)),
                           WithJsonSchema({"type": "array", "minItems": 1,
                                           "items": {"type": "string", "minLength": 1}})]
    RequiredStringList = Annotated[tuple[str, ...], BeforeValidator(required(string_list)),
                                   WithJsonSchema({"type": "array", "minItems": 1, "items": {
                                       "type": "string", "minLength": 1}})]
    AtLeast0 = Annotated[int, Field(strict=True, ge=0)]
    AtLeast1 = Annotated[int, Field(strict=True, ge=1)]
    # A custom policy's function, imported to prove it exists.
    Target = Annotated[str, BeforeValidator(required(_callable)), WithJsonSchema(
        {"type": "string", "pattern": r"^[\w.]+[:.][\w.]+$"})]


@dataclass(frozen=True)
class Custom:
    """A team's own policy: `callable` judges the rows; every other parameter is passed to
    it."""

    __pydantic_config__: ClassVar[Any] = {"extra": "allow"}
    callable: Annotated[Target, Field(
        description="The function that judges the rows: 'package.module:function' (it must "
                    "import where the conf is loaded).")]


# -- custom policies --------------------------------------------------------------------

def resolve_callable(target: str) -> Callable[..., Any]:
    """Import "package.module:function" (or "package.module.function"); ValueError says why not."""
    module_name, sep, attr_path = target.partition(":")
    if not sep:
        module_name, _, attr_path = target.rpartition(".")
    if not module_name or not attr_path:
        raise ValueError(f"expected 'package.module:function', got {target!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # an import may fail in any way the module's own code does
        raise ValueError(f"cannot import module {module_name!r}: "
                         f"{type(exc).__name__}: {exc}") from None
    for attr in attr_path.split("."):
        if not hasattr(obj, attr):
            raise ValueError(f"module {module_name!r} has no attribute {attr_path!r}")
        obj = getattr(obj, attr)
    if not callable(obj):
        raise ValueError(
            f"{target!r} is not callable (it is an object of type {type(obj).__name__})")
    return obj  # type: ignore[no-any-return]


def catalogue(kind: str, parts: Sequence[Section]) -> Mapping[str, type]:
    """The policies a conf may name under `policies.<kind>`, with the models of their
    parameter blocks: the kinds' conf sections (`parts`) declare them
    (`Section.policy_models`)."""
    for section in parts:
        if kind in section.policy_models:
            return section.policy_models[kind]
    raise KeyError(f"no registered kind declares policies.{kind}")


def parameters(model: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(model))


def unknown_parameter(model: type) -> str:
    return f"unknown parameter (allowed: {', '.join(parameters(model)) or 'none'})"


def message(model: type, error: Any, loc: tuple[str | int, ...]) -> str:
    """The problem's message (without its key) for one of pydantic's errors inside a
    parameter block of `model`."""
    if error["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        return unknown_parameter(model)
    if error["type"] in ("missing", "missing_argument"):
        return MISSING
    return describe(error, loc)


def cross_problems(model: type, params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(parameter, message) of what `model` declares across its parameters."""
    out = []
    names: tuple[str, ...] = getattr(model, "at_least_one", ())
    if names and not any(params.get(n) is not None for n in names):
        out.append((names[0], f"set at least one of {', '.join(names)}"))
    pair: tuple[str, str] | None = getattr(model, "ordered", None)
    if pair:
        low, high = pair
        lo, hi = params.get(low), params.get(high)
        if (lo is not None and hi is not None and _reads(model, low, lo)
                and _reads(model, high, hi) and lo > hi):
            out.append((low, f"must be <= {high} ({lo} > {hi})"))
    return out


def _reads(model: type, name: str, value: Any) -> bool:
    """Whether `value` is a good value of `model`'s parameter `name`."""
    hint = typing.get_type_hints(model, include_extras=True)[name]
    try:
        TypeAdapter(hint).validate_python(value)
    except ValidationError:
        return False
    return True


def block_problems(model: type, params: Mapping[str, Any]) -> list[str]:
    """Every problem of a parameter block of `model`, "param: message": unknown parameters
    as written, then the model's parameters in order."""
    found: list[tuple[tuple[int, int], str]] = []
    names, written = parameters(model), list(params)
    try:
        TypeAdapter(model).validate_python(dict(params))
    except ValidationError as exc:
        for error in exc.errors():
            loc = tuple(error["loc"])
            rank = (1, names.index(loc[0])) if loc[0] in names else (
                0, written.index(loc[0]) if loc[0] in written else 0)
            found.append((rank, f"{'.'.join(map(str, loc))}: {message(model, error, loc)}"))
    found += [((1, names.index(p)), f"{p}: {m}") for p, m in cross_problems(model, params)]
    return [m for _, m in sorted(found, key=lambda f: f[0])]


def check_custom(params: Mapping[str, Any]) -> list[str]:
    """The problems of a custom policy's block: `callable` must name an importable function;
    every other parameter is passed through."""
    return block_problems(Custom, params)


def require_valid(models: Mapping[str, type], kind: str, name: str,
                  params: Mapping[str, Any]) -> None:
    """Raise PolicyError naming every problem of a `kind` policy's parameter block (`models`:
    the kind's policies, with the models of their parameter blocks)."""
    problems = block_problems(models[name], params)
    if problems:
        raise PolicyError(f"{kind} policy {name}: {'; '.join(problems)}")
