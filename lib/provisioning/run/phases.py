"""The phases of `plan` and `apply`, each one unit over the run's state (see engine.py).

    preflight -> manifests -> snapshot -> plan -> validate -> apply -> verify

`plan` runs up to validate (or plan, with --no-validate); `apply` runs them all.
`import` is preflight -> import: the live topics written as a manifest table.
`check` is preflight -> manifests -> snapshot -> check: the live topics judged, as
VIOLATIONS rows.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf import Conf
from provisioning.delta.audit_log import created_by_job
from provisioning.delta.manifests import write_manifest_frame
from provisioning.delta.snapshots import record_view
from provisioning.delta.tables import (
    TableRef,
    Transaction,
    append,
    read_table,
    table_exists,
)
from provisioning.errors import LockUnavailable
from provisioning.kafka import reassign
from provisioning.kafka.snapshot import preflight
from provisioning.results import ImportSummary, utc_now
from provisioning.run import executors
from provisioning.run.engine import (
    Phase,
    RunContext,
    RunState,
    fence,
    log_counts,
    log_phase,
    require,
)
from provisioning.run.options import ApplyOptions, ImportOptions, PlanOptions, RunOptions
from provisioning.run.planning import (
    cut,
    plan_counts,
    planned_plan,
    policy_context,
    read_desired,
)
from provisioning.run.reassign_phases import unsettled_moves
from provisioning.session import job_label
from provisioning.transforms.adopt import importable, manifest_rows, unmanaged
from provisioning.transforms.audit import plan_audit, plan_outcome, result_audit
from provisioning.transforms.check import violations
from provisioning.transforms.plan import change_columns
from provisioning.transforms.reassign.plan import moves_planned
from provisioning.transforms.results import settle_existing, without_answer
from provisioning.transforms.scope import in_scope, topics_matching
from schemas import TOPIC_RESULT

# The apply outcomes the verify phase looks at again.
_VERIFIED = (names.CREATED, names.UNKNOWN, names.DELETED, names.ALTERED)
_REQUEST_COLUMNS = ("cluster", "topic", "partitions", "replication_factor",
                    "replica_assignment", "configs")


def pipeline_options(ctx: RunContext) -> RunOptions:
    """The options of a `plan` or `apply` run (the phases that only they run use them)."""
    if not isinstance(ctx.options, PlanOptions | ApplyOptions):
        raise TypeError(f"phase run by {ctx.command}, which is not plan or apply")
    return ctx.options


def _clean(action: str) -> Column:
    """PLAN rows of `action` that are valid and no policy refused."""
    return ((F.size("row_errors") == 0) & (F.size("policy_violations") == 0)
            & (F.col("action") == action))


class Preflight(Phase):
    """Reach every cluster and check its identity before anything reads or changes it."""

    name = "preflight"
    writes = ("states",)

    def run(self, ctx: RunContext, state: RunState) -> None:
        with job_label(ctx.spark, f"{ctx.command}: preflight"):
            state.states = preflight(ctx.clusters, ctx.credentials, ctx.conf.kafka)
        ctx.steps.done("preflight")
        ctx.record.clusters = [
            {"cluster": n, "cluster_id": s.cluster_id, "brokers": len(s.broker_ids),
             "topics": None, "error": None}
            for n, s in state.states.items()
        ]


class ReadManifests(Phase):
    """The manifests' rows, validated and scoped; read once (checkpointed), or served by
    the shared Connect session's cache (`run.manifest_cache`)."""

    name = "manifests"
    writes = ("desired",)

    def run(self, ctx: RunContext, state: RunState) -> None:
        scope = ctx.options.scope
        with job_label(ctx.spark, f"{ctx.command}: read manifests"):
            # Read and validated once (pinned): the snapshot (topics to describe by name),
            # the plan and both sides of the policy split read these rows.
            state.desired = read_desired(ctx.spark, ctx.conf, ctx.cluster_names,
                                         scope.topics_glob)
        ctx.steps.done("manifest read")


