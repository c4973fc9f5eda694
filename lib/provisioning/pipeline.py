"""plan / apply: manifests -> plan -> policies -> validateOnly -> create/delete -> verify -> audit.

Each phase's admin results are materialized once (local checkpoint) and
written to the audit table as one idempotent Delta commit before the next
phase reads them, so Kafka is asked exactly once per phase per run even when
Spark recomputes something downstream.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning import admin_io
from provisioning.audit import ATTENTION, plan_audit, result_audit
from provisioning.conf import ClusterConf, Conf, Credentials
from provisioning.delta_io import TableRef, append, read_table, table_exists
from provisioning.faults import Fault
from provisioning.lock import RunLock
from provisioning.manifests import read_manifests
from provisioning.plan import build_plan, in_scope, prune_candidates
from provisioning.policies import with_create_policies, with_delete_policies
from provisioning.policies.base import PolicyContext
from provisioning.runs import RunRecord, utc_now
from provisioning.snapshot import cluster_states_frame, preflight, snapshot_topics
from provisioning.spark import Background, job_description
from provisioning.validation import with_duplicate_errors, with_row_errors

log = logging.getLogger(__name__)

PHASES = ("plan", "validate", "apply", "verify")
_REQUEST_COLUMNS = ("cluster", "topic", "partitions", "replication_factor",
                    "replica_assignment", "configs")


@dataclass(frozen=True)
class RunOptions:
    command: str
    clusters: tuple[str, ...] = ()
    topics_glob: str | None = None
    validate: bool = True
    apply: bool = False
    allow_deletes: bool = False
    listing_limit: int = 500
    fault: Fault | None = None
    # Called with the judged PLAN rows once the plan phase is recorded and before any
    # validate or apply request; it may raise to stop the run (a stale saved plan).
    on_plan: Callable[[DataFrame], None] | None = None


@dataclass
class RunResult:
    run_id: str
    counts: dict[str, int] = field(default_factory=dict)
    actions: list[dict[str, Any]] = field(default_factory=list)
    topics: list[dict[str, Any]] = field(default_factory=list)
    topics_not_listed: int = 0
    deletes_not_allowed: int = 0

    @property
    def exit_code(self) -> int:
        return 1 if any(self.counts.get(o, 0) for o in ATTENTION) else 0


class _Audit:
    """Appends each phase's AUDIT rows to the audit table as one idempotent commit."""

    def __init__(self, spark: SparkSession, table: str, run_id: str,
                 fault: Fault | None) -> None:
        self.spark = spark
        self.ref = TableRef(table)
        self.run_id = run_id
        self.fault = fault

    def write(self, phase: str, rows: DataFrame) -> None:
        if self.fault is not None:
            self.fault.before_audit(phase)
        append(rows, self.ref, committed=lambda: self._has(phase))

    def _has(self, phase: str) -> bool:
        return not read_table(self.spark, self.ref).where(
            (F.col("run_id") == self.run_id) & (F.col("phase") == phase)).isEmpty()


def _timed(phase: str, started: float, rows: DataFrame, by: str = "outcome") -> None:
    """Log the phase's topic count, duration, rate and counts per `by` (outcome, cluster)."""
    counts = {str(r[by]): int(r["n"]) for r in
              rows.groupBy(by).agg(F.count(F.lit(1)).alias("n")).collect()}
    total = sum(counts.values())
    elapsed = time.monotonic() - started
    rate = f", {total / elapsed:.1f} topics/s" if elapsed > 0 and total else ""
    detail = ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "none"
    log.info("phase %s: %d topic(s) in %.1fs%s; %s", phase, total, elapsed, rate, detail)


class _Steps:
    """Logs `step NAME: SECONDS (at EPOCH)` as each step of a run ends (bench/run.py reads it)."""

    def __init__(self) -> None:
        self._last = time.monotonic()

    def done(self, name: str) -> None:
        now = time.monotonic()
        log.info("step %s: %.3fs (at %.3f)", name, now - self._last, time.time())
        self._last = now


