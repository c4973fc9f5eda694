"""The topics' part of an apply's re-plan under its lock (`run.relock`).

Holding the lock, the run reads again, through the one reader of live topics
(`kinds.topics.executors.read_live`, a Spark task per cluster):

- each cluster's topic listing (every topic's id, partitions and replicas: what the
  per-cluster rules count, the partition budgets, the brokers' loads);
- every topic the first plan gives an action other than NOOP, every topic the listing
  shows otherwise than the first read did (new, gone, another id, other partitions or
  replicas), and every topic the layers of the kinds that extend the topics' rows ask for
  (a topic with a partition being moved): their metadata, configs and
  consumer groups, as the first read had them (`kafka.snapshot.reread_rows`).

The layers read again what they plan on. The topics read again are
planned again on that view (the policies judge them with every live topic of the
clusters, the others as the first read had them, ids and partitions as the listing has
them); the first plan's rows of every other topic (NOOP rows, invalid manifest rows) are
kept. When every row read again is the first read's row (all its values but the run id and
the time it was read, compared by digest in one Spark job: `delta.snapshots.same_rows`) and
every layer found what it first read, the view under the lock is the first view: planning
it again would give the first plan back, so the first plan is kept whole (`Plan.keep`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.delta.snapshots import same_rows
from provisioning.kinds.topics.executors import read_live
from provisioning.kinds.topics.phases import NAME, Plan, record_live
from provisioning.kinds.topics.state import TopicState
from provisioning.run.engine import Phase, RunContext, require
from provisioning.run.executors import materialized
from provisioning.run.kind import PlanLayer, layer_declarations
from provisioning.run.state import RunState
from provisioning.session import job_label

_KEYS = ["cluster", "topic"]


class TopicsRelock(Phase):
    """Read the run's topics again under its lock, and keep the first plan or plan again
    (see the module docstring)."""

    name = "topics under the lock"
    kind = NAME

    def __init__(self, layers: Sequence[PlanLayer] = ()) -> None:
        self.layers = tuple(layers)
        reads, writes = layer_declarations(self.layers, relock=True)
        self._plan = Plan(self.layers)
        self.reads = ("states", "topics.desired", "topics.live", "topics.plan",
                      "topics.counts", "topics.unmanaged", *self._plan.reads, *reads)
        self.writes = ("topics.live", "topics.plan", "topics.counts", "topics.unmanaged",
                       "topics.kept_first_plan", *self._plan.writes, *writes)

    def run(self, ctx: RunContext, state: RunState) -> None:
        topics = state.of(TopicState)
        first_plan = require(topics.plan, "plan")
        first_counts = require(topics.counts, "counts")
        # Counted by the first pass off its path (the engine waited for it): None when
        # that count failed.
        first_unmanaged = topics.unmanaged
        layers = self.layers
        first_layers = [layer.set_aside_first_plan(ctx, state) for layer in layers]
        # The first pass's records are gone (the engine dropped them): what the phases
        # after this one read comes from the view read under the lock.
        topics.plan = topics.counts = topics.unmanaged = None
        same_layers = True
        extra: list[tuple[str, str]] = []
        for layer in layers:
            unchanged, asked = layer.reread(ctx, state)
            same_layers = same_layers and unchanged
            extra += asked
        keys, same_topics = self._reread(ctx, state, first_plan, extra)
        topics.kept_first_plan = same_layers and same_topics
        if topics.kept_first_plan:
            for layer, first in zip(layers, first_layers, strict=True):
                layer.restore_first_plan(ctx, state, first)
            self._plan.keep(ctx, state, first_plan, first_counts, first_unmanaged)
            ctx.steps.done("first plan kept under the lock")
        else:
            self._plan.plan(ctx, state, keys, first_plan)
            ctx.steps.done("plan again under the lock")

    @staticmethod
    def _reread(ctx: RunContext, state: RunState, first_plan: DataFrame,
                extra: list[tuple[str, str]]) -> tuple[DataFrame, bool]:
        """The run's view read again: `topics.live` becomes the first view with the topics
        read again replaced, recorded always. The keys read again, and whether they are as
        the first read had them."""
        started = time.monotonic()
        topics = state.of(TopicState)
        first = require(topics.live, "live")
        states = require(state.states, "states")
        changing = first_plan.where((F.col("action") != names.NOOP)
                                    & F.col("topic").isNotNull()).select(*_KEYS)
        if extra:
            changing = changing.unionByName(ctx.spark.createDataFrame(
                extra, "cluster string, topic string"))
        with job_label(ctx.spark, f"{ctx.command}: read again under the lock"):
            read = materialized(read_live(
                ctx.spark, ctx.clusters, ctx.credentials, ctx.conf.kafka, ctx.run_id,
                {n: s.cluster_id for n, s in states.items()}, seen=first, changing=changing))
            ctx.steps.done("read again under the lock")
            keys = read.select(*_KEYS)
            fresh = read.where(F.col("found")).drop("found")
            live = (first.join(keys, _KEYS, "left_anti").unionByName(fresh)
                    .localCheckpoint(eager=True))
        # The view the run changes Kafka on is recorded, changed or not.
        record_live(ctx, live, started, always=True)
        topics.live = live
        with job_label(ctx.spark, f"{ctx.command}: rows read again against the first read"):
            return keys, same_rows(first.join(keys, _KEYS, "left_semi"), fresh)
