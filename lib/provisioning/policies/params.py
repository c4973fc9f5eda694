r"""Checks of a configured policy's parameter block, reported as "param: message".

Regular expressions are checked with Python's `re`; Spark evaluates them with
java.util.regex. The two agree on the syntax policies need (classes, groups,
alternation, quantifiers); the one common Python-only construct, `(?P<name>...)`,
is refused here. Java-only syntax such as `\p{Alpha}` is refused by `re` too,
which errs on the safe side.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


def _type_name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", int: "an integer",
            float: "a number", bool: "a boolean"}.get(type(value), type(value).__name__)


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
            self.problem(name, f"expected an integer, got {_type_name(raw)}")
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
            self.problem(name, f"expected a regular expression string, got {_type_name(raw)}")
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
                         f"got {_type_name(raw)}")
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
                             f"got {_type_name(value) if value is not None else 'nothing'}")
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
                             f"{_type_name(value) if value is not None else 'nothing'}")
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
