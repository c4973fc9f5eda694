"""The topics' phases that change Kafka and read back what changed (see engine.py):

    apply -> verify
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from provisioning import names
from provisioning.errors import LockUnavailable
from provisioning.kinds.topics.executors import send_alters, send_creates, send_deletes, verify
from provisioning.kinds.topics.phases import (
    NAME,
    REQUEST_COLUMNS,
    alter_requests,
    apply_actions,
    clean,
)
from provisioning.kinds.topics.plan import change_columns, settle_existing, without_answer
from provisioning.kinds.topics.state import TopicState
from provisioning.results import utc_now
from provisioning.run.engine import Phase, RunContext, fence, log_phase, recorded, require
from provisioning.run.executors import answered
from provisioning.run.state import RunState
from provisioning.session import job_label
from provisioning.transforms.audit import result_audit
from schemas import TOPIC_RESULT

# The apply outcomes the verify phase looks at again.
_VERIFIED = (names.CREATED, names.UNKNOWN, names.DELETED, names.ALTERED)
Sender = Callable[[DataFrame], DataFrame]
_WAVE = "_wave"


def _most_per_cluster(state: RunState, actions: Sequence[str]) -> int:
    """The largest number of clean planned rows of one action on one cluster."""
    return max((n for (_, action, outcome), n in
                (state.of(TopicState).counts or {}).items()
                if action in actions and outcome == names.PLANNED), default=0)


def _wave_of(size: int) -> Column:
    """Which wave a request row goes out in: its rank among its cluster's rows, by topic,
    `size` to a wave."""
    rank = F.row_number().over(Window.partitionBy("cluster").orderBy("topic"))
    return F.floor((rank - 1) / F.lit(size)).cast("int")


class Apply(Phase):
    """The real CreateTopics for what validateOnly passed, DeleteTopics (by topic id) when
    deletes are allowed, and the alters validateOnly passed when alters are allowed.

    Requests go out in waves, one Spark job each, of `kafka.batch_size` x
    `kafka.max_in_flight_requests` topics per cluster and kind; before each wave the run is
    at a safe point (a signal, a lost lock: the engine's `fence`).
    """

    name = "apply"
    kind = NAME
    reads = ("topics.plan", "topics.counts", "topics.validated")
    writes = ("topics.applied", "halted")
    changes_kafka = True
    runs_tasks = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        # From the plan's counts: a run whose creates the broker all refused still runs
        # apply, over no request (cheaper than counting the validateOnly verdicts first).
        counts = state.of(TopicState).counts or {}
        return any(n for (_, action, outcome), n in counts.items()
                   if action in apply_actions(ctx) and outcome == names.PLANNED)

    @staticmethod
    def _requests(ctx: RunContext, state: RunState) -> list[tuple[DataFrame, Sender]]:
        """What this apply sends, with how: the creates validateOnly passed, the clean
        deletes (when deletes are allowed), the alters validateOnly passed (when alters are
        allowed)."""
        topics = state.of(TopicState)
        plan, validated = require(topics.plan, "plan"), topics.validated
        actions = apply_actions(ctx)
        if validated is None:  # nothing was validated: the run only deletes
            validated = ctx.spark.createDataFrame([], TOPIC_RESULT)
        passed = validated.where(F.col("outcome") == names.VALIDATED).select(
            "cluster", "topic", F.col("result_partitions").alias("known_partitions"))
        kafka, clusters, creds = ctx.conf.kafka, ctx.clusters, ctx.credentials
        sends: list[tuple[DataFrame, Sender]] = [(
            plan.where(clean(names.CREATE)).select(*REQUEST_COLUMNS)
            .join(passed, on=["cluster", "topic"], how="inner"),
            lambda rows: send_creates(rows, clusters, creds, kafka, validate_only=False))]
        if names.DELETE in actions:
            sends.append((
                plan.where(clean(names.DELETE)).select(
                    "cluster", "topic", F.col("live_topic_id").alias("topic_id")),
                lambda rows: send_deletes(rows, clusters, creds, kafka)))
        if names.ALTER in actions:
            # Only what the validateOnly pass accepted, configs and partitions alike.
            sends.append((
                alter_requests(plan).join(passed.select("cluster", "topic"),
                                          on=["cluster", "topic"], how="left_semi"),
                lambda rows: send_alters(rows, clusters, creds, kafka, validate_only=False)))
        return sends

    def unreached(self, ctx: RunContext, state: RunState, error_name: str,
                  reason: str) -> DataFrame:
        return self._unsent(ctx, state, [frame for frame, _ in self._requests(ctx, state)],
                            error_name, reason)

    @staticmethod
    def _unsent(ctx: RunContext, state: RunState, frames: Sequence[DataFrame],
                error_name: str, reason: str) -> DataFrame:
        every = functools.reduce(DataFrame.unionByName,
                                 [frame.select("cluster", "topic") for frame in frames])
        return result_audit(without_answer(every, names.APPLY, names.FAILED, error_name,
                                           reason),
                            require(state.of(TopicState).plan, "plan"), ctx.run_id,
                            utc_now(), ctx.audit)

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        topics = state.of(TopicState)
        plan = require(topics.plan, "plan")
        size = ctx.conf.kafka.batch_size * ctx.conf.kafka.max_in_flight_requests
        waves = max(1, -(-_most_per_cluster(state, apply_actions(ctx)) // size))
        sends = [(frame.withColumn(_WAVE, _wave_of(size)), send)
                 for frame, send in self._requests(ctx, state)]
        results: list[DataFrame] = []
        with job_label(ctx.spark, "apply: CreateTopics, DeleteTopics, alters"):
            for wave in range(waves):
                if wave > 0:
                    later = [frame.where(F.col(_WAVE) >= wave) for frame, _ in sends]
                    try:
                        fence(ctx, state, self, unsent=functools.partial(
                            self._unsent, ctx, state, later))
                    except LockUnavailable as exc:
                        # What was sent is recorded and verified; nothing more is sent.
                        state.halted = exc
                        break
                now = [(frame.where(F.col(_WAVE) == wave).drop(_WAVE), send)
                       for frame, send in sends]
                sent = answered(
                    functools.reduce(DataFrame.unionByName, [send(f) for f, send in now]),
                    functools.reduce(DataFrame.unionByName,
                                     [f.select("cluster", "topic") for f, _ in now]),
                    names.APPLY, names.UNKNOWN, without_answer)
                applied = settle_existing(sent, plan)
                recorded(ctx, topics, names.APPLY,
                         result_audit(applied, plan, ctx.run_id, utc_now(), ctx.audit))
                results.append(applied)
            ctx.steps.done("create")
        topics.applied = every = functools.reduce(DataFrame.unionByName, results)
        ctx.commits.side("apply-count", lambda: log_phase(names.APPLY, started, every))


class Verify(Phase):
    """Every created topic has a leader on each partition, every deleted one is gone, every
    altered one shows its change; settles the `unknown` outcomes a timeout left."""

    name = "verify"
    kind = NAME
    reads = ("topics.plan", "topics.applied")
    writes = ("topics.verified",)
    runs_tasks = True
    settles = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return state.of(TopicState).applied is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        topics = state.of(TopicState)
        plan, applied = require(topics.plan, "plan"), require(topics.applied, "applied")
        to_verify = F.col("outcome").isin(*_VERIFIED)
        with job_label(ctx.spark, "apply: verify leaders, deletions and alters"):
            requests = applied.where(to_verify).select("cluster", "topic").join(
                plan.select("cluster", "topic", "action", "config_ops",
                            *change_columns()).drop("new_assignment"),
                on=["cluster", "topic"], how="inner")
            verified = answered(
                verify(requests, ctx.clusters, ctx.credentials, ctx.conf.kafka),
                requests.select("cluster", "topic"), names.VERIFY, names.UNKNOWN,
                without_answer)
            ctx.steps.done("verify")
            recorded(ctx, topics, names.VERIFY,
                     result_audit(verified, plan, ctx.run_id, utc_now(), ctx.audit))
            ctx.commits.side("verify-count", lambda: log_phase(names.VERIFY, started, verified))
            ctx.steps.done("audit write")
        topics.verified = verified
