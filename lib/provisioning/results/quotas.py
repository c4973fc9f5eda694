"""What a run tells of client quotas."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class QuotasSummary:
    """A run's client quotas: final outcome counts, quotas per cluster and action, the first
    listed quotas that did not simply stay as they were, removals not made, and per cluster
    the live quotas left alone (unlisted) and why a cluster's quotas could not be read."""

    counts: dict[str, int] = field(default_factory=dict)
    actions: list[dict[str, Any]] = field(default_factory=list)
    quotas: list[dict[str, Any]] = field(default_factory=list)
    quotas_not_listed: int = 0
    removals_not_allowed: int = 0
    unmanaged: dict[str, int] = field(default_factory=dict)
    clusters_not_readable: dict[str, dict[str, str]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"quotas": {"counts": self.counts, "actions": self.actions,
                           "quotas": self.quotas, "quotas_not_listed": self.quotas_not_listed,
                           "removals_not_allowed": self.removals_not_allowed,
                           "unmanaged": self.unmanaged,
                           "clusters_not_readable": self.clusters_not_readable}}
