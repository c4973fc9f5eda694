"""The replica moves' phases of `plan` and `apply` (see engine.py); their plan is the layer
on the topics' plan (`kinds.reassign.layer`):

    reassign snapshot -> (topic plan, with moves) -> reassign validate -> ...
      -> reassign -> reassign verify

The moves' AUDIT rows after the plan have action REASSIGN, so an ALTER that also moves
replicas ends twice: its ALTER rows and its REASSIGN rows.

- `reassign snapshot`: the partitions being moved on each cluster
  (ListPartitionReassignments, `kinds.reassign.in_flight`, from the driver).
- `reassign validate`: AlterPartitionReassignments has no validateOnly; the job's own checks
  (`check_results`: live, distinct brokers; nothing moving elsewhere) are the verdict.
- `reassign` (apply with --allow-reassign): the moves that passed, throttled, batched per
  cluster; an ALTER's moves only once its alter is verified (configs and partitions first).
  A partition moving already since an earlier run is not sent again.
- `reassign verify`: waits up to `reassign.wait_seconds`; done partitions are `reassigned`
  and lose their throttles, the others stay `reassigning` (a later apply finishes them);
  the broker rates the job set, in this run or for a move still in flight since an earlier
  one, are removed once no move in flight uses their broker.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.kinds.reassign.conf import ReassignConf
from provisioning.kinds.reassign.executors import send_reassigns, verify_reassigns
from provisioning.kinds.reassign.in_flight import in_flight
from provisioning.kinds.reassign.names import ALLOW, REASSIGN, REASSIGNING
from provisioning.kinds.reassign.plan import check_results, moves_planned
from provisioning.kinds.reassign.state import ReassignState
from provisioning.kinds.topics.plan import without_answer
from provisioning.kinds.topics.state import TopicState
from provisioning.results import utc_now
from provisioning.run.engine import Phase, RunContext, log_counts, recorded, require
from provisioning.run.executors import answered
from provisioning.run.options import ApplyOptions
from provisioning.run.state import RunState
from provisioning.session import job_label
from provisioning.transforms.audit import result_audit

NAME = "reassign"
_KEYS = ["cluster", "topic"]


def moves_count(state: RunState, outcome: str = names.PLANNED) -> int:
    """PLAN rows that move replicas with the plan outcome `outcome`."""
    return sum(n for (_, o), n in (state.of(ReassignState).counts or {}).items()
               if o == outcome)


def _clean() -> Column:
    """PLAN rows that move replicas, are valid and no policy refused."""
    return (moves_planned() & (F.size("row_errors") == 0)
            & (F.size("policy_violations") == 0))


def _outcomes(rows: DataFrame, started: float, phase: str) -> None:
    log_counts(phase, started, {r["outcome"]: int(r["n"]) for r in rows.groupBy("outcome")
                                .agg(F.count(F.lit(1)).alias("n")).collect()})


class ReassignSnapshot(Phase):
    """The partitions being reassigned on each cluster (ListPartitionReassignments, from the
    driver): what the layer plans the moves on."""

    name = "reassign snapshot"
    kind = NAME
    writes = ("reassign.in_flight", "reassign.unlisted")

    def run(self, ctx: RunContext, state: RunState) -> None:
        moves = state.of(ReassignState)
        with job_label(ctx.spark, f"{ctx.command}: reassignments in flight"):
            moves.in_flight, moves.unlisted = in_flight(ctx.clusters, ctx.credentials,
                                                        ctx.conf.kafka)
        ctx.steps.done("reassignments in flight")


class ReassignValidate(Phase):
    """The checks a replica move gets before it is sent (there is no validateOnly): every
    target broker live and not fenced, replicas distinct, nothing moving elsewhere."""

    name = "reassign validate"
    kind = NAME
    reads = ("topics.plan", "reassign.counts")
    writes = ("reassign.validated",)

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return moves_count(state) > 0

    def run(self, ctx: RunContext, state: RunState) -> None:
        moves = state.of(ReassignState)
        plan = require(state.of(TopicState).plan, "plan")
        with job_label(ctx.spark, f"{ctx.command}: check replica moves"):
            checked = check_results(plan.where(_clean())).localCheckpoint(eager=True)
            recorded(ctx, moves, names.VALIDATE,
                     result_audit(checked, plan, ctx.run_id, utc_now(), ctx.audit, action=REASSIGN))
        moves.validated = checked
        ctx.steps.done("reassign validate")


class ReassignApply(Phase):
    """AlterPartitionReassignments for the moves that passed their checks (apply
    --allow-reassign), throttled as `reassign.throttle_bytes_per_second` says."""

    name = "reassign"
    kind = NAME
    reads = ("topics.plan", "topics.verified", "reassign.counts", "reassign.validated")
    writes = ("reassign.applied",)
    changes_kafka = True
    runs_tasks = True
    # The throttles a move sets outlive a killed run; the next run removes the broker rates
    # its apply rows say the job set (`owned_brokers`), so they land as the moves start.
    commits_at_once = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return (isinstance(ctx.options, ApplyOptions) and ctx.options.allows(ALLOW)
                and state.of(ReassignState).validated is not None and moves_count(state) > 0)

    @staticmethod
    def _requests(ctx: RunContext, state: RunState) -> DataFrame:
        """The PLAN rows whose moves this apply starts (or finishes): their checks passed,
        and an ALTER's alter was verified in this run."""
        plan = require(state.of(TopicState).plan, "plan")
        passed = require(state.of(ReassignState).validated, "validated").where(
            F.col("outcome") == names.VALIDATED).select(*_KEYS)
        rows = plan.where(_clean()).join(passed, on=_KEYS, how="left_semi")
        verified = state.of(TopicState).verified
        altered = (verified.where(F.col("outcome") == names.ALTERED).select(*_KEYS)
                   if verified is not None else
                   ctx.spark.createDataFrame([], "cluster string, topic string"))
        reassign_only = rows.where(F.col("action") == REASSIGN)
        after_alter = rows.where(F.col("action") == names.ALTER).join(
            altered, on=_KEYS, how="left_semi")
        return reassign_only.unionByName(after_alter).select(
            *_KEYS, "live_topic_id", "reassignment")

    def unreached(self, ctx: RunContext, state: RunState, error_name: str,
                  reason: str) -> DataFrame:
        return result_audit(
            without_answer(self._requests(ctx, state).select(*_KEYS), names.APPLY,
                           names.FAILED, error_name, reason),
            require(state.of(TopicState).plan, "plan"), ctx.run_id, utc_now(), ctx.audit,
            action=REASSIGN)

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        moves = state.of(ReassignState)
        plan = require(state.of(TopicState).plan, "plan")
        requests = self._requests(ctx, state)
        with job_label(ctx.spark, "apply: AlterPartitionReassignments"):
            applied = answered(
                send_reassigns(requests, ctx.clusters, ctx.credentials, ctx.conf.kafka,
                               ctx.conf.section(ReassignConf).throttle_bytes_per_second),
                requests.select(*_KEYS), names.APPLY, names.UNKNOWN, without_answer)
            recorded(ctx, moves, names.APPLY,
                     result_audit(applied, plan, ctx.run_id, utc_now(), ctx.audit, action=REASSIGN))
        moves.applied = applied
        ctx.commits.side("reassign-count", lambda: _outcomes(applied, started, self.name))
        ctx.steps.done("reassign")


