r"""How a policy's parameter block is checked (no Spark here), and the catalogue of the
policies a conf may name, gathered from the kinds' conf sections.

The conf loader checks every configured policy against its kind's catalogue
(`Section.policy_checks`), so a bad block is reported with the other conf problems, by
key; the transforms that enforce the policies are built from the same names. A custom
policy's `callable` is imported here to prove it exists.

Regular expressions are checked with Python's `re`; Spark evaluates them with
java.util.regex. The two agree on the syntax policies need (classes, groups,
alternation, quantifiers); the one common Python-only construct, `(?P<name>...)`,
is refused here. Java-only syntax such as `\p{Alpha}` is refused by `re` too,
which errs on the safe side.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from provisioning.conf.model import PolicySpec
from provisioning.errors import PolicyError

Check = Callable[[Mapping[str, Any]], list[str]]


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


def type_name(value: Any) -> str:
    """How a problem names the type of a value the file holds."""
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", int: "an integer",
            float: "a number", bool: "a boolean"}.get(type(value), type(value).__name__)


class Params:
    """One policy's parameter block, and every problem found in it so far.

    allowed: the parameter names the policy knows; None accepts any (custom policies).
    """

    def __init__(self, params: Mapping[str, Any], allowed: tuple[str, ...] | None) -> None:
        self.params = params
        self.problems: list[str] = []
        if allowed is not None:
            for name in params:
                if name not in allowed:
                    self.problem(str(name), "unknown parameter (allowed: "
                                 f"{', '.join(allowed) or 'none'})")

    def problem(self, param: str, message: str) -> None:
        self.problems.append(f"{param}: {message}")

    def given(self, name: str) -> bool:
        return self.params.get(name) is not None

    def integer(self, name: str, minimum: int, required: bool = False) -> int | None:
        """An int >= minimum (never a boolean), or None when absent."""
        raw = self.params.get(name)
        if raw is None:
            if required:
                self.problem(name, "required parameter is missing")
            return None
        if isinstance(raw, bool) or not isinstance(raw, int):
            self.problem(name, f"expected an integer, got {type_name(raw)}")
            return None
        if raw < minimum:
            self.problem(name, f"must be >= {minimum}, got {raw}")
            return None
        return raw

    def regex(self, name: str) -> str | None:
        raw = self.params.get(name)
        if raw is None:
            return None
        if not isinstance(raw, str):
            self.problem(name, f"expected a regular expression string, got {type_name(raw)}")
            return None
        message = regex_problem(raw)
        if message:
            self.problem(name, message)
            return None
        return raw

    def mapping(self, name: str, required: bool = False) -> Mapping[str, Any] | None:
        raw = self.params.get(name)
        if raw is None:
            if required:
                self.problem(name, "required parameter is missing")
            return None
        if not isinstance(raw, Mapping) or not all(isinstance(k, str) and k for k in raw):
            self.problem(name, f"expected a mapping with non-empty string keys, "
                         f"got {type_name(raw)}")
            return None
        return raw

    def regex_map(self, name: str, required: bool = False,
                  nullable_values: bool = False) -> Mapping[str, str | None] | None:
        """{key: regex}; with nullable_values a null value means "any value"."""
        raw = self.mapping(name, required)
        if raw is None:
            return None
        good: dict[str, str | None] = {}
        for key, value in raw.items():
            where = f"{name}.{key}"
            if value is None and nullable_values:
                good[key] = None
            elif not isinstance(value, str):
                self.problem(where, f"expected a regular expression string, "
                             f"got {type_name(value) if value is not None else 'nothing'}")
            elif message := regex_problem(value):
                self.problem(where, message)
            else:
                good[key] = value
        return good

    def int_map(self, name: str, minimum: int, required: bool = False) -> Mapping[str, int] | None:
        raw = self.mapping(name, required)
        if raw is None:
            return None
        good: dict[str, int] = {}
        for key, value in raw.items():
            where = f"{name}.{key}"
            if isinstance(value, bool) or not isinstance(value, int):
                self.problem(where, f"expected an integer, got "
                             f"{type_name(value) if value is not None else 'nothing'}")
            elif value < minimum:
                self.problem(where, f"must be >= {minimum}, got {value}")
            else:
                good[key] = value
        return good

    def string_list(self, name: str, required: bool = False) -> list[str] | None:
        """A non-empty list of non-empty strings."""
        raw = self.params.get(name)
        if raw is None:
            if required:
                self.problem(name, "required parameter is missing")
            return None
        if (not isinstance(raw, list) or not raw
                or not all(isinstance(x, str) and x for x in raw)):
            self.problem(name, "expected a non-empty list of non-empty strings")
            return None
        return list(raw)

    def at_least_one(self, *names: str) -> None:
        if not any(self.given(n) for n in names):
            self.problem(names[0], f"set at least one of {', '.join(names)}")

    def ordered(self, low: str, high: str) -> None:
        lo, hi = self.params.get(low), self.params.get(high)
        if (isinstance(lo, int) and isinstance(hi, int)
                and not isinstance(lo, bool) and not isinstance(hi, bool) and lo > hi):
            self.problem(low, f"must be <= {high} ({lo} > {hi})")


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


def check_custom(params: Mapping[str, Any]) -> list[str]:
    """`callable` must name an importable function; every other parameter is passed through."""
    p = Params(params, allowed=None)
    target = params.get("callable")
    if target is None:
        p.problem("callable", "required parameter is missing")
    elif not isinstance(target, str):
        p.problem("callable", "expected a string 'package.module:function'")
    else:
        try:
            resolve_callable(target)
        except ValueError as exc:
            p.problem("callable", str(exc))
    return p.problems


def catalogue(kind: str) -> Mapping[str, Check]:
    """The policies a conf may name under `policies.<kind>`, with their parameter checks:
    the registered kinds' conf sections declare them (`Section.policy_checks`)."""
    from provisioning.conf.section import sections

    for section in sections():
        if kind in section.policy_checks:
            return section.policy_checks[kind]
    raise KeyError(f"no registered kind declares policies.{kind}")


def check_policy_specs(specs: Iterable[PolicySpec], kind: str) -> list[str]:
    """Problems with configured policies of `kind`: unknown names and bad parameter blocks."""
    checks = catalogue(kind)
    problems = []
    for spec in specs:
        check = checks.get(spec.name)
        if check is None:
            known = ", ".join(sorted(checks)) or "none"
            problems.append(
                f"{spec.key}.name: unknown {kind} policy {spec.name!r} (known: {known})")
            continue
        problems.extend(f"{spec.key}.{p}" for p in check(spec.params))
    return problems


def require_valid(kind: str, name: str, params: Mapping[str, Any]) -> None:
    """Raise PolicyError naming every problem of a `kind` policy's parameter block."""
    problems = catalogue(kind)[name](params)
    if problems:
        raise PolicyError(f"{kind} policy {name}: {'; '.join(problems)}")
