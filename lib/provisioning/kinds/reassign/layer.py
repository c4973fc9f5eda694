"""The replica moves' layer on the topics' plan (`run.kind.PlanLayer`): which topic rows move
replicas, how, and the reassign policies' verdict, inside the topics' plan phase; the moves
in flight read again under an apply's lock.

A topic row gets its moves (`kinds.reassign.plan.with_reassignments`) when the plan
has drift or alters, or some partition is being moved: action REASSIGN, or an ALTER that
carries them in `reassignment`. The moves an earlier run started and never settled, that
are not moving any more, count as moves in flight (`unsettled_moves`), so an apply settles
them. With nothing in flight, a plan whose rows ask for no partition to change
(`partitions_to_move`: a config-only alter, say) places nothing, and its reassign policies
run only when the conf adds its own (the always-on ones judge only rows that move).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.kinds.reassign.conf import ReassignConf
from provisioning.kinds.reassign.in_flight import in_flight
from provisioning.kinds.reassign.names import REASSIGN, REASSIGNING
from provisioning.kinds.reassign.plan import (
    moves_planned,
    partitions_to_move,
    with_reassignments,
)
from provisioning.kinds.reassign.policies import ReassignContext, with_reassign_policies
from provisioning.kinds.reassign.state import ReassignState
from provisioning.kinds.topics.phases import in_run
from provisioning.run.engine import RunContext, require
from provisioning.run.executors import cluster_states_frame
from provisioning.run.kind import PlanCounts, PlanLayer
from provisioning.run.phases import cut
from provisioning.run.state import RunState
from provisioning.session import job_label
from provisioning.transforms.audit import plan_outcome
from schemas import REASSIGNMENT_IN_FLIGHT, column_names

_KEYS = ["cluster", "topic"]


class ReassignLayer(PlanLayer):
    """Replica moves planned on the topics' plan rows (see the module docstring)."""

    reads = ("states", "reassign.in_flight", "reassign.unlisted")
    writes = ("reassign.placed", "reassign.counts")
    relock_reads = ("reassign.in_flight", "reassign.unlisted", "reassign.counts")
    relock_writes = ("reassign.in_flight", "reassign.unlisted", "reassign.placed",
                     "reassign.counts")

    def attach(self, ctx: RunContext, state: RunState, rows: DataFrame, counts: PlanCounts,
               live: DataFrame) -> DataFrame:
        moves = state.of(ReassignState)
        moves.placed = None
        if moves.in_flight is None:
            return rows
        flights = list(moves.in_flight)
        flights += unsettled_moves(ctx, in_run(ctx, live), flights)
        if not flights and not any(n for (_, action, _), n in counts.items()
                                   if action in (names.DRIFT, names.ALTER)):
            moves.placed = False
            return rows
        if not flights and partitions_to_move(rows, live).isEmpty():
            # A config change, or drift other than replicas: no partition to place.
            moves.placed = False
            return rows
        moves.placed = True
        frame = ctx.spark.createDataFrame(
            [tuple(r[c] for c in column_names(REASSIGNMENT_IN_FLIGHT)) for r in flights],
            REASSIGNMENT_IN_FLIGHT)
        states = require(state.states, "states")
        moved = with_reassignments(rows, live, cluster_states_frame(ctx.spark, states), frame)
        return _unlisted_problems(moved, moves.unlisted or {})

    def judge(self, ctx: RunContext, state: RunState, rows: DataFrame, counts: PlanCounts,
              live: DataFrame) -> DataFrame:
        planned = {action for (_, action, outcome), n in counts.items()
                   if outcome == names.PLANNED and n}
        moves = state.of(ReassignState)
        if moves.in_flight is None or not (REASSIGN in planned or names.ALTER in planned):
            return rows
        conf = ctx.conf.section(ReassignConf)
        if moves.placed is False and not conf.policies:
            # No row moves replicas: the always-on policies judge only rows that do.
            return rows
        states = require(state.states, "states")
        context = ReassignContext(
            clusters=cluster_states_frame(ctx.spark, states), live=live,
            max_reassign_partitions_per_cluster=conf.max_partitions_per_cluster)
        valid = F.size("row_errors") == 0
        judged = cut(rows)
        return (with_reassign_policies(judged.where(valid), conf.policies, context, cut)
                .unionByName(judged.where(~valid)))

    def planned(self, ctx: RunContext, state: RunState, plan: DataFrame,
                counts: PlanCounts) -> None:
        moves = state.of(ReassignState)
        if not any(action in (REASSIGN, names.ALTER) for (_, action, _) in counts):
            moves.counts = {}
            return
        moves.counts = {
            (r["cluster"], r["outcome"]): int(r["n"]) for r in
            plan.where(moves_planned()).groupBy(
                "cluster", plan_outcome().alias("outcome"))
            .agg(F.count(F.lit(1)).alias("n")).collect()}

    def set_aside_first_plan(self, ctx: RunContext, state: RunState) -> Mapping[str, object]:
        moves = state.of(ReassignState)
        first = {"counts": moves.counts, "listing": _listing(moves.in_flight, moves.unlisted)}
        moves.counts = None
        return first

    def restore_first_plan(self, ctx: RunContext, state: RunState,
                           first: Mapping[str, object]) -> None:
        state.of(ReassignState).counts = first["counts"]  # type: ignore[assignment]

    def reread(self, ctx: RunContext, state: RunState) -> tuple[bool, list[tuple[str, str]]]:
        moves = state.of(ReassignState)
        first = _listing(moves.in_flight, moves.unlisted)
        with job_label(ctx.spark, f"{ctx.command}: reassignments in flight"):
            moves.in_flight, moves.unlisted = in_flight(ctx.clusters, ctx.credentials,
                                                        ctx.conf.kafka)
        keys = sorted({(f["cluster"], f["topic"]) for f in moves.in_flight})
        return _listing(moves.in_flight, moves.unlisted) == first, keys


