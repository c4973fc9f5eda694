"""The policies a conf may name, with their parameter checks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PolicyEntry:
    name: str
    # Returns problems as "param: message"; empty when the parameter block is valid.
    check: Callable[[Mapping[str, Any]], list[str]]


CREATE_POLICIES: dict[str, PolicyEntry] = {}
DELETE_POLICIES: dict[str, PolicyEntry] = {}
