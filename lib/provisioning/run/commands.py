"""The commands' work, between the CLI (parsing, output, exit codes) and the phases.

Each command builds its phase list (checked when this module is imported) and runs
it with a RunContext; `apply` holds the lock of every cluster it touches (`check`, which
changes nothing, takes none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf import ClusterConf, Conf, Credentials
from provisioning.delta.audit_log import AuditLog
from provisioning.delta.lock import LOCK_TABLE_PROPERTIES, RunLock
from provisioning.delta.manifests import read_manifests, write_manifest_frame
from provisioning.delta.tables import JobTable, TableRef, prepare_tables, table_exists
from provisioning.errors import UsageError
from provisioning.kafka.acls import acl_states
from provisioning.results import ClusterSummary, ImportSummary, RunRecord, RunResult
from provisioning.run import executors
from provisioning.run.acl_phases import (
    AclApply,
    AclManifests,
    AclPlan,
    AclSnapshot,
    AclValidate,
    AclVerify,
)
from provisioning.run.engine import Commits, Run, RunContext, RunState, require
from provisioning.run.options import (
    AnyOptions,
    ApplyOptions,
    CheckOptions,
    ImportOptions,
    PlanOptions,
    RunOptions,
    SnapshotOptions,
)
from provisioning.run.phases import (
    Apply,
    Check,
    Import,
    Plan,
    Preflight,
    ReadManifests,
    RecordSnapshot,
    Snapshot,
    Validate,
    Verify,
)
from provisioning.run.reassign_phases import ReassignApply, ReassignValidate, ReassignVerify
from provisioning.run.relock import Relock
from provisioning.run.summary import summarize, summarize_acls
from provisioning.session import Stop, helper, job_label, succeeded
from provisioning.transforms.acls.plan import acl_manifest_rows, unmanaged_bindings
from provisioning.transforms.acls.validation import with_acl_row_errors
from provisioning.transforms.summaries import summarize_snapshot
from schemas import (
    ACL_BINDING,
    ACL_DESIRED,
    ACL_MANIFEST,
    ACL_SNAPSHOT,
    AUDIT,
    LOCKS,
    RUNS,
    SNAPSHOT,
    VIOLATIONS,
    column_names,
)

PLAN_RUN = Run(Preflight(), ReadManifests(), AclManifests(), Snapshot(), AclSnapshot(), Plan(),
               AclPlan(), Validate(), ReassignValidate(), AclValidate())
PLAN_RUN_UNVALIDATED = Run(Preflight(), ReadManifests(), AclManifests(), Snapshot(),
                           AclSnapshot(), Plan(), AclPlan())
APPLY_RUN = Run(Preflight(), ReadManifests(), AclManifests(), Snapshot(), AclSnapshot(), Plan(),
                AclPlan(), Relock(), Validate(), ReassignValidate(), AclValidate(), Apply(),
                Verify(), AclApply(), AclVerify(), ReassignApply(), ReassignVerify())
IMPORT_RUN = Run(Preflight(), Import())
SNAPSHOT_RUN = Run(Preflight(), RecordSnapshot())
CHECK_RUN = Run(Preflight(), ReadManifests(), Snapshot(always_record=True), Check())


def run_plan(spark: SparkSession, conf: Conf, clusters: Sequence[ClusterConf],
             credentials: Mapping[str, Credentials], record: RunRecord,
             options: RunOptions, stop: Stop | None = None,
             pending: list[Future[Any]] | None = None) -> RunResult:
    """`plan` (PlanOptions) or `apply` (ApplyOptions); the run's result.

    An apply plans first without its lock; only when that plan has something to change
    does it take the lock of every cluster it touches (LockHeld, exit 4, when another run
    has one) and plan again under it (`run.relock`). Once the last phase is done the lock
    is given back on a helper thread, added to `pending` (the caller writes the runs row
    meanwhile and waits for it); without `pending` it is waited for here.
    """
    ctx = _context(spark, conf, clusters, credentials, record, options, stop)
    if isinstance(options, PlanOptions):
        return _finish(ctx, PLAN_RUN if options.validate else PLAN_RUN_UNVALIDATED, options)
    lock = RunLock(spark, conf.tables.locks, list(ctx.cluster_names), record.run_id,
                   options.command, conf.run.lock_ttl_seconds,
                   conf.run.lock_clock_skew_seconds)
    taken: list[Future[Any]] = []

    def start() -> None:
        if not taken:
            with job_label(spark, f"{options.command}: take the run lock"):
                taken.append(helper(spark, "run-lock", lock.acquire))

    def take() -> None:
        start()
        taken[0].result()

    def held() -> bool:
        return bool(taken) and succeeded(taken[0])

    ctx.start_lock, ctx.wait_for_lock = start, take
    ctx.check_lock = lock.check_held
    releasing: list[Future[Any]] = []

    def give_back() -> None:
        # Nothing changes Kafka any more: the lock goes back while the last audit rows,
        # the summary and the runs row are written.
        if held():
            releasing.append(helper(spark, "run-unlock", lock.release))

    ctx.phases_done = give_back
    try:
        return _finish(ctx, APPLY_RUN, options)
    finally:
        if not releasing and held():
            releasing.append(helper(spark, "run-unlock", lock.release))
        if pending is not None:
            pending.extend(releasing)
        else:
            for task in releasing:
                task.result()
        if taken:
            ctx.steps.done("unlock")


def job_tables(conf: Conf, command: str) -> list[JobTable]:
    """The job's tables `command` writes: made, when missing, as its run starts
    (`delta.tables.prepare_tables`), not by its first write to each."""
    tables = conf.tables
    made = [JobTable(tables.runs, RUNS)]
    if command in ("plan", "apply", "check", "snapshot"):
        made.append(JobTable(tables.snapshots, SNAPSHOT))
    if command in ("plan", "apply"):
        made.append(JobTable(tables.audit, AUDIT))
        if tables.acl_manifests is not None:
            made.append(JobTable(tables.acl_snapshots, ACL_SNAPSHOT))
    if command == "apply":
        made.append(JobTable(tables.locks, LOCKS, LOCK_TABLE_PROPERTIES))
    if command == "check":
        made.append(JobTable(tables.violations, VIOLATIONS))
    return made


def _context(spark: SparkSession, conf: Conf, clusters: Sequence[ClusterConf],
             credentials: Mapping[str, Credentials], record: RunRecord,
             options: AnyOptions, stop: Stop | None) -> RunContext:
    """The run's context, with the job's missing tables being made (`job_tables`) and the
    executors' check started (`executors.check_executors`), on helper threads while the
    first phases run on the driver."""
    with job_label(spark, f"{options.command}: make the job's tables"):
        prepare_tables(spark, job_tables(conf, options.command))
    ctx = RunContext(spark, conf, clusters, credentials, record, options,
                     Commits(AuditLog(spark, conf.tables.audit, record.run_id)),
                     stop=stop or Stop())
    ctx.steps.done("start")
    with job_label(spark, f"{ctx.command}: check the executors"):
        checking = helper(spark, "executor-check",
                          lambda: executors.check_executors(spark, clusters))
    ctx.wait_for_executors = checking.result
    return ctx


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
                                  count_unmade_moves=apply is not None,
                                  final_counts=known))
            if state.acl_plan is not None:
                made[0].acls = summarize_acls(
                    [*state.audit_rows, *state.acl_audit_rows], options.listing_limit,
                    revokes_allowed=apply is None or apply.allow_revokes)

    state = run.execute(ctx, summary)
    result = made[0]
    result.unmanaged = dict(sorted((state.unmanaged or {}).items()))
    if result.acls is not None:
        result.acls["unmanaged"] = dict(sorted((state.acl_unmanaged or {}).items()))
        result.acls["orphaned"] = dict(sorted((state.acl_orphaned or {}).items()))
        result.acls["clusters_not_changeable"] = {
            c: {"error_name": e, "error_message": m}
            for c, (e, m) in sorted((state.acl_problems or {}).items())}
    ctx.steps.done("summary")
    return result


def import_topics(spark: SparkSession, conf: Conf, clusters: Sequence[ClusterConf],
                  credentials: Mapping[str, Credentials], record: RunRecord,
                  options: ImportOptions, stop: Stop | None = None) -> list[ImportSummary]:
    """`import`: write the live topics in scope as manifest rows; Kafka is only read.

    With mode `error` a table that exists is refused (UsageError) before any cluster is
    read.
    """
    if options.mode == "error" and table_exists(spark, TableRef(options.table)):
        raise UsageError(f"table {options.table} exists: import writes a new table unless "
                         "given --mode append or --mode overwrite")
    state = IMPORT_RUN.execute(_context(spark, conf, clusters, credentials, record, options,
                                        stop))
    return list(state.imported or [])


def take_snapshot(spark: SparkSession, conf: Conf, clusters: Sequence[ClusterConf],
                  credentials: Mapping[str, Credentials], record: RunRecord,
                  stop: Stop | None = None) -> list[ClusterSummary]:
    """Record every selected cluster's live topics in the snapshots table; change nothing."""
    ctx = _context(spark, conf, clusters, credentials, record, SnapshotOptions(), stop)
    state = SNAPSHOT_RUN.execute(ctx)
    states, live = require(state.states, "states"), require(state.live, "live")
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