def _snapshot(ctx: RunContext, state: RunState, wanted: DataFrame | None,
              always: bool = False) -> DataFrame:
    """Every live topic of the run's clusters (and the `wanted` ones by name), materialized
    and committed to the snapshots table beside the next steps (it lands before anything
    changes Kafka); unless `always`, only when some cluster changed since the table's last
    record (`delta.snapshots.record_view`)."""
    started = time.monotonic()
    states = require(state.states, "states")
    with job_label(ctx.spark, f"{ctx.command}: snapshot live metadata"):
        live = executors.snapshot_topics(
            ctx.spark, ctx.clusters, ctx.credentials, ctx.conf.kafka, ctx.run_id,
            {n: s.cluster_id for n, s in states.items()}, wanted=wanted
        ).localCheckpoint(eager=True)
        ctx.steps.done("snapshot")
        record_live(ctx, live, started, always)
    return live


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


class Snapshot(Phase):
    """Every live topic of the run's clusters, and the manifests' topics described by name
    (a principal's listing leaves out what it may not describe); recorded in the
    snapshots table while the plan is computed, when a cluster changed since the table's
    last record or `always_record` (the view an apply changes Kafka on, `check`'s). And the
    partitions being reassigned on each cluster (ListPartitionReassignments, from the
    driver)."""

    name = "snapshot"
    reads = ("states", "desired")
    writes = ("live", "in_flight", "unlisted")
    runs_tasks = True

    def __init__(self, always_record: bool = False) -> None:
        self.always_record = always_record

    def run(self, ctx: RunContext, state: RunState) -> None:
        desired = require(state.desired, "desired")
        state.live = _snapshot(ctx, state, desired.where(F.size("row_errors") == 0),
                               always=self.always_record)
        state.in_flight, state.unlisted = reassign.in_flight(ctx.clusters, ctx.credentials,
                                                             ctx.conf.kafka)
        ctx.steps.done("reassignments in flight")


class RecordSnapshot(Phase):
    """`snapshot`: every live topic of the run's clusters, recorded in the snapshots table."""

    name = "snapshot"
    reads = ("states",)
    writes = ("live",)
    runs_tasks = True

    def run(self, ctx: RunContext, state: RunState) -> None:
        state.live = _snapshot(ctx, state, None, always=True)


