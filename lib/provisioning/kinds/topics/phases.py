"""The topics' phases of `plan` and `apply` up to the validateOnly pass (see engine.py):

    manifests -> snapshot -> plan -> validate

The changes themselves (apply, verify) are `kinds.topics.changes`; `import` and `snapshot`
are `kinds.topics.adopt`; `check` is `kinds.topics.check`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.delta.audit_log import created_by_job
from provisioning.delta.idempotent import Transaction
from provisioning.delta.snapshots import record_view
from provisioning.delta.tables import TableRef
from provisioning.kinds.topics.conf import TopicsConf
from provisioning.kinds.topics.executors import (
    read_last_writes,
    read_live,
    send_alters,
    send_creates,
)
from provisioning.kinds.topics.plan import change_columns, unmanaged, without_answer
from provisioning.kinds.topics.planning import PlanCounts, plan_counts, planned_plan, read_desired
from provisioning.kinds.topics.state import TopicState
from provisioning.results import utc_now
from provisioning.run.engine import (
    Phase,
    RunContext,
    log_phase,
    recorded,
    require,
)
from provisioning.run.executors import answered, materialized
from provisioning.run.kind import PlanLayer, layer_declarations
from provisioning.run.options import ApplyOptions
from provisioning.run.phases import record_plan
from provisioning.run.state import RunState
from provisioning.session import job_label
from provisioning.transforms.audit import plan_audit, result_audit
from provisioning.transforms.scope import in_scope

NAME = "topics"
REQUEST_COLUMNS = ("cluster", "topic", "partitions", "replication_factor",
                   "replica_assignment", "configs")
# The `--allow-*` flags of the topics (kinds.topics.cli).
DELETES, ALTER = names.ALLOW_DELETES, names.ALLOW_ALTER


def apply_actions(ctx: RunContext) -> tuple[str, ...]:
    """The plan actions an apply with the run's options sends requests for."""
    options = ctx.options
    if not isinstance(options, ApplyOptions):
        return ()
    return (names.CREATE, *((names.DELETE,) if options.allows(DELETES) else ()),
            *((names.ALTER,) if options.allows(ALTER) else ()))


def clean(action: str) -> Column:
    """PLAN rows of `action` that are valid and no policy refused."""
    return ((F.size("row_errors") == 0) & (F.size("policy_violations") == 0)
            & (F.col("action") == action))


def planned(state: RunState, *actions: str) -> int:
    """Clean PLAN rows (outcome planned) of `actions`."""
    return sum(n for (_, action, outcome), n in (state.of(TopicState).counts or {}).items()
               if action in actions and outcome == names.PLANNED)


def in_run(ctx: RunContext, live: DataFrame) -> DataFrame:
    """The live topics of the run's scope: its clusters, its topic glob (what plan and check
    judge)."""
    return live.transform(in_scope(ctx.cluster_names, ctx.options.scope.topics_glob,
                                   tuple(ctx.conf.clusters)))


class ReadManifests(Phase):
    """The manifests' rows, validated and scoped; read once (checkpointed), or served by
    the shared Connect session's cache (`run.manifest_cache`)."""

    name = "manifests"
    kind = NAME
    writes = ("topics.desired",)

    def run(self, ctx: RunContext, state: RunState) -> None:
        scope = ctx.options.scope
        with job_label(ctx.spark, f"{ctx.command}: read manifests"):
            # Read and validated once (pinned): the snapshot (topics to describe by name),
            # the plan and both sides of the policy split read these rows.
            state.of(TopicState).desired = read_desired(
                ctx.spark, ctx.conf, ctx.cluster_names, scope.topics_glob)
        ctx.steps.done("manifest read")


def record_live(ctx: RunContext, live: DataFrame, started: float, always: bool) -> None:
    """Commit `live` (materialized SNAPSHOT rows) to the snapshots table beside the next
    steps, when some cluster changed since the table's last record or `always`."""
    table = TableRef(ctx.conf.tables.snapshots)
    txn = Transaction(f"topic-provisioning-snapshots-{ctx.run_id}", 1)
    ctx.commits.record("snapshot-write", lambda: record_view(
        live, table, txn, ctx.cluster_names, "the snapshot", always=always))
    # Only a progress line: counted off the run's path.
    ctx.commits.side("snapshot-count",
                     lambda: log_phase("snapshot", started, live, by="cluster"))