def run_check(spark: SparkSession, conf: Conf, clusters: Sequence[ClusterConf],
              credentials: Mapping[str, Credentials], record: RunRecord,
              options: CheckOptions, stop: Stop | None = None) -> list[dict[str, Any]]:
    """`check`: snapshot the selected clusters (recorded as `snapshot` records it), judge
    every live topic in scope and append the VIOLATIONS rows to `tables.violations`; the
    rows, as plain values. Kafka is only read, and no lock is taken."""
    ctx = _context(spark, conf, clusters, credentials, record, options, stop)
    found: list[dict[str, Any]] = []

    def collect(state: RunState) -> None:
        # Read back while the snapshot and violations commits land.
        with job_label(spark, f"{options.command}: read the violations"):
            found.extend(r.asDict() for r in
                         require(state.violations, "violations").collect())

    CHECK_RUN.execute(ctx, collect)
    counts: dict[str, int] = {}
    for row in found:
        counts[row["severity"]] = counts.get(row["severity"], 0) + 1
    record.outcome_counts = counts
    ctx.steps.done("summary")
    return found


def import_acls(spark: SparkSession, conf: Conf, clusters: Sequence[ClusterConf],
                credentials: Mapping[str, Credentials], record: RunRecord, table: str,
                mode: str, owner: str | None) -> dict[str, Any]:
    """`import --acls`: write the live bindings of the selected clusters as ACL manifest
    rows (`transforms.acls.plan.acl_manifest_rows`), leaving out those the conf's ACL
    manifests already name; Kafka is only read. Per cluster: rows and bindings written,
    bindings left out, and why a cluster had none to give (no authorizer, no DESCRIBE)."""
    if mode == "error" and table_exists(spark, TableRef(table)):
        raise UsageError(f"table {table} exists: import writes a new table unless given "
                         "--mode append or --mode overwrite")
    with job_label(spark, "import: read live ACLs"):
        found = acl_states(clusters, credentials, conf.kafka)
    live = spark.createDataFrame(
        [(c, *(b[k] for k in column_names(ACL_BINDING)[1:]))
         for c, s in sorted(found.items()) for b in s.bindings], ACL_BINDING)
    tables = [t for t in (conf.tables.acl_manifests or ()) if t != table or mode == "append"]
    tables = [t for t in dict.fromkeys(tables) if table_exists(spark, TableRef(t))]
    named = read_manifests(spark, tables, ACL_MANIFEST, ACL_DESIRED, ("cluster", "principal"),
                           "ACL manifest").transform(with_acl_row_errors(tuple(conf.clusters)))
    kept = unmanaged_bindings(live, named).localCheckpoint(eager=True)
    rows = acl_manifest_rows(kept, owner)
    with job_label(spark, f"import: write {table}"):
        version = write_manifest_frame(rows, table, mode)
    written = {r["cluster"]: (int(r["rows"]), int(r["bindings"])) for r in
               rows.groupBy("cluster").agg(F.count(F.lit(1)).alias("rows"),
                                           F.sum(F.size("operations")).alias("bindings"))
               .collect()}
    summary: list[dict[str, Any]] = []
    for c in clusters:
        state = found[c.name]
        n_rows, n_bindings = written.get(c.name, (0, 0))
        summary.append({"cluster": c.name, "rows_written": n_rows,
                        "bindings_written": n_bindings,
                        "left_out_managed": len(state.bindings) - n_bindings,
                        "error_name": None if state.problem is None or state.bindings
                        else state.problem[0],
                        "error_message": None if state.problem is None or state.bindings
                        else state.problem[1]})
    record.outcome_counts = {"rows_written": sum(s["rows_written"] for s in summary),
                             "table_version": version}
    return {"table": table, "table_version": version, "clusters": summary}
