"""What a run tells of topics: its summary of a plan or apply, what `snapshot` found and
what `import` wrote, per cluster."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from provisioning.results import Plain


@dataclass
class TopicsSummary:
    """A run's topics (and the rows of the kinds that extend them): final outcome counts,
    rows per cluster and action, the first listed topics that did not simply stay as they
    were, and what the flags of this run left unmade."""

    counts: dict[str, int] = field(default_factory=dict)
    actions: list[dict[str, Any]] = field(default_factory=list)
    topics: list[dict[str, Any]] = field(default_factory=list)
    topics_not_listed: int = 0
    deletes_not_allowed: int = 0
    alters_not_allowed: int = 0
    # Live topics (not internal) that no manifest row names, per cluster: never changed.
    unmanaged: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"counts": self.counts, "actions": self.actions, "topics": self.topics,
                "topics_not_listed": self.topics_not_listed,
                "deletes_not_allowed": self.deletes_not_allowed,
                "alters_not_allowed": self.alters_not_allowed, "unmanaged": self.unmanaged}


@dataclass(frozen=True)
class ClusterSummary(Plain):
    """What `snapshot` found on one cluster."""

    cluster: str
    cluster_id: str | None
    brokers: int
    topics: int
    internal_topics: int
    partitions: int
    # None: which topics are read is unknown (the consumer groups could not all be read).
    topics_in_use: int | None
    undescribable_topics: int


@dataclass(frozen=True)
class ImportSummary(Plain):
    """What `import` wrote for one cluster, and what it left out."""

    cluster: str
    rows_written: int
    left_out_managed: int
    left_out_protected: int
    left_out_undescribable: int