def snapshot(ctx: RunContext, state: RunState, wanted: DataFrame | None, always: bool,
             record: bool = True) -> DataFrame:
    """Every live topic of the run's clusters (and the `wanted` ones by name), materialized
    and, with `record`, committed to the snapshots table beside the next steps (it lands
    before anything changes Kafka); unless `always`, only when some cluster changed since
    the table's last record (`delta.snapshots.record_view`)."""
    started = time.monotonic()
    states = require(state.states, "states")
    with job_label(ctx.spark, f"{ctx.command}: snapshot live metadata"):
        live = materialized(read_live(
            ctx.spark, ctx.clusters, ctx.credentials, ctx.conf.kafka, ctx.run_id,
            {n: s.cluster_id for n, s in states.items()}, wanted=wanted)).drop("found")
        ctx.steps.done("snapshot")
        if record:
            record_live(ctx, live, started, always)
    return live


class Snapshot(Phase):
    """Every live topic of the run's clusters, and the manifests' topics described by name
    (a principal's listing leaves out what it may not describe); recorded in the
    snapshots table while the plan is computed, when a cluster changed since the table's
    last record or `always_record` (`check`'s view)."""

    name = "snapshot"
    kind = NAME
    reads = ("states", "topics.desired")
    writes = ("topics.live",)
    runs_tasks = True

    def __init__(self, always_record: bool = False) -> None:
        self.always_record = always_record

    def run(self, ctx: RunContext, state: RunState) -> None:
        topics = state.of(TopicState)
        desired = require(topics.desired, "desired")
        topics.live = snapshot(ctx, state, desired.where(F.size("row_errors") == 0),
                               always=self.always_record)


class Plan(Phase):
    """Desired joined with live, judged by the policies (`planning.planned_plan`), with
    what the kinds that extend the topics' rows plan on them (their layers); the plan's
    audit rows are the run's intent."""

    name = "plan"
    kind = NAME
    records_view = True
    plans = True

    def __init__(self, layers: Sequence[PlanLayer] = ()) -> None:
        self.layers = tuple(layers)
        reads, writes = layer_declarations(self.layers)
        self.reads = ("states", "topics.desired", "topics.live", *reads)
        self.writes = ("topics.plan", "topics.counts", "topics.unmanaged", *writes)

    def run(self, ctx: RunContext, state: RunState) -> None:
        self.plan(ctx, state)

    def plan(self, ctx: RunContext, state: RunState, keys: DataFrame | None = None,
             first: DataFrame | None = None) -> None:
        """Plan the run's topics; under an apply's lock (kinds.topics.relock) only the
        (cluster, topic) `keys` read again are planned again, and the `first` plan's rows
        of every other key are kept."""
        started = time.monotonic()
        topics = state.of(TopicState)
        live = require(topics.live, "live")
        layers = self.layers
        with job_label(ctx.spark, f"{ctx.command}: plan, policies"):
            scoped = in_run(ctx, live)
            desired = require(topics.desired, "desired")
            created = (created_by_job(ctx.spark, ctx.conf.tables.audit)
                       if ctx.conf.section(TopicsConf).deletes.prune else None)
            planned_live = scoped
            if keys is not None:
                # Under the lock: only the keys read again are planned again (the policies
                # still see every live topic), the first pass's other rows are kept.
                desired = desired.join(keys, ["cluster", "topic"], "left_semi")
                planned_live = scoped.join(keys, ["cluster", "topic"], "left_semi")
            plan, counts = planned_plan(
                ctx.spark, ctx.conf, require(state.states, "states"), desired, live,
                planned_live, created, [bound(ctx, state, layer, live) for layer in layers],
                last_writes=functools.partial(read_last_writes, ctx.clusters, ctx.credentials,
                                              ctx.conf.kafka),
                counted=None if keys is not None else functools.partial(claim_early, ctx))
            if keys is not None:
                # One partition, as a plan of this size is: its audit commit is one file.
                kept = require(first, "first plan").join(keys, ["cluster", "topic"],
                                                         "left_anti")
                plan = plan.unionByName(kept, allowMissingColumns=True).coalesce(1) \
                    .localCheckpoint(eager=True)
                counts = plan_counts(plan)
            for layer in layers:
                layer.planned(ctx, state, plan, counts)
            ctx.steps.done("plan and policies")
        self.record(ctx, state, plan, counts, scoped, started)

    def keep(self, ctx: RunContext, state: RunState, plan: DataFrame, counts: PlanCounts,
             unmanaged_count: Mapping[str, int] | None) -> None:
        """`plan` (with its `counts` and `unmanaged` count, counted again when None) as this
        phase's plan, recorded as `run` records one: an apply's first plan, when the view
        read under its lock is the view it was made on (kinds.topics.relock)."""
        started = time.monotonic()
        topics = state.of(TopicState)
        topics.unmanaged = unmanaged_count
        self.record(ctx, state, plan, counts,
                    None if unmanaged_count is not None
                    else in_run(ctx, require(topics.live, "live")), started)

    def record(self, ctx: RunContext, state: RunState, plan: DataFrame, counts: PlanCounts,
               scoped: DataFrame | None, started: float) -> None:
        """The plan's audit rows recorded, its unmanaged topics (of `scoped`, unless None)
        counted off the run's path, the saved-plan hook given it; `state` holds it."""
        topics = state.of(TopicState)
        side = None
        if scoped is not None:
            scope: DataFrame = scoped

            def count_unmanaged() -> None:
                with job_label(ctx.spark, f"{ctx.command}: count unmanaged topics"):
                    topics.unmanaged = {
                        r["cluster"]: int(r["n"]) for r in unmanaged(scope, plan)
                        .groupBy("cluster").agg(F.count(F.lit(1)).alias("n")).collect()}

            side = ("unmanaged", count_unmanaged)
        with job_label(ctx.spark, f"{ctx.command}: audit plan"):
            record_plan(ctx, NAME, topics, plan, counts,
                        plan_audit(plan, ctx.run_id, utc_now(), ctx.audit), started, names.PLAN,
                        f"{ctx.command}: saved plan", side)