def run_pipeline(
    spark: SparkSession,
    conf: Conf,
    clusters: Sequence[ClusterConf],
    credentials: Mapping[str, Credentials],
    record: RunRecord,
    options: RunOptions,
) -> RunResult:
    """Run plan (and validate, apply, verify as the options say); return the run's result.

    An apply holds the lock of every cluster it touches (LockHeld, exit 4, when another
    run has one) before it snapshots or changes anything; it is taken while the
    preflight and the manifest read run.
    """
    steps = _Steps()
    steps.done("start")
    if not options.apply:
        with _background_commits() as background:
            return _run(spark, conf, clusters, credentials, record, options, steps,
                        lambda: None, background)
    lock = RunLock(spark, conf.tables.locks, [c.name for c in clusters], record.run_id,
                   options.command, conf.run.lock_ttl_seconds)
    with job_description(spark, f"{options.command}: take the run lock"):
        taking = Background(lock.acquire, "run-lock")

    def locked() -> None:
        taking.join()
        steps.done("lock")

    try:
        with _background_commits() as background:
            result = _run(spark, conf, clusters, credentials, record, options, steps, locked,
                          background)
    finally:
        if taking.succeeded():
            lock.release()
    steps.done("unlock")
    return result


@contextmanager
def _background_commits() -> Iterator[list[Background]]:
    """Collects the run's Delta commits made on threads; each has finished when it ends."""
    background: list[Background] = []
    try:
        yield background
    finally:
        for task in background:
            task.succeeded()