class Plan(Phase):
    """Desired joined with live, judged by the policies (`planning.planned_plan`); the plan's
    audit rows are committed while the saved-plan hook and the validateOnly pass run."""

    name = "plan"
    reads = ("states", "desired", "live", "in_flight", "unlisted")
    writes = ("plan", "plan_rows", "plan_counts")
    records_view = True

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        live = require(state.live, "live")
        with job_label(ctx.spark, f"{ctx.command}: plan, policies"):
            in_run = _in_run(ctx, live)
            desired = require(state.desired, "desired")
            created = (created_by_job(ctx.spark, ctx.conf.tables.audit)
                       if ctx.conf.deletes.prune else None)
            flights = list(state.in_flight or [])
            flights += unsettled_moves(ctx, in_run, flights)
            planned_live, keys = in_run, state.replanned
            if keys is not None:
                # Under the lock: only the keys read again are planned again (the policies
                # still see every live topic), the first pass's other rows are kept.
                desired = desired.join(keys, ["cluster", "topic"], "left_semi")
                planned_live = in_run.join(keys, ["cluster", "topic"], "left_semi")
            plan, counts = planned_plan(ctx.spark, ctx.conf, require(state.states, "states"),
                                        desired, live, planned_live, created, flights,
                                        state.unlisted)
            if keys is not None:
                # One partition, as a plan of this size is: its audit commit is one file.
                plan = plan.unionByName(require(state.kept_plan, "kept_plan").join(
                    keys, ["cluster", "topic"], "left_anti")).coalesce(1).localCheckpoint(
                    eager=True)
                counts = plan_counts(plan)
            if any(action in (names.REASSIGN, names.ALTER) for (_, action, _) in counts):
                state.move_counts = {
                    (r["cluster"], r["outcome"]): int(r["n"]) for r in
                    plan.where(moves_planned()).groupBy("cluster", plan_outcome().alias(
                        "outcome")).agg(F.count(F.lit(1)).alias("n")).collect()}
            ctx.steps.done("plan and policies")
        self._record(ctx, state, plan, counts, in_run, started)

    def keep(self, ctx: RunContext, state: RunState, plan: DataFrame,
             counts: Mapping[tuple[str, str, str], int],
             move_counts: Mapping[tuple[str, str], int] | None,
             unmanaged: Mapping[str, int] | None) -> None:
        """`plan` (with its `counts`, `move_counts` and `unmanaged` count, counted again
        when None) as this phase's plan, recorded as `run` records one: an apply's first
        plan, when the view read under its lock is the view it was made on
        (run/relock.py)."""
        started = time.monotonic()
        state.move_counts = move_counts
        state.unmanaged = unmanaged
        self._record(ctx, state, plan, counts,
                     None if unmanaged is not None
                     else _in_run(ctx, require(state.live, "live")), started)

    def _record(self, ctx: RunContext, state: RunState, plan: DataFrame,
                counts: Mapping[tuple[str, str, str], int], in_run: DataFrame | None,
                started: float) -> None:
        """The plan's audit rows committed, its unmanaged topics (of `in_run`, unless
        None) counted off the run's path, the saved-plan hook given it; `state` holds
        it."""
        with job_label(ctx.spark, f"{ctx.command}: audit plan"):
            audit = plan_audit(plan, ctx.run_id, utc_now())
            by_outcome: dict[str, int] = {}
            for (_, _, outcome), n in counts.items():
                by_outcome[outcome] = by_outcome.get(outcome, 0) + n
            log_counts(names.PLAN, started, by_outcome)
            ctx.commits.audit(names.PLAN, audit)

        if in_run is not None:
            scope: DataFrame = in_run

            def count_unmanaged() -> None:
                with job_label(ctx.spark, f"{ctx.command}: count unmanaged topics"):
                    state.unmanaged = {
                        r["cluster"]: int(r["n"]) for r in unmanaged(scope, plan)
                        .groupBy("cluster").agg(F.count(F.lit(1)).alias("n")).collect()}

            ctx.commits.side("unmanaged", count_unmanaged)
        state.plan, state.plan_rows, state.plan_counts = plan, audit, counts
        state.audit_rows.append(audit)
        on_plan = pipeline_options(ctx).on_plan
        if on_plan is not None:
            with job_label(ctx.spark, f"{ctx.command}: saved plan"):
                on_plan(plan)


def planned(state: RunState, *actions: str) -> int:
    """Clean PLAN rows (outcome planned) of `actions`."""
    return sum(n for (_, action, outcome), n in (state.plan_counts or {}).items()
               if action in actions and outcome == names.PLANNED)


class Validate(Phase):
    """The broker's own verdict before anything changes: CreateTopics with validateOnly for
    every clean CREATE (its checks and policies, KIP-108, and the configs the topic would
    get, KIP-525), IncrementalAlterConfigs and CreatePartitions with validateOnly for every
    clean ALTER (KIP-339, KIP-195)."""

    name = "validate"
    reads = ("plan",)
    writes = ("validated",)
    runs_tasks = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return planned(state, names.CREATE, names.ALTER) > 0

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        plan = require(state.plan, "plan")
        creatable = plan.where(_clean(names.CREATE))
        alters = alter_requests(plan)
        with job_label(ctx.spark, f"{ctx.command}: validateOnly CreateTopics, alters"):
            validated = executors.answered(
                executors.send_creates(
                    creatable.select(*_REQUEST_COLUMNS,
                                     F.lit(None).cast("int").alias("known_partitions")),
                    ctx.clusters, ctx.credentials, ctx.conf.kafka, validate_only=True,
                ).unionByName(executors.send_alters(
                    alters, ctx.clusters, ctx.credentials, ctx.conf.kafka, validate_only=True)),
                creatable.select("cluster", "topic").unionByName(
                    alters.select("cluster", "topic")),
                names.VALIDATE, names.FAILED)
            ctx.steps.done("validate")
            rows = result_audit(validated, plan, ctx.run_id, utc_now())
            ctx.commits.audit(names.VALIDATE, rows)
            # The progress line is counted off the run's path.
            ctx.commits.side("validate-count",
                             lambda: log_phase(names.VALIDATE, started, validated))
            ctx.steps.done("audit write")
        state.validated = validated
        state.audit_rows.append(rows)


