"""Create and delete policies: small named DataFrame transforms that append violations."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from provisioning.policies.registry import CREATE_POLICIES, DELETE_POLICIES

if TYPE_CHECKING:
    from provisioning.conf import PolicySpec


def check_policy_specs(specs: Iterable[PolicySpec], kind: str) -> list[str]:
    """Problems with configured policies: unknown names and bad parameter blocks."""
    registry = CREATE_POLICIES if kind == "create" else DELETE_POLICIES
    problems = []
    for spec in specs:
        entry = registry.get(spec.name)
        if entry is None:
            known = ", ".join(sorted(registry)) or "none"
            problems.append(
                f"{spec.key}.name: unknown {kind} policy {spec.name!r} (known: {known})")
            continue
        problems.extend(f"{spec.key}.{p}" for p in entry.check(spec.params))
    return problems