def _run(
    spark: SparkSession,
    conf: Conf,
    clusters: Sequence[ClusterConf],
    credentials: Mapping[str, Credentials],
    record: RunRecord,
    options: RunOptions,
    steps: _Steps,
    locked: Callable[[], None],
    background: list[Background],
) -> RunResult:
    """The run's phases; `locked()` returns once the run holds its lock (or raises); the
    Delta commits the run makes on threads are added to `background`."""
    run_id = record.run_id
    names = tuple(c.name for c in clusters)
    known_clusters = tuple(conf.clusters)

    started = time.monotonic()
    with job_description(spark, f"{options.command}: preflight"):
        states = preflight(clusters, credentials, conf.kafka)
    steps.done("preflight")
    record.clusters = [
        {"cluster": n, "cluster_id": s.cluster_id, "brokers": len(s.broker_ids),
         "topics": None, "error": None}
        for n, s in states.items()
    ]

    # The manifests come first: a principal's topic listing leaves out what it may not
    # describe, so the snapshot describes the manifests' topics by name as well.
    with job_description(spark, f"{options.command}: read manifests"):
        desired = (
            read_manifests(spark, conf.tables.manifests)
            .transform(with_row_errors(known_clusters))
            .transform(with_duplicate_errors)
            .transform(in_scope(names, options.topics_glob, known_clusters))
            # Read and validated once: the snapshot (topics to describe by name), the plan
            # and both sides of the policy split below all read these rows.
            .localCheckpoint(eager=True)
        )
        steps.done("manifest read")
    locked()

    with job_description(spark, f"{options.command}: snapshot live metadata"):
        live = snapshot_topics(spark, clusters, credentials, conf.kafka, run_id,
                               {n: s.cluster_id for n, s in states.items()},
                               wanted=desired.where(F.size("row_errors") == 0))
        live = live.localCheckpoint(eager=True)
        steps.done("snapshot")
        # Recorded while the plan is computed; committed before anything is changed.
        snapshot_written = Background(
            lambda: append(live, TableRef(conf.tables.snapshots)), "snapshot-write")
        background.append(snapshot_written)
        live_in_scope = live.transform(in_scope(names, options.topics_glob, known_clusters))
        _timed("snapshot", started, live, by="cluster")

    started = time.monotonic()
    with job_description(spark, f"{options.command}: plan, policies"):
        plan = build_plan(desired, live_in_scope)
        if conf.deletes.prune:
            plan = plan.unionByName(
                prune_candidates(live_in_scope, desired, _created_by_job(spark, conf)))
        context = PolicyContext(
            # Built from driver-side rows (a Python RDD): materialized once here, so the
            # policies' joins with it do not each start Python workers to unpickle them.
            clusters=cluster_states_frame(spark, states).localCheckpoint(eager=True),
            live=live,
            protected=conf.deletes.protected,
            deny_list=conf.deletes.deny_list,
            max_deletes_per_cluster=conf.deletes.max_per_cluster,
        )
        valid = F.size("row_errors") == 0
        judged = (plan.where(valid)
                  .transform(lambda df: with_create_policies(df, conf.create_policies, context))
                  .transform(lambda df: with_delete_policies(df, conf.delete_policies, context)))
        plan = judged.unionByName(plan.where(~valid)).localCheckpoint(eager=True)
        steps.done("plan and policies")

    audit = _Audit(spark, conf.tables.audit, run_id, options.fault)
    with job_description(spark, f"{options.command}: audit plan"):
        plan_rows = plan_audit(plan, run_id, utc_now()).localCheckpoint(eager=True)
        _timed("plan", started, plan_rows)
        # The saved-plan check and the validateOnly pass change nothing: they run while
        # the plan is committed.
        plan_written = Background(lambda: audit.write("plan", plan_rows), "audit-plan")
        background.append(plan_written)
    if options.on_plan is not None:
        with job_description(spark, f"{options.command}: saved plan"):
            options.on_plan(plan)

    def recorded() -> None:
        """The snapshot and the plan are committed: the run may change something."""
        snapshot_written.join()
        plan_written.join()
        steps.done("plan recorded")

    clean = (F.size("row_errors") == 0) & (F.size("policy_violations") == 0)
    creatable = plan.where(clean & (F.col("action") == "CREATE"))
    deletable = plan.where(clean & (F.col("action") == "DELETE"))
    finals = [plan_rows.where(F.col("outcome") != "planned")]

    validated_rows = None
    if options.validate:
        started = time.monotonic()
        with job_description(spark, f"{options.command}: validateOnly CreateTopics"):
            validated = admin_io.send_creates(
                spark, creatable.select(*_REQUEST_COLUMNS,
                                        F.lit(None).cast("int").alias("known_partitions")),
                clusters, credentials, conf.kafka, validate_only=True,
            ).localCheckpoint(eager=True)
            steps.done("validate")
            validated_rows = result_audit(validated, plan, run_id, utc_now())
            recorded()
            if options.apply:
                # Committed while the creates run; joined before the apply phase is
                # audited, so the phases still commit in order.
                validate_written = Background(
                    lambda: audit.write("validate", validated_rows), "audit-validate")
                background.append(validate_written)
            else:
                audit.write("validate", validated_rows)
            _timed("validate", started, validated)
            steps.done("audit write")
    else:
        recorded()
        finals.append(plan_rows.where((F.col("outcome") == "planned")
                                      & (F.col("action") == "CREATE")))

    deletes_not_allowed = 0
    if not (options.apply and options.allow_deletes):
        planned_deletes = plan_rows.where((F.col("outcome") == "planned")
                                          & (F.col("action") == "DELETE"))
        finals.append(planned_deletes)
        deletes_not_allowed = planned_deletes.count() if options.apply else 0

    if not options.apply:
        if validated_rows is not None:
            finals.append(validated_rows)
    else:
        if validated_rows is None:
            raise ValueError("apply always runs the validateOnly pass first")
        finals.append(validated_rows.where(F.col("outcome") != "validated"))
        started = time.monotonic()
        with job_description(spark, "apply: CreateTopics and DeleteTopics"):
            passed = validated_rows.where(F.col("outcome") == "validated").select(
                "cluster", "topic", F.col("result_partitions").alias("known_partitions"))
            to_create = creatable.select(*_REQUEST_COLUMNS).join(
                passed, on=["cluster", "topic"], how="inner")
            applied = admin_io.send_creates(spark, to_create, clusters, credentials,
                                            conf.kafka, validate_only=False,
                                            fault=options.fault)
            if options.allow_deletes:
                applied = applied.unionByName(admin_io.send_deletes(
                    spark, deletable.select("cluster", "topic",
                                            F.col("live_topic_id").alias("topic_id")),
                    clusters, credentials, conf.kafka))
            applied = applied.localCheckpoint(eager=True)
            steps.done("create")
            applied_rows = result_audit(applied, plan, run_id, utc_now())
            # The apply rows are written even when the validate commit failed; its error
            # is raised after them.
            validate_written.succeeded()
            audit.write("apply", applied_rows)
            validate_written.join()
            _timed("apply", started, applied)
            steps.done("audit write")

        to_verify = F.col("outcome").isin("created", "unknown", "deleted")
        finals.append(applied_rows.where(~to_verify))
        started = time.monotonic()
        with job_description(spark, "apply: verify leaders and deletions"):
            verified = admin_io.verify(
                spark,
                applied.where(to_verify).select("cluster", "topic").join(
                    plan.select("cluster", "topic", "action"), on=["cluster", "topic"],
                    how="inner"),
                clusters, credentials, conf.kafka,
            ).localCheckpoint(eager=True)
            steps.done("verify")
            verified_rows = result_audit(verified, plan, run_id, utc_now())
            audit.write("verify", verified_rows)
            finals.append(verified_rows)
            _timed("verify", started, verified)
            steps.done("audit write")

    with job_description(spark, f"{options.command}: summarize outcomes"):
        summary = _summarize(run_id, plan, finals, options, deletes_not_allowed)
    steps.done("summary")
    return summary


