"""The commands' work, between the CLI (parsing, output, exit codes) and the phases.

Each command builds its phase list (checked when this module is imported) and runs
it with a RunContext; `apply` holds the lock of every cluster it touches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pyspark.sql import SparkSession

from provisioning import names
from provisioning.conf import ClusterConf, Conf, Credentials
from provisioning.delta.audit_log import AuditLog
from provisioning.delta.lock import RunLock
from provisioning.delta.tables import TableRef, append, table_exists
from provisioning.errors import UsageError
from provisioning.kafka.snapshot import preflight
from provisioning.results import ClusterSummary, ImportSummary, RunRecord, RunResult
from provisioning.run import executors
from provisioning.run.engine import Commits, Run, RunContext, RunState
from provisioning.run.options import ApplyOptions, ImportOptions, PlanOptions, RunOptions
from provisioning.run.phases import (
    Apply,
    Import,
    Plan,
    Preflight,
    ReadManifests,
    Snapshot,
    Validate,
    Verify,
)
from provisioning.run.summary import summarize
from provisioning.session import Background, job_label
from provisioning.transforms.summaries import summarize_snapshot

PLAN_RUN = Run(Preflight(), ReadManifests(), Snapshot(), Plan(), Validate())
PLAN_RUN_UNVALIDATED = Run(Preflight(), ReadManifests(), Snapshot(), Plan())
APPLY_RUN = Run(Preflight(), ReadManifests(), Snapshot(), Plan(), Validate(), Apply(), Verify())
IMPORT_RUN = Run(Preflight(), Import())


def run_plan(spark: SparkSession, conf: Conf, clusters: Sequence[ClusterConf],
             credentials: Mapping[str, Credentials], record: RunRecord,
             options: RunOptions,
             record_run: Callable[[RunResult], None] | None = None) -> RunResult:
    """`plan` (PlanOptions) or `apply` (ApplyOptions); the run's result.

    An apply holds the lock of every cluster it touches (LockHeld, exit 4, when another
    run has one) before it snapshots or changes anything; it is taken while the
    preflight and the manifest read run, and given back while `record_run` (the runs
    row) is written.
    """
    ctx = RunContext(spark, conf, clusters, credentials, record, options,
                     Commits(AuditLog(spark, conf.tables.audit, record.run_id,
                                      options.fault.before_audit if options.fault else None)))
    ctx.steps.done("start")
    ctx.wait_for_executors = _check_executors(ctx)
    if isinstance(options, PlanOptions):
        run = PLAN_RUN if options.validate else PLAN_RUN_UNVALIDATED
        result = _finish(ctx, run, options)
        if record_run is not None:
            record_run(result)
        return result
    lock = RunLock(spark, conf.tables.locks, list(ctx.cluster_names), record.run_id,
                   options.command, conf.run.lock_ttl_seconds)
    with job_label(spark, f"{options.command}: take the run lock"):
        taking = Background(lock.acquire, "run-lock", spark)
    ctx.wait_for_lock = taking.join
    ctx.check_lock = lock.check_held
    releasing: list[Background] = []

    def give_back() -> None:
        # Nothing changes Kafka any more: the lock goes back while the last audit rows,
        # the summary and the runs row are written.
        if taking.succeeded():
            releasing.append(Background(lock.release, "run-unlock", spark))

    ctx.phases_done = give_back
    try:
        result = _finish(ctx, APPLY_RUN, options)
        if record_run is not None:
            record_run(result)
    finally:
        if releasing:
            releasing[0].join()
        elif taking.succeeded():
            lock.release()
        ctx.steps.done("unlock")
    return result


def _check_executors(ctx: RunContext) -> Callable[[], None]:
    """Start the executors' check (`executors.check_executors`) on a thread while the first
    phases run on the driver; the returned function waits for it."""
    with job_label(ctx.spark, f"{ctx.command}: check the executors"):
        checking = Background(lambda: executors.check_executors(ctx.spark, ctx.clusters),
                              "executor-check", ctx.spark)
    return checking.join


def _finish(ctx: RunContext, run: Run, options: RunOptions) -> RunResult:
    """Run the phases; the summary is made while the last commits land."""
    made: list[RunResult] = []

    def summary(state: RunState) -> None:
        with job_label(ctx.spark, f"{ctx.command}: summarize outcomes"):
            apply = options if isinstance(options, ApplyOptions) else None
            # Only the plan phase recorded rows: its counts are the final ones.
            known = ([{"cluster": c, "action": a, "phase": names.PLAN, "outcome": o, "n": n}
                      for (c, a, o), n in state.plan_counts.items()]
                     if len(state.audit_rows) == 1 and state.plan_counts is not None
                     else None)
            made.append(summarize(ctx.run_id, state.audit_rows, options.listing_limit,
                                  deletes_allowed=apply is None or apply.allow_deletes,
                                  alters_allowed=apply is None or apply.allow_alter,
                                  final_counts=known))

    state = run.execute(ctx, summary)
    result = made[0]
    result.unmanaged = dict(sorted((state.unmanaged or {}).items()))
    ctx.steps.done("summary")
    return result


def import_topics(spark: SparkSession, conf: Conf, clusters: Sequence[ClusterConf],
                  credentials: Mapping[str, Credentials], record: RunRecord,
                  options: ImportOptions) -> list[ImportSummary]:
    """`import`: write the live topics in scope as manifest rows; Kafka is only read.

    With mode `error` a table that exists is refused (UsageError) before any cluster is
    read.
    """
    if options.mode == "error" and table_exists(spark, TableRef(options.table)):
        raise UsageError(f"table {options.table} exists: import writes a new table unless "
                         "given --mode append or --mode overwrite")
    ctx = RunContext(spark, conf, clusters, credentials, record, options,
                     Commits(AuditLog(spark, conf.tables.audit, record.run_id)))
    ctx.steps.done("start")
    ctx.wait_for_executors = _check_executors(ctx)
    state = IMPORT_RUN.execute(ctx)
    return list(state.imported or [])


def take_snapshot(
    spark: SparkSession,
    conf: Conf,
    clusters: Sequence[ClusterConf],
    credentials: Mapping[str, Credentials],
    record: RunRecord,
) -> list[ClusterSummary]:
    """Record every selected cluster's live topics in the snapshots table; change nothing."""
    with job_label(spark, "snapshot: check the executors"):
        executors.check_executors(spark, clusters)
    with job_label(spark, "snapshot: preflight"):
        states = preflight(clusters, credentials, conf.kafka)
    with job_label(spark, "snapshot: read live metadata"):
        live = executors.snapshot_topics(
            spark, clusters, credentials, conf.kafka, record.run_id,
            {name: s.cluster_id for name, s in states.items()},
        ).localCheckpoint(eager=True)
    with job_label(spark, "snapshot: write snapshot table"):
        append(live, TableRef(conf.tables.snapshots))
    per_cluster = {r["cluster"]: r.asDict() for r in summarize_snapshot(live).collect()}
    summaries = []
    for cluster in clusters:
        row = per_cluster.get(cluster.name, {})
        summaries.append(ClusterSummary(
            cluster=cluster.name,
            cluster_id=states[cluster.name].cluster_id,
            brokers=len(states[cluster.name].broker_ids),
            topics=int(row.get("topics") or 0),
            internal_topics=int(row.get("internal_topics") or 0),
            partitions=int(row.get("partitions") or 0),
            topics_in_use=int(row.get("topics_in_use") or 0),
            undescribable_topics=int(row.get("undescribable_topics") or 0),
        ))
    record.clusters = [
        {"cluster": s.cluster, "cluster_id": s.cluster_id, "brokers": s.brokers,
         "topics": s.topics, "error": None}
        for s in summaries
    ]
    record.outcome_counts = {"topics": sum(s.topics for s in summaries)}
    return summaries