def _listing(flights: Sequence[Mapping[str, Any]] | None, unlisted: Mapping[str, str] | None
             ) -> tuple[list[str], dict[str, str]]:
    """Moves in flight and the clusters where they could not be listed, comparable."""
    return (sorted(json.dumps(f, sort_keys=True, default=str) for f in flights or ()),
            dict(unlisted or {}))


def _unlisted_problems(rows: DataFrame, unlisted: Mapping[str, str]) -> DataFrame:
    """On a cluster whose moves in flight could not be listed (`unlisted`: cluster -> why),
    a row with moves gets that as a problem (the job cannot tell what is moving already)."""
    if not unlisted:
        return rows
    why = F.create_map(*[F.lit(x) for c, reason in sorted(unlisted.items())
                         for x in (c, reason)])
    problem = F.format_string(
        "the partitions being reassigned on cluster %s could not be listed "
        "(ListPartitionReassignments: %s); no move starts there until they can "
        "(the job's principal needs Describe on the cluster)", F.col("cluster"),
        why[F.col("cluster")])
    unknown = moves_planned() & why[F.col("cluster")].isNotNull()
    return rows.withColumn("reassign_problems", F.when(unknown, F.concat(
        F.coalesce("reassign_problems", F.array().cast("array<string>")), F.array(problem)))
        .otherwise(F.col("reassign_problems")))


def unsettled_moves(ctx: RunContext, live: DataFrame, flights: Sequence[Mapping[str, Any]]
                    ) -> list[dict[str, Any]]:
    """REASSIGNMENT_IN_FLIGHT rows (dicts) for the moves an earlier run started and never
    settled (its latest REASSIGN row of the topic is `reassigning` or `unknown`: it was
    killed, or its verify stopped waiting) that are not moving any more: finished, or
    stopped, while no run watched. The plan takes them as moves under way, so an apply
    settles them (reassigned, or failed), clears their throttles and the broker rates set
    for them.

    Only topics that still have throttled replicas are looked up (the job throttles a
    move before it starts): a run with none reads no audit row.
    """
    throttled = live.where(F.exists("configs", lambda c: (
        c["name"].isin(*names.THROTTLED_REPLICAS_CONFIGS) & (F.length(c["value"]) > 0))))
    topics = [(r["cluster"], r["topic"]) for r in throttled.select(*_KEYS).collect()]
    ref = TableRef(ctx.conf.tables.audit)
    if not topics or not table_exists(ctx.spark, ref):
        return []
    wanted = ctx.spark.createDataFrame(topics, "cluster string, topic string")
    rows = (read_table(ctx.spark, ref)
            .where((F.col("action") == REASSIGN)
                   & F.col("phase").isin(names.APPLY, names.VERIFY))
            .join(wanted, on=_KEYS, how="left_semi"))
    order = F.struct("recorded_at", F.when(F.col("phase") == names.VERIFY, 1).otherwise(0))
    latest = rows.groupBy(*_KEYS).agg(F.max_by(F.struct("outcome", "result_reassignment"),
                                               order).alias("last"))
    open_moves = latest.where(F.col("last.outcome").isin(REASSIGNING, names.UNKNOWN)) \
        .select(*_KEYS, F.explode("last.result_reassignment").alias("m")) \
        .where(F.col("m.outcome").isin(REASSIGNING, names.UNKNOWN)) \
        .select(*_KEYS, "m.partition", "m.before", "m.after")
    moving = {(r["cluster"], r["topic"], int(r["partition"])) for r in flights}
    found = []
    for r in open_moves.collect():
        if (r["cluster"], r["topic"], int(r["partition"])) in moving:
            continue
        before, after = list(r["before"] or []), list(r["after"] or [])
        removing = [b for b in before if b not in after]
        found.append({"cluster": r["cluster"], "topic": r["topic"],
                      "partition": int(r["partition"]), "replicas": after + removing,
                      "adding": sorted(b for b in after if b not in before),
                      "removing": sorted(removing)})
    return found