class ReassignVerify(Phase):
    """Wait for the moves started or found under way, up to `reassign.wait_seconds`; settle
    them and take their throttles away."""

    name = "reassign verify"
    kind = NAME
    reads = ("topics.plan", "reassign.applied")
    runs_tasks = True
    settles = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return state.of(ReassignState).applied is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        plan = require(state.of(TopicState).plan, "plan")
        applied = require(state.of(ReassignState).applied, "applied")
        moving = applied.where(F.col("outcome").isin(REASSIGNING, names.UNKNOWN))
        requests = moving.select(*_KEYS).join(
            plan.select(*_KEYS, "live_topic_id", "reassignment"), on=_KEYS, how="inner")
        conf = ctx.conf.section(ReassignConf)
        with job_label(ctx.spark, "apply: wait for replica moves"):
            owned = owned_brokers(ctx, applied, requests)
            verified = answered(
                verify_reassigns(requests, ctx.clusters, ctx.credentials, ctx.conf.kafka,
                                 conf.wait_seconds, owned),
                requests.select(*_KEYS), names.VERIFY, names.UNKNOWN, without_answer)
            recorded(ctx, state.of(ReassignState), names.VERIFY,
                     result_audit(verified, plan, ctx.run_id, utc_now(), ctx.audit,
                                  action=REASSIGN))
        ctx.commits.side("reassign-verify-count",
                         lambda: _outcomes(verified, started, self.name))
        ctx.steps.done("reassign verify")


def owned_brokers(ctx: RunContext, applied: DataFrame, requests: DataFrame
                  ) -> Mapping[str, dict[int, int]]:
    """cluster -> {broker: rate} of the throttle rates the job set for the moves this verify
    waits for: in this run's apply rows, and, for a move under way since an earlier run, in
    that topic's latest earlier REASSIGN apply row that set any (a run killed mid-move left
    them for this one to remove)."""
    found: dict[str, dict[int, int]] = {}

    def add(rows: DataFrame, brokers: str) -> None:
        for r in rows.collect():
            for b in r[brokers]:
                found.setdefault(r["cluster"], {})[int(b)] = int(r["throttle_rate"])

    add(applied.where((F.size("throttled_brokers") > 0) & F.col("throttle_rate").isNotNull())
        .select("cluster", "throttled_brokers", "throttle_rate"), "throttled_brokers")
    carried = requests.where(F.exists("reassignment", lambda m: F.coalesce(
        m["in_flight"], F.lit(False)))).select(*_KEYS)
    ref = TableRef(ctx.conf.tables.audit)
    if table_exists(ctx.spark, ref):
        earlier = (read_table(ctx.spark, ref)
                   .where((F.col("action") == REASSIGN) & (F.col("phase") == names.APPLY)
                          & (F.size("throttled_brokers") > 0)
                          & F.col("throttle_rate").isNotNull()
                          & (F.col("run_id") != ctx.run_id))
                   .join(carried, on=_KEYS, how="left_semi"))
        latest = earlier.groupBy(*_KEYS).agg(
            F.max_by(F.struct("throttled_brokers", "throttle_rate"), "recorded_at")
            .alias("set"))
        add(latest.select("cluster", "set.throttled_brokers", "set.throttle_rate"),
            "throttled_brokers")
    return {c: dict(sorted(b.items())) for c, b in sorted(found.items())}