def _in_run(ctx: RunContext, live: DataFrame) -> DataFrame:
    """The live topics of the run's scope: its clusters, its topic glob (what plan and check
    judge)."""
    return live.transform(in_scope(ctx.cluster_names, ctx.options.scope.topics_glob,
                                   tuple(ctx.conf.clusters)))


def alter_requests(plan: DataFrame) -> DataFrame:
    """The request rows of the clean ALTERs: cluster, topic, config_ops, partitions_to,
    new_assignment."""
    return (plan.where(_clean(names.ALTER))
            .select("cluster", "topic", "config_ops", *change_columns())
            .drop("before_partitions"))


class Apply(Phase):
    """The real CreateTopics for what validateOnly passed, DeleteTopics (by topic id) when
    deletes are allowed, and the alters validateOnly passed when alters are allowed.

    Requests go out in waves, one Spark job each, of `kafka.batch_size` x
    `kafka.max_in_flight_requests` topics per cluster and kind; before each wave the run is
    at a safe point (a signal, a lost lock: the engine's `fence`), and each wave's rows are
    committed as it ends.
    """

    name = "apply"
    reads = ("plan", "validated")
    writes = ("applied",)
    changes_kafka = True
    runs_tasks = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        # From the plan's counts: a run whose creates the broker all refused still runs
        # apply, over no request (cheaper than counting the validateOnly verdicts first).
        options = pipeline_options(ctx)
        if not isinstance(options, ApplyOptions):
            return False
        return sum(planned(state, action) for action in apply_actions(options)) > 0

    @staticmethod
    def _requests(ctx: RunContext, state: RunState) -> list[tuple[DataFrame, Sender]]:
        """What this apply sends, with how: the creates validateOnly passed, the clean
        deletes (when deletes are allowed), the alters validateOnly passed (when alters are
        allowed)."""
        plan, validated = require(state.plan, "plan"), state.validated
        options = pipeline_options(ctx)
        if validated is None:  # nothing was validated: the run only deletes
            validated = ctx.spark.createDataFrame([], TOPIC_RESULT)
        passed = validated.where(F.col("outcome") == names.VALIDATED).select(
            "cluster", "topic", F.col("result_partitions").alias("known_partitions"))
        kafka, clusters, creds = ctx.conf.kafka, ctx.clusters, ctx.credentials
        sends: list[tuple[DataFrame, Sender]] = [(
            plan.where(_clean(names.CREATE)).select(*_REQUEST_COLUMNS)
            .join(passed, on=["cluster", "topic"], how="inner"),
            lambda rows: executors.send_creates(rows, clusters, creds, kafka,
                                                validate_only=False))]
        if isinstance(options, ApplyOptions) and options.allow_deletes:
            sends.append((
                plan.where(_clean(names.DELETE)).select(
                    "cluster", "topic", F.col("live_topic_id").alias("topic_id")),
                lambda rows: executors.send_deletes(rows, clusters, creds, kafka)))
        if isinstance(options, ApplyOptions) and options.allow_alter:
            # Only what the validateOnly pass accepted, configs and partitions alike.
            sends.append((
                alter_requests(plan).join(passed.select("cluster", "topic"),
                                          on=["cluster", "topic"], how="left_semi"),
                lambda rows: executors.send_alters(rows, clusters, creds, kafka,
                                                   validate_only=False)))
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
                            require(state.plan, "plan"), ctx.run_id, utc_now())

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        plan = require(state.plan, "plan")
        options = pipeline_options(ctx)
        size = ctx.conf.kafka.batch_size * ctx.conf.kafka.max_in_flight_requests
        waves = max(1, -(-_most_per_cluster(state, apply_actions(options)) // size))
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
                sent = executors.answered(
                    functools.reduce(DataFrame.unionByName, [send(f) for f, send in now]),
                    functools.reduce(DataFrame.unionByName,
                                     [f.select("cluster", "topic") for f, _ in now]),
                    names.APPLY, names.UNKNOWN)
                applied = settle_existing(sent, plan)
                rows = result_audit(applied, plan, ctx.run_id, utc_now())
                ctx.commits.audit(names.APPLY, rows)
                state.audit_rows.append(rows)
                results.append(applied)
            ctx.steps.done("create")
        state.applied = functools.reduce(DataFrame.unionByName, results)
        every = state.applied
        ctx.commits.side("apply-count", lambda: log_phase(names.APPLY, started, every))


Sender = Callable[[DataFrame], DataFrame]
_WAVE = "_wave"


def apply_actions(options: RunOptions) -> tuple[str, ...]:
    """The plan actions an apply with `options` sends requests for."""
    if not isinstance(options, ApplyOptions):
        return ()
    return (names.CREATE, *((names.DELETE,) if options.allow_deletes else ()),
            *((names.ALTER,) if options.allow_alter else ()))


def _most_per_cluster(state: RunState, actions: Sequence[str]) -> int:
    """The largest number of clean planned rows of one action on one cluster."""
    return max((n for (_, action, outcome), n in (state.plan_counts or {}).items()
                if action in actions and outcome == names.PLANNED), default=0)


def _wave_of(size: int) -> Column:
    """Which wave a request row goes out in: its rank among its cluster's rows, by topic,
    `size` to a wave."""
    rank = F.row_number().over(Window.partitionBy("cluster").orderBy("topic"))
    return F.floor((rank - 1) / F.lit(size)).cast("int")


class Verify(Phase):
    """Every created topic has a leader on each partition, every deleted one is gone, every
    altered one shows its change; settles the `unknown` outcomes a timeout left."""

    name = "verify"
    reads = ("plan", "applied")
    writes = ("verified",)
    runs_tasks = True
    settles = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return state.applied is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        plan, applied = require(state.plan, "plan"), require(state.applied, "applied")
        to_verify = F.col("outcome").isin(*_VERIFIED)
        with job_label(ctx.spark, "apply: verify leaders, deletions and alters"):
            requests = applied.where(to_verify).select("cluster", "topic").join(
                plan.select("cluster", "topic", "action", "config_ops",
                            *change_columns()).drop("new_assignment"),
                on=["cluster", "topic"], how="inner")
            verified = executors.answered(
                executors.verify(requests, ctx.clusters, ctx.credentials, ctx.conf.kafka),
                requests, names.VERIFY, names.UNKNOWN)
            ctx.steps.done("verify")
            rows = result_audit(verified, plan, ctx.run_id, utc_now())
            ctx.commits.audit(names.VERIFY, rows)
            ctx.commits.side("verify-count", lambda: log_phase(names.VERIFY, started, verified))
            ctx.steps.done("audit write")
        state.verified = verified
        state.audit_rows.append(rows)


class Import(Phase):
    """The live topics in scope as manifest rows (see `provisioning.transforms.adopt`),
    written to the import table in one commit; Kafka is only read."""

    name = "import"
    reads = ("states",)
    writes = ("live", "imported")
    runs_tasks = True

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        options = ctx.options
        if not isinstance(options, ImportOptions):
            raise TypeError("the import phase needs ImportOptions")
        states = require(state.states, "states")
        with job_label(ctx.spark, "import: read live metadata"):
            live = executors.snapshot_topics(
                ctx.spark, ctx.clusters, ctx.credentials, ctx.conf.kafka, ctx.run_id,
                {n: s.cluster_id for n, s in states.items()},
            ).transform(topics_matching(ctx.cluster_names, options.scope.topics_glob)
                        ).localCheckpoint(eager=True)
            ctx.steps.done("snapshot")
        managed = live.join(named_by_manifests(ctx, options), on=["cluster", "topic"],
                            how="left_semi").select("cluster", "topic",
                                                    F.lit(True).alias("_managed"))
        live = live.join(managed, on=["cluster", "topic"], how="left").localCheckpoint()
        is_managed = F.coalesce(F.col("_managed"), F.lit(False))
        kept = importable(protected_globs(ctx.conf), options.include_protected) & ~is_managed
        rows = manifest_rows(live.where(kept), options.owner, options.with_assignment)
        with job_label(ctx.spark, f"import: write {options.table}"):
            # --mode error was checked before the run started; Delta's own "error" mode
            # still refuses a table created since.
            version = write_manifest_frame(rows, options.table, options.mode)
            ctx.steps.done("write")
        counts = {r["cluster"]: r for r in live.groupBy("cluster").agg(
            F.count(F.when(kept, 1)).alias("written"),
            F.count(F.when(is_managed, 1)).alias("managed"),
            F.count(F.when(~kept & ~is_managed & F.col("error_name").isNull(), 1)
                    ).alias("protected"),
            F.count(F.when(F.col("error_name").isNotNull(), 1)).alias("undescribable"),
        ).collect()}
        state.live = live
        def count(cluster: str, name: str) -> int:
            return int(counts[cluster][name]) if cluster in counts else 0

        state.imported = [
            ImportSummary(cluster=c, rows_written=count(c, "written"),
                          left_out_managed=count(c, "managed"),
                          left_out_protected=count(c, "protected"),
                          left_out_undescribable=count(c, "undescribable"))
            for c in ctx.cluster_names]
        ctx.record.outcome_counts = {"rows_written": sum(s.rows_written for s in state.imported),
                                     "table_version": version}
        log_phase("import", started, live, by="cluster")


def named_by_manifests(ctx: RunContext, options: ImportOptions) -> DataFrame:
    """(cluster, topic) of every row of the conf's manifest tables that exist, other than
    the import table (it is replaced or new), and of the import table itself when it is
    appended to: a topic a manifest already names is not imported twice."""
    tables = [t for t in ctx.conf.tables.manifests if t != options.table]
    if options.mode == "append":
        tables.append(options.table)
    frames = [read_table(ctx.spark, TableRef(t)).select("cluster", "topic")
              for t in dict.fromkeys(tables) if table_exists(ctx.spark, TableRef(t))]
    if not frames:
        return ctx.spark.createDataFrame([], "cluster string, topic string")
    return functools.reduce(DataFrame.unionByName, frames)


def protected_globs(conf: Conf) -> tuple[str, ...]:
    """Every name pattern a deletion may never touch: the built-in ones, the conf's
    protected and deny lists, and the patterns of `protected_patterns` delete policies."""
    patterns: list[str] = [*names.ALWAYS_PROTECTED, *conf.deletes.protected,
                           *conf.deletes.deny_list]
    for spec in conf.delete_policies:
        if spec.name == "protected_patterns":
            patterns += list(spec.params.get("patterns") or [])
    return tuple(dict.fromkeys(patterns))


class Check(Phase):
    """`check`: every live topic in the run's scope that is not internal, managed or not,
    judged by the configured create policies and the health rules
    (`transforms.check.violations`); the VIOLATIONS rows are appended to
    `tables.violations` as one idempotent commit. Nothing is sent to Kafka."""

    name = "check"
    reads = ("states", "desired", "live")
    writes = ("violations",)

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        live = require(state.live, "live")
        with job_label(ctx.spark, f"{ctx.command}: judge live topics"):
            in_run = _in_run(ctx, live)
            # The policies' context is every live topic of the clusters, as for a plan.
            context = policy_context(ctx.spark, ctx.conf, require(state.states, "states"),
                                     live)
            rows = violations(in_run, require(state.desired, "desired"),
                              ctx.conf.create_policies, context, ctx.run_id, utc_now(),
                              ctx.conf.checks.severity, cut).localCheckpoint(eager=True)
            ctx.steps.done("check")
            table = TableRef(ctx.conf.tables.violations)
            txn = Transaction(f"topic-provisioning-violations-{ctx.run_id}", 1)
            ctx.commits.record("violations-write", lambda: append(rows, table, txn=txn))
            ctx.commits.side("check-count",
                             lambda: log_phase(self.name, started, rows, by="severity"))
        state.violations = rows
