"""What a run tells of ACL bindings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class AclsSummary:
    """A run's ACL bindings: final outcome counts, bindings per cluster and action, the
    first listed bindings that did not simply stay as they were (each with its one-line
    `binding` text), revokes not made, and per cluster the live bindings left alone
    (unmanaged), the LITERAL TOPIC bindings naming no live topic (orphaned) and why a
    cluster's ACLs could not be changed."""

    counts: dict[str, int] = field(default_factory=dict)
    actions: list[dict[str, Any]] = field(default_factory=list)
    bindings: list[dict[str, Any]] = field(default_factory=list)
    bindings_not_listed: int = 0
    revokes_not_allowed: int = 0
    unmanaged: dict[str, int] = field(default_factory=dict)
    orphaned: dict[str, int] = field(default_factory=dict)
    clusters_not_changeable: dict[str, dict[str, str]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"acls": {"counts": self.counts, "actions": self.actions,
                         "bindings": self.bindings,
                         "bindings_not_listed": self.bindings_not_listed,
                         "revokes_not_allowed": self.revokes_not_allowed,
                         "unmanaged": self.unmanaged, "orphaned": self.orphaned,
                         "clusters_not_changeable": self.clusters_not_changeable}}
