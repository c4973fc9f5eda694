"""The replica-move phases of `plan` and `apply`, beside the topic phases (see engine.py):

    plan (moves planned) -> reassign validate -> ... -> reassign -> reassign verify

The plan phase gives a row its moves (`transforms.reassign`): action REASSIGN, or an ALTER
that carries them in `reassignment`. Their AUDIT rows after the plan have action REASSIGN,
so an ALTER that also moves replicas ends twice: its ALTER rows and its REASSIGN rows.

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
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.results import utc_now
from provisioning.run import executors
from provisioning.run.engine import Phase, RunContext, RunState, log_counts, require
from provisioning.run.options import ApplyOptions
from provisioning.session import job_label
from provisioning.transforms.audit import result_audit
from provisioning.transforms.reassign.plan import check_results, moves_planned
from provisioning.transforms.results import without_answer

_KEYS = ["cluster", "topic"]


def moves_count(state: RunState, outcome: str = names.PLANNED) -> int:
    """PLAN rows that move replicas with the plan outcome `outcome`."""
    return sum(n for (_, o), n in (state.move_counts or {}).items() if o == outcome)


def _clean() -> Column:
    """PLAN rows that move replicas, are valid and no policy refused."""
    return (moves_planned() & (F.size("row_errors") == 0)
            & (F.size("policy_violations") == 0))


def _outcomes(rows: DataFrame, started: float, phase: str) -> None:
    log_counts(phase, started, {r["outcome"]: int(r["n"]) for r in rows.groupBy("outcome")
                                .agg(F.count(F.lit(1)).alias("n")).collect()})


class ReassignValidate(Phase):
    """The checks a replica move gets before it is sent (there is no validateOnly): every
    target broker live and not fenced, replicas distinct, nothing moving elsewhere."""

    name = "reassign validate"
    reads = ("plan",)
    writes = ("moves_validated",)

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return moves_count(state) > 0

    def run(self, ctx: RunContext, state: RunState) -> None:
        plan = require(state.plan, "plan")
        with job_label(ctx.spark, f"{ctx.command}: check replica moves"):
            checked = check_results(plan.where(_clean())).localCheckpoint(eager=True)
            rows = result_audit(checked, plan, ctx.run_id, utc_now(), action=names.REASSIGN)
            ctx.commits.audit(names.VALIDATE, rows)
        state.moves_validated = checked
        state.audit_rows.append(rows)
        ctx.steps.done("reassign validate")


class ReassignApply(Phase):
    """AlterPartitionReassignments for the moves that passed their checks (apply
    --allow-reassign), throttled as `reassign.throttle_bytes_per_second` says."""

    name = "reassign"
    reads = ("plan", "moves_validated")
    writes = ("moves_applied",)
    changes_kafka = True
    runs_tasks = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        options = ctx.options
        return (isinstance(options, ApplyOptions) and options.allow_reassign
                and state.moves_validated is not None and moves_count(state) > 0)

    @staticmethod
    def _requests(ctx: RunContext, state: RunState) -> DataFrame:
        """The PLAN rows whose moves this apply starts (or finishes): their checks passed,
        and an ALTER's alter was verified in this run."""
        plan = require(state.plan, "plan")
        passed = require(state.moves_validated, "moves_validated").where(
            F.col("outcome") == names.VALIDATED).select(*_KEYS)
        rows = plan.where(_clean()).join(passed, on=_KEYS, how="left_semi")
        verified = state.verified
        altered = (verified.where(F.col("outcome") == names.ALTERED).select(*_KEYS)
                   if verified is not None else
                   ctx.spark.createDataFrame([], "cluster string, topic string"))
        reassign_only = rows.where(F.col("action") == names.REASSIGN)
        after_alter = rows.where(F.col("action") == names.ALTER).join(
            altered, on=_KEYS, how="left_semi")
        return reassign_only.unionByName(after_alter).select(
            *_KEYS, "live_topic_id", "reassignment")

    def unreached(self, ctx: RunContext, state: RunState, error_name: str,
                  reason: str) -> DataFrame:
        return result_audit(
            without_answer(self._requests(ctx, state).select(*_KEYS), names.APPLY,
                           names.FAILED, error_name, reason),
            require(state.plan, "plan"), ctx.run_id, utc_now(), action=names.REASSIGN)

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        plan = require(state.plan, "plan")
        requests = self._requests(ctx, state)
        with job_label(ctx.spark, "apply: AlterPartitionReassignments"):
            applied = executors.answered(
                executors.send_reassigns(requests, ctx.clusters, ctx.credentials,
                                         ctx.conf.kafka,
                                         ctx.conf.reassign.throttle_bytes_per_second),
                requests.select(*_KEYS), names.APPLY, names.UNKNOWN)
            rows = result_audit(applied, plan, ctx.run_id, utc_now(), action=names.REASSIGN)
            ctx.commits.audit(names.APPLY, rows)
        state.moves_applied = applied
        state.audit_rows.append(rows)
        ctx.commits.side("reassign-count", lambda: _outcomes(applied, started, self.name))
        ctx.steps.done("reassign")


class ReassignVerify(Phase):
    """Wait for the moves started or found under way, up to `reassign.wait_seconds`; settle
    them and take their throttles away."""

    name = "reassign verify"
    reads = ("plan", "moves_applied")
    runs_tasks = True
    settles = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return state.moves_applied is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        plan = require(state.plan, "plan")
        applied = require(state.moves_applied, "moves_applied")
        moving = applied.where(F.col("outcome").isin(names.REASSIGNING, names.UNKNOWN))
        requests = moving.select(*_KEYS).join(
            plan.select(*_KEYS, "live_topic_id", "reassignment"), on=_KEYS, how="inner")
        conf = ctx.conf.reassign
        with job_label(ctx.spark, "apply: wait for replica moves"):
            owned = owned_brokers(ctx, applied, requests)
            verified = executors.answered(
                executors.verify_reassigns(requests, ctx.clusters, ctx.credentials,
                                           ctx.conf.kafka, conf.wait_seconds, owned),
                requests.select(*_KEYS), names.VERIFY, names.UNKNOWN)
            rows = result_audit(verified, plan, ctx.run_id, utc_now(), action=names.REASSIGN)
            ctx.commits.audit(names.VERIFY, rows)
        state.audit_rows.append(rows)
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
                   .where((F.col("action") == names.REASSIGN) & (F.col("phase") == names.APPLY)
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


def unsettled_moves(ctx: RunContext, live: DataFrame, in_flight: Sequence[Mapping[str, Any]]
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
            .where((F.col("action") == names.REASSIGN)
                   & F.col("phase").isin(names.APPLY, names.VERIFY))
            .join(wanted, on=_KEYS, how="left_semi"))
    order = F.struct("recorded_at", F.when(F.col("phase") == names.VERIFY, 1).otherwise(0))
    latest = rows.groupBy(*_KEYS).agg(F.max_by(F.struct("outcome", "result_reassignment"),
                                               order).alias("last"))
    open_moves = latest.where(F.col("last.outcome").isin(names.REASSIGNING, names.UNKNOWN)) \
        .select(*_KEYS, F.explode("last.result_reassignment").alias("m")) \
        .where(F.col("m.outcome").isin(names.REASSIGNING, names.UNKNOWN)) \
        .select(*_KEYS, "m.partition", "m.before", "m.after")
    moving = {(r["cluster"], r["topic"], int(r["partition"])) for r in in_flight}
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
