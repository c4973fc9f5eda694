"""The lock of an `apply`, taken only when its plan has something to change.

An apply reads the manifests, snapshots its clusters and plans without its lock. When that
plan gives no phase anything to send (a no-op run), the run ends there: it never writes the
lock table, and its plan is its record. Otherwise `Relock` takes the lock of every cluster
of the run (LockHeld, exit 4, when another run holds one; nothing of the first plan is
recorded then) and, holding it, reads again what the run may change and plans it again:

- each cluster's topic listing (every topic's id, partitions and replicas: what the
  per-cluster rules count, the partition budgets, the brokers' loads);
- every topic the first plan gives an action other than NOOP, every topic the listing
  shows otherwise than the first read did (new, gone, another id, other partitions or
  replicas) and every topic with a partition being moved: their metadata, configs and
  consumer groups, as the first read had them (`kafka.snapshot.reread_rows`);
- the moves in flight and the live ACL bindings, whole.

The topics read again are planned again on that view (the policies judge them with every
live topic of the clusters, the others as the first read had them, ids and partitions as
the listing has them); the first plan's rows of every other topic (NOOP rows, invalid
manifest rows) are kept. When every row read again is the first read's row (all its
values but the run id and the time it was read) and the moves in flight are the ones the
first read listed, the view under the lock is the first view: planning it again would give
the first plan back, so the first plan is kept whole (`Plan.keep`). The phases after it
see only this plan, which alone is recorded, with the view it was made on.

Why it is safe: every request an apply sends names a topic (or binding) whose state was
read after the run held the lock of its cluster, and was judged on a listing read then, as
when the lock came first. The first, unlocked plan decides only whether to take the lock
and which topics to read again; nothing it planned is ever sent. A change made between the
first plan and the lock to a topic the run changes is in the second view and planned on;
a change to a topic's partitions, replicas or existence shows in the listing and is
planned on too. A change made then only to the configs of a topic the run does not touch
is not seen: nothing is sent for that topic, and the next run plans it, as it would a
change made after the lock. A saved plan given to `apply --plan FILE` is compared with the
plan made under the lock.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.delta.snapshots import same_rows
from provisioning.kafka import reassign
from provisioning.kafka.snapshot import TopicShape, reread, topic_shape
from provisioning.run.acl_phases import AclPlan, AclSnapshot, acl_planned
from provisioning.run.engine import Phase, RunContext, RunState, require
from provisioning.run.options import ApplyOptions
from provisioning.run.phases import Plan, apply_actions, planned, record_live
from provisioning.run.reassign_phases import moves_count
from provisioning.session import job_label
from schemas import SNAPSHOT


def changes_planned(ctx: RunContext, state: RunState) -> bool:
    """Whether the plan gives an apply's changing phases anything to send (or a move in
    flight to settle): topics to create, delete or alter as the flags allow, replica moves
    (with --allow-reassign), ACL bindings to grant or revoke."""
    options = ctx.options
    if not isinstance(options, ApplyOptions):
        return False
    topics = sum(planned(state, action) for action in apply_actions(options))
    moves = moves_count(state) if options.allow_reassign else 0
    acls = acl_planned(state, names.GRANT, names.REVOKE)
    return topics + moves + acls > 0


def _moves(flights: Sequence[Mapping[str, Any]] | None, unlisted: Mapping[str, str] | None
           ) -> tuple[list[str], dict[str, str]]:
    """Moves in flight and the clusters where they could not be listed, comparable."""
    return (sorted(json.dumps(f, sort_keys=True, default=str) for f in flights or ()),
            dict(unlisted or {}))


def _reread(ctx: RunContext, state: RunState, first_plan: DataFrame) -> bool:
    """The run's view read again under its lock (see the module docstring): `state.live`
    becomes the first view with the topics read again replaced, recorded always;
    `state.replanned` their keys, `state.kept_plan` the first plan. Whether that view is
    the first one (every row read again as the first read had it, the same moves in
    flight)."""
    started = time.monotonic()
    first = require(state.live, "live")
    states = require(state.states, "states")
    first_moves = _moves(state.in_flight, state.unlisted)
    state.in_flight, state.unlisted = reassign.in_flight(ctx.clusters, ctx.credentials,
                                                         ctx.conf.kafka)
    changing: dict[str, set[str]] = defaultdict(set)
    with job_label(ctx.spark, f"{ctx.command}: topics to read again"):
        for r in (first_plan.where((F.col("action") != names.NOOP) & F.col("topic").isNotNull())
                  .select("cluster", "topic").distinct().collect()):
            changing[r["cluster"]].add(r["topic"])
        seen: dict[str, dict[str, TopicShape]] = defaultdict(dict)
        for r in first.select("cluster", "topic", "topic_id", "partitions",
                              "replication_factor", "replica_assignment",
                              "error_name").collect():
            seen[r["cluster"]][r["topic"]] = topic_shape(
                r["topic_id"], r["partitions"], r["replication_factor"],
                r["replica_assignment"], r["error_name"])
    for flight in state.in_flight:
        changing[flight["cluster"]].add(flight["topic"])
    rows, again = reread(ctx.clusters, ctx.credentials, ctx.conf.kafka, ctx.run_id,
                         {n: s.cluster_id for n, s in states.items()}, seen, changing)
    ctx.steps.done("read again under the lock")
    keys = ctx.spark.createDataFrame(again, "cluster string, topic string")
    with job_label(ctx.spark, f"{ctx.command}: snapshot under the lock"):
        fresh = ctx.spark.createDataFrame(rows, SNAPSHOT)
        live = (first.join(keys, ["cluster", "topic"], "left_anti").unionByName(fresh)
                .localCheckpoint(eager=True))
    # The view the run changes Kafka on is recorded, changed or not.
    record_live(ctx, live, started, always=True)
    state.live, state.replanned, state.kept_plan = live, keys, first_plan
    if _moves(state.in_flight, state.unlisted) != first_moves:
        return False
    with job_label(ctx.spark, f"{ctx.command}: rows read again against the first read"):
        return same_rows(first.join(keys, ["cluster", "topic"], "left_semi"), fresh)


class Relock(Phase):
    """Take the run's lock, then read again what the run may change and plan it again
    under the lock (see the module docstring)."""

    name = "lock"
    reads = ("states", "desired", "live", "plan", "plan_counts")
    writes = ("live", "in_flight", "unlisted", "replanned", "kept_plan", "plan", "plan_rows",
              "plan_counts", "acl_live", "acl_problems", "acl_plan", "acl_counts")
    needs_lock = True
    records_view = True
    replans = True

    def __init__(self) -> None:
        self._plan = Plan()
        # The view the run changes Kafka on is recorded, changed or not.
        self._acls = (AclSnapshot(always_record=True), AclPlan())

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return changes_planned(ctx, state)

    def run(self, ctx: RunContext, state: RunState) -> None:
        first_plan = require(state.plan, "plan")
        first_counts = require(state.plan_counts, "plan_counts")
        # Counted by the first pass off its path (the engine waited for it): None when
        # that count failed.
        first_move_counts, first_unmanaged = state.move_counts, state.unmanaged
        # The first pass's records are gone (the engine dropped them): what the phases
        # after this one read comes from the view read under the lock.
        for stale in ("plan", "plan_rows", "plan_counts", "move_counts", "unmanaged",
                      "acl_live", "acl_problems", "acl_plan", "acl_counts", "acl_unmanaged",
                      "acl_orphaned"):
            setattr(state, stale, None)
        state.audit_rows.clear()
        state.acl_audit_rows.clear()
        if _reread(ctx, state, first_plan):
            self._plan.keep(ctx, state, first_plan, first_counts, first_move_counts,
                            first_unmanaged)
            step = "first plan kept under the lock"
        else:
            self._plan.run(ctx, state)
            step = "plan again under the lock"
        for phase in self._acls:
            if phase.needed(ctx, state):
                phase.run(ctx, state)
        ctx.steps.done(step)
