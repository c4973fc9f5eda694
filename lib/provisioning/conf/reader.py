"""Reading parsed YAML while remembering every problem with the key it belongs to."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Keys that would hold a secret itself rather than the name of a variable holding it.
INLINE_SECRET_KEYS = (
    "password",
    "sasl_password",
    "sasl_plain_password",
    "sasl_username",
    "sasl_plain_username",
    "ssl_password",
    "secret",
)


T = TypeVar("T")


class Reader:
    """Walks the parsed YAML, remembering every problem with the key it belongs to."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def problem(self, key: str, message: str) -> None:
        self.problems.append(f"{key}: {message}")

    def mapping(self, node: Any, key: str) -> Mapping[str, Any] | None:
        if not isinstance(node, Mapping):
            self.problem(key, f"expected a mapping, got {type_name(node)}")
            return None
        return node

    def section(self, top: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
        """The mapping under `top[name]`; None when it is absent (or not a mapping)."""
        if top.get(name) is None:
            return None
        return self.mapping(top[name], name)

    def no_unknown(self, node: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> None:
        for name in node:
            if name not in allowed:
                where = f"{key}.{name}" if key else str(name)
                if str(name) in INLINE_SECRET_KEYS:
                    self.problem(
                        where,
                        "secrets must not be written in the conf; name the environment "
                        "variable that holds it (sasl_username_env / sasl_password_env)",
                    )
                else:
                    self.problem(where, f"unknown key (allowed: {', '.join(allowed)})")

    def value(
        self,
        node: Mapping[str, Any],
        key: str,
        name: str,
        kind: type[T] | tuple[type, ...],
        default: Any = ...,
        check: Callable[[Any], str | None] | None = None,
    ) -> Any:
        where = f"{key}.{name}" if key else name
        if name not in node or node[name] is None:
            if default is ...:
                self.problem(where, "required key is missing")
            return None if default is ... else default
        raw = node[name]
        # bool is an int subclass: `partitions: true` must not pass as 1.
        if isinstance(raw, bool) and kind is not bool:
            self.problem(where, f"expected {kind_name(kind)}, got a boolean")
            return None if default is ... else default
        if not isinstance(raw, kind):
            self.problem(where, f"expected {kind_name(kind)}, got {type_name(raw)}")
            return None if default is ... else default
        if check is not None:
            message = check(raw)
            if message:
                self.problem(where, message)
        return raw


def type_name(value: Any) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", int: "an integer",
            float: "a number", bool: "a boolean"}.get(type(value), type(value).__name__)


def kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", bool: "a boolean", list: "a list",
             dict: "a mapping", float: "a number"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def one_of(choices: tuple[str, ...]) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if v in choices else f"{v!r} is not one of {', '.join(choices)}"

    return check


def positive(v: Any) -> str | None:
    return None if v > 0 else f"must be > 0, got {v}"


def at_least_zero(v: Any) -> str | None:
    return None if v >= 0 else f"must be >= 0, got {v}"


def env_name(v: Any) -> str | None:
    if _ENV_NAME.match(v):
        return None
    return (
        "must be the NAME of an environment variable (letters, digits, _), "
        "not the secret itself"
    )


def readable_file(v: Any) -> str | None:
    path = Path(v)
    if not path.is_file():
        return f"no such file: {v} (relative paths are taken from the directory the job runs in)"
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        return f"cannot read {v}: {exc.strerror or exc}"
    return None


def bootstrap(v: Any) -> str | None:
    parts = [p.strip() for p in v.split(",")]
    bad = [p for p in parts if not re.match(r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+):\d{1,5}$", p)]
    return f"expected host:port[,host:port...], bad entries: {bad}" if bad or not v else None




def string_list(r: Reader, node: Mapping[str, Any], key: str, name: str,
                default: tuple[str, ...]) -> tuple[str, ...]:
    """`node[name]`, a list of strings (`default` when absent or null)."""
    if name not in node or node[name] is None:
        return default
    raw = node[name]
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        r.problem(f"{key}.{name}", "expected a list of strings")
        return default
    return tuple(raw)


def table_list(r: Reader, node: Mapping[str, Any], key: str, name: str) -> tuple[str, ...]:
    """`node[name]`: a table path or name, or a non-empty list of them."""
    raw = node.get(name)
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list) and raw and all(isinstance(x, str) and x for x in raw):
        return tuple(raw)
    r.problem(f"{key}.{name}", "expected a table path or name, or a non-empty list of them")
    return ()