def _created_by_job(spark: SparkSession, conf: Conf) -> DataFrame:
    """(cluster, topic, topic_id) of every topic the audit shows this job created."""
    ref = TableRef(conf.tables.audit)
    if not table_exists(spark, ref):
        return spark.createDataFrame([], "cluster string, topic string, topic_id string")
    return (read_table(spark, ref)
            .where((F.col("outcome") == "created") & F.col("topic_id").isNotNull())
            .select("cluster", "topic", "topic_id").distinct())


def _summarize(run_id: str, plan: DataFrame, finals: list[DataFrame], options: RunOptions,
               deletes_not_allowed: int) -> RunResult:
    final = finals[0]
    for frame in finals[1:]:
        final = final.unionByName(frame)
    counts = {r["outcome"]: int(r["n"]) for r in
              final.groupBy("outcome").agg(F.count(F.lit(1)).alias("n")).collect()}
    actions = [r.asDict() for r in plan.groupBy("cluster", "action")
               .agg(F.count(F.lit(1)).alias("topics")).orderBy("cluster", "action").collect()]
    interesting = final.where(~F.col("outcome").isin("already_present", "already_absent"))
    listed = (interesting.orderBy("cluster", "topic")
              .select("cluster", "topic", "action", "phase", "outcome", "error_name",
                      "error_message", "drift", "policy_violations", "result_partitions",
                      "result_replication_factor", "result_configs", "source_table",
                      "source_version", "topic_id", "requested_partitions",
                      "requested_replication_factor", "requested_configs",
                      "requested_assignment")
              .limit(options.listing_limit).collect())
    total = sum(counts.values()) - counts.get("already_present", 0) \
        - counts.get("already_absent", 0)
    return RunResult(
        run_id=run_id,
        counts=counts,
        actions=actions,
        topics=[r.asDict(recursive=True) for r in listed],
        topics_not_listed=max(0, total - len(listed)),
        deletes_not_allowed=deletes_not_allowed,
    )
