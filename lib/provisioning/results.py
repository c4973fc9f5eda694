"""The shapes that travel between rooms: a run's record, its result, per-table summaries.

`run` fills them, `delta` writes them, `views` and `cli` read them; none of
them does any I/O.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from provisioning.names import ATTENTION
from schemas import RUNS, column_names


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
        }
        return tuple(values[c] for c in column_names(RUNS))


@dataclass
class RunResult:
    """What `plan` and `apply` tell the operator: counts, actions and the listed topics."""

    run_id: str
    counts: dict[str, int] = field(default_factory=dict)
    actions: list[dict[str, Any]] = field(default_factory=list)
    topics: list[dict[str, Any]] = field(default_factory=list)
    topics_not_listed: int = 0
    deletes_not_allowed: int = 0
    alters_not_allowed: int = 0
    # Topics whose replica moves an apply checked but did not start (no --allow-reassign,
    # or an ALTER's moves whose alter was not made).
    reassigns_not_allowed: int = 0
    # Live topics (not internal) that no manifest row names, per cluster: never changed.
    unmanaged: dict[str, int] = field(default_factory=dict)
    # What the run did with ACL bindings (run.summary.summarize_acls): counts, actions,
    # listed bindings, revokes not allowed, unmanaged and orphaned bindings per cluster;
    # None when the run manages no ACL.
    acls: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        acl_counts = (self.acls or {}).get("counts", {})
        return 1 if any(self.counts.get(o, 0) or acl_counts.get(o, 0)
                        for o in ATTENTION) else 0


class _Plain:
    """A frozen summary that reports itself as a plain dict (the `--json` documents)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload, no-any-return]


@dataclass(frozen=True)
class ClusterSummary(_Plain):
    """What `snapshot` found on one cluster."""

    cluster: str
    cluster_id: str | None
    brokers: int
    topics: int
    internal_topics: int
    partitions: int
    topics_in_use: int
    undescribable_topics: int


@dataclass(frozen=True)
class ImportSummary(_Plain):
    """What `import` wrote for one cluster, and what it left out."""

    cluster: str
    rows_written: int
    left_out_managed: int
    left_out_protected: int
    left_out_undescribable: int


@dataclass(frozen=True)
class TableMaintenance(_Plain):
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
