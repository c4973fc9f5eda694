"""The topics' part of the run package: their slice of the state (`state`), their phases of
each command (`phases`, `changes`, `adopt`, `check`), their re-read under an apply's lock
(`relock`), the manifests -> judged plan chain (`planning`), their admin I/O as Spark tasks
and the one reader of live topics (`executors`), their summary (`summary`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import schemas
from provisioning import names
from provisioning.conf import Conf
from provisioning.delta.tables import JobTable
from provisioning.kinds.topics.adopt import Import, RecordSnapshot
from provisioning.kinds.topics.changes import Apply, Verify
from provisioning.kinds.topics.check import Check, Usage
from provisioning.kinds.topics.phases import (
    ALTER,
    DELETES,
    NAME,
    Plan,
    ReadManifests,
    Snapshot,
    Validate,
    apply_actions,
)
from provisioning.kinds.topics.relock import TopicsRelock
from provisioning.kinds.topics.results import ClusterSummary, TopicsSummary
from provisioning.kinds.topics.state import TopicState
from provisioning.kinds.topics.summary import summarize, summarize_snapshot
from provisioning.run.engine import Phase, RunContext, require
from provisioning.run.kind import (
    APPLY,
    CHECK,
    IMPORT,
    MANIFESTS,
    PLAN,
    RECORD,
    SNAPSHOT,
    VALIDATE,
    PlanCounts,
    PlanLayer,
    RunKind,
)
from provisioning.run.options import ApplyOptions
from provisioning.run.state import RunState


class TopicsKind(RunKind):
    name = NAME
    State = TopicState
    planned_reads = ("topics.counts",)
    findings_field = "topics.violations"

    def phases(self, step: str, layers: Sequence[PlanLayer] = ()) -> Sequence[Phase]:
        return {
            MANIFESTS: (ReadManifests(),),
            SNAPSHOT: (Snapshot(),),
            PLAN: (Plan(layers),),
            VALIDATE: (Validate(),),
            APPLY: (Apply(), Verify()),
            CHECK: (ReadManifests(), Snapshot(always_record=True), Usage(), Check()),
            IMPORT: (Import(),),
            RECORD: (RecordSnapshot(),),
        }.get(step, ())

    def relock_phases(self, layers: Sequence[PlanLayer] = ()) -> Sequence[Phase]:
        return (TopicsRelock(layers),)

    def sends_changes(self, ctx: RunContext, state: RunState) -> bool:
        return _planned(state, apply_actions(ctx))

    def plan_has_changes(self, state: RunState) -> bool:
        return _planned(state, (names.CREATE, names.DELETE, names.ALTER))

    def plan_counts(self, state: RunState) -> PlanCounts:
        return state.of(TopicState).counts or {}

    def job_tables(self, conf: Conf, command: str) -> Sequence[JobTable]:
        # `check` reads its tables back: the violations it recorded, the inventory's
        # earlier rows (usage growth) and the disks beside them.
        if command != "check":
            return ()
        return (JobTable(conf.tables.violations, schemas.VIOLATIONS),
                JobTable(conf.tables.inventory, schemas.INVENTORY),
                JobTable(conf.tables.disks, schemas.DISKS))

    def summary(self, ctx: RunContext, state: RunState) -> TopicsSummary | None:
        topics = state.of(TopicState)
        extensions = [k for k in ctx.kinds if k.extends == NAME]
        rows = [*topics.rows, *(r for e in extensions for r in state.slice(e.name).rows)]
        if topics.counts is None or not rows:
            return None
        options = ctx.options
        apply = options if isinstance(options, ApplyOptions) else None
        # Only the plan phase recorded rows: its counts are the final ones.
        known = ([{"cluster": c, "action": a, "phase": names.PLAN, "outcome": o, "n": n}
                  for (c, a, o), n in topics.counts.items()]
                 if len(rows) == 1 else None)
        listed_extra = [c for e in extensions for c in e.listed_columns]
        return summarize(rows, getattr(options, "listing_limit", 500),
                         deletes_allowed=apply is None or apply.allows(DELETES),
                         alters_allowed=apply is None or apply.allows(ALTER),
                         final_counts=known, listed_extra=listed_extra)

    def complete(self, state: RunState, summary: Any) -> None:
        summary.unmanaged = dict(sorted((state.of(TopicState).unmanaged or {}).items()))

    def imported(self, state: RunState) -> Any:
        return list(state.of(TopicState).imported or [])

    def recorded(self, ctx: RunContext, state: RunState) -> list[ClusterSummary]:
        states = require(state.states, "states")
        live = require(state.of(TopicState).live, "live")
        per_cluster = {r["cluster"]: r.asDict() for r in summarize_snapshot(live).collect()}
        summaries = []
        for cluster in ctx.clusters:
            row = per_cluster.get(cluster.name, {})
            summaries.append(ClusterSummary(
                cluster=cluster.name,
                cluster_id=states[cluster.name].cluster_id,
                brokers=len(states[cluster.name].broker_ids),
                topics=int(row.get("topics") or 0),
                internal_topics=int(row.get("internal_topics") or 0),
                partitions=int(row.get("partitions") or 0),
                # A cluster with no topic has no row: none of them is in use.
                topics_in_use=(None if row and row.get("topics_in_use") is None
                               else int(row.get("topics_in_use") or 0)),
                undescribable_topics=int(row.get("undescribable_topics") or 0),
            ))
        ctx.record.clusters = [
            {"cluster": s.cluster, "cluster_id": s.cluster_id, "brokers": s.brokers,
             "topics": s.topics, "error": None}
            for s in summaries
        ]
        ctx.record.outcome_counts = {"topics": sum(s.topics for s in summaries)}
        return summaries


def _planned(state: RunState, actions: Sequence[str]) -> bool:
    counts = state.of(TopicState).counts or {}
    return any(n for (_, action, outcome), n in counts.items()
               if action in actions and outcome == names.PLANNED)


RUN = TopicsKind()
