"""The shapes that travel between packages: a run's record, its result, per-table summaries.

`run` fills them, `delta` writes them, `views` and `cli` read them; none of
them does any I/O.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from provisioning.names import ATTENTION
from schemas import RUNS, column_names

T = TypeVar("T")


def utc_now() -> dt.datetime:
    """Now, time-zone aware: Spark stores the instant whatever the machine's zone."""
    return dt.datetime.now(dt.UTC)


def new_run_id(now: dt.datetime | None = None) -> str:
    """Sortable and unique: UTC start time plus random hex."""
    start = now or utc_now()
    return f"{start:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


@dataclass
class RunRecord:
    """What the runs table will say about one run; filled in as the run goes."""

    run_id: str
    command: str
    arguments: Mapping[str, Any]
    conf_digest: str
    started_at: dt.datetime = field(default_factory=utc_now)
    finished_at: dt.datetime | None = None
    status: str = "running"
    exit_code: int | None = None
    message: str | None = None
    outcome_counts: dict[str, int] = field(default_factory=dict)
    clusters: list[dict[str, Any]] = field(default_factory=list)
    # The run's plan counted per kind, cluster, action and plan outcome (RUNS.plan_counts):
    # a run that changes nothing records these and its findings, not every plan row.
    plan_counts: list[dict[str, Any]] = field(default_factory=list)

    def finish(self, status: str, exit_code: int, message: str | None = None) -> None:
        self.status = status
        self.exit_code = exit_code
        self.message = message
        self.finished_at = utc_now()

    def row(self) -> tuple[Any, ...]:
        """The RUNS row, in column order."""
        values = {
            "run_id": self.run_id,
            "command": self.command,
            "arguments": json.dumps(dict(self.arguments), sort_keys=True, default=str),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "status": self.status,
            "exit_code": self.exit_code,
            "message": self.message,
            "outcome_counts": dict(self.outcome_counts),
            "clusters": self.clusters,
            "conf_digest": self.conf_digest,
            "plan_counts": [dict(c) for c in self.plan_counts],
        }
        return tuple(values[c] for c in column_names(RUNS))


@dataclass
class RunResult:
    """What `plan` and `apply` tell the operator: each kind's typed summary (its module of
    `results`), by kind name; None for a kind the run did not manage."""

    run_id: str
    summaries: dict[str, Any] = field(default_factory=dict)

    def summary(self, kind: type[T]) -> T | None:
        """The summary of type `kind`, or None."""
        return next((s for s in self.summaries.values() if isinstance(s, kind)), None)

    @property
    def counts(self) -> dict[str, int]:
        """Final outcomes counted over every kind (the runs row's `outcome_counts`)."""
        merged: dict[str, int] = {}
        for summary in self.summaries.values():
            for outcome, n in (getattr(summary, "counts", None) or {}).items():
                merged[outcome] = merged.get(outcome, 0) + n
        return merged

    @property
    def exit_code(self) -> int:
        """1 when something needs a person (`names.ATTENTION`), else 0."""
        return 1 if any(self.counts.get(o, 0) for o in ATTENTION) else 0


class Plain:
    """A frozen summary that reports itself as a plain dict (the `--json` documents)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload, no-any-return]


@dataclass(frozen=True)
class TableMaintenance(Plain):
    """What `maintain` did to one table."""

    role: str
    table: str
    files_before: int
    files_after: int
    rows_deleted: int
    files_vacuumed: int
    # Columns whose collated string types were rewritten as plain ones (tables written
    # through Spark Connect by earlier releases).
    retyped_columns: list[str] = field(default_factory=list)


@dataclass
class EntitySummary:
    """A run's entities of one entity kind (`run.entity`): final outcome counts, entities per
    cluster and action, the first listed ones that did not simply stay as they were (each
    with its one-line text), removals not made for want of the kind's flag, and per cluster
    the live entities left alone (`unmanaged`, and the kind's other counts of them:
    `loose`) and why the job could not read or change a cluster's (`problems`).

    kind, many, removals_key, problems_key: the document's keys (`as_json`): the kind's
      name, its entities in the plural, and its words for the last two counts.
    """

    kind: str
    many: str
    removals_key: str
    problems_key: str
    counts: dict[str, int] = field(default_factory=dict)
    actions: list[dict[str, Any]] = field(default_factory=list)
    listed: list[dict[str, Any]] = field(default_factory=list)
    not_listed: int = 0
    removals_not_allowed: int = 0
    unmanaged: dict[str, int] = field(default_factory=dict)
    left_alone: dict[str, dict[str, int]] = field(default_factory=dict)
    problems: dict[str, dict[str, str]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {self.kind: {
            "counts": self.counts, "actions": self.actions, self.many: self.listed,
            f"{self.many}_not_listed": self.not_listed,
            self.removals_key: self.removals_not_allowed, "unmanaged": self.unmanaged,
            **self.left_alone, self.problems_key: self.problems}}