def claim_early(ctx: RunContext, counts: PlanCounts) -> None:
    """An apply's first plan, before its policies, has a change the apply sends: its lock's
    claim starts now, beside the policies (the re-plan under the lock waits for it; a plan
    whose policies then refuse every change gives the lock back unused)."""
    if ctx.start_lock is not None and any(
            n for (_, action, outcome), n in counts.items()
            if action in apply_actions(ctx) and outcome == names.PLANNED):
        ctx.start_lock()


def bound(ctx: RunContext, state: RunState, layer: PlanLayer, live: DataFrame
          ) -> tuple[PlanLayer, Callable[[DataFrame, PlanCounts], DataFrame],
                     Callable[[DataFrame, PlanCounts], DataFrame]]:
    """A layer with its `attach` and `judge` bound to the run (`planning.planned_plan`)."""
    def attach(rows: DataFrame, counts: PlanCounts) -> DataFrame:
        return layer.attach(ctx, state, rows, counts, live)

    def judge(rows: DataFrame, counts: PlanCounts) -> DataFrame:
        return layer.judge(ctx, state, rows, counts, live)

    return layer, attach, judge


def alter_requests(plan: DataFrame) -> DataFrame:
    """The request rows of the clean ALTERs: cluster, topic, config_ops, partitions_to,
    new_assignment."""
    return (plan.where(clean(names.ALTER))
            .select("cluster", "topic", "config_ops", *change_columns())
            .drop("before_partitions"))


class Validate(Phase):
    """The broker's own verdict before anything changes: CreateTopics with validateOnly for
    every clean CREATE (its checks and policies, KIP-108, and the configs the topic would
    get, KIP-525), IncrementalAlterConfigs and CreatePartitions with validateOnly for every
    clean ALTER (KIP-339, KIP-195)."""

    name = "validate"
    kind = NAME
    reads = ("topics.plan", "topics.counts")
    writes = ("topics.validated",)
    runs_tasks = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return planned(state, names.CREATE, names.ALTER) > 0

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        topics = state.of(TopicState)
        plan = require(topics.plan, "plan")
        creatable = plan.where(clean(names.CREATE))
        alters = alter_requests(plan)
        with job_label(ctx.spark, f"{ctx.command}: validateOnly CreateTopics, alters"):
            validated = answered(
                send_creates(
                    creatable.select(*REQUEST_COLUMNS,
                                     F.lit(None).cast("int").alias("known_partitions")),
                    ctx.clusters, ctx.credentials, ctx.conf.kafka, validate_only=True,
                ).unionByName(send_alters(
                    alters, ctx.clusters, ctx.credentials, ctx.conf.kafka, validate_only=True)),
                creatable.select("cluster", "topic").unionByName(
                    alters.select("cluster", "topic")),
                names.VALIDATE, names.FAILED, without_answer)
            ctx.steps.done("validate")
            rows = result_audit(validated, plan, ctx.run_id, utc_now(), ctx.audit)
            recorded(ctx, topics, names.VALIDATE, rows)
            # The progress line is counted off the run's path.
            ctx.commits.side("validate-count",
                             lambda: log_phase(names.VALIDATE, started, validated))
            ctx.steps.done("audit write")
        topics.validated = validated
