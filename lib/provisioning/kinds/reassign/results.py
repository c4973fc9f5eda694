"""What a run tells of replica moves, beside the topics they move (their rows are topic
rows, counted and listed with them: `kinds.topics.results`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ReassignSummary:
    """Topics whose replica moves an apply checked but did not start (no
    --allow-reassign, or an ALTER's moves whose alter was not made); 0 for `plan`."""

    reassigns_not_allowed: int = 0
    # Counted with the topics' (`TopicsSummary.counts`).
    counts: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"reassigns_not_allowed": self.reassigns_not_allowed}
