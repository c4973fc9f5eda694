"""The commands' work, between the CLI (parsing, output, exit codes) and the phases.

Each command's phase list is built from the kinds the command line hands over (each
kind's part of this package, in registry order): the shared preflight, then every kind's
phases of each step (a list is checked when it is first built). `apply` holds the lock of
every cluster it touches (`check`, which changes nothing, takes none).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from pyspark.sql import SparkSession

from provisioning import names
from provisioning.conf import ClusterConf, Conf, Credentials
from provisioning.delta.audit_log import AuditLog
from provisioning.delta.lock import LOCK_TABLE_PROPERTIES, RunLock
from provisioning.delta.tables import JobTable, TableRef, prepare_tables, table_exists
from provisioning.errors import UsageError
from provisioning.results import RunRecord, RunResult
from provisioning.run import executors
from provisioning.run.commits import Commits
from provisioning.run.engine import Phase, Run, RunContext
from provisioning.run.kind import (
    APPLY,
    CHECK,
    IMPORT,
    MANIFESTS,
    PLAN,
    RECORD,
    SNAPSHOT,
    VALIDATE,
    RunKind,
    layers_of,
    slices,
)
from provisioning.run.options import (
    AnyOptions,
    CheckOptions,
    ImportOptions,
    PlanOptions,
    RunOptions,
    SnapshotOptions,
)
from provisioning.run.phases import Preflight, RecordFindings
from provisioning.run.relock import Relock
from provisioning.run.state import RunState
from provisioning.run.summary import summarize
from provisioning.session import Stop, helper, job_label, succeeded
from schemas import LOCKS

Kinds = tuple[RunKind, ...]


def _steps(kinds: Sequence[RunKind], *steps: str, among: Sequence[RunKind] | None = None
           ) -> list[Phase]:
    """The phases of `steps` of each of `kinds`, each given the layers of the kinds (of
    `among`, else `kinds`) that extend it."""
    every = kinds if among is None else among
    return [phase for step in steps for kind in kinds
            for phase in kind.phases(step, layers_of(every, kind.name))]


@functools.cache
def phase_list(command: str, kinds: Kinds, validate: bool = True,
               kind: str | None = None) -> Run:
    """The phase list of `command` ("plan", "apply", "check", "import" of `kind`,
    "snapshot"), built from `kinds` and checked once."""
    if command in ("plan", "apply"):
        phases: list[Phase] = [Preflight(), *_steps(kinds, MANIFESTS, SNAPSHOT, PLAN)]
        if command == "apply":
            phases.append(Relock(kinds))
        if validate:
            phases += _steps(kinds, VALIDATE)
        if command == "apply":
            phases += _steps(kinds, APPLY)
    elif command == "check":
        phases = [Preflight(), *_steps(kinds, CHECK), RecordFindings(kinds)]
    elif command == "snapshot":
        phases = [Preflight(), *_steps(kinds, RECORD)]
    elif command == "import":
        phases = [Preflight(), *_steps([k for k in kinds if k.name == kind], IMPORT,
                                       among=kinds)]
    else:
        raise ValueError(f"no phase list for command {command!r}")
    return Run(*phases, slices=slices(kinds))


def every_phase_list(kinds: Kinds) -> list[Run]:
    """Every command's phase list over `kinds` (each checked as it is built)."""
    return [phase_list("plan", kinds), phase_list("plan", kinds, validate=False),
            phase_list("apply", kinds), phase_list("check", kinds),
            phase_list("snapshot", kinds),
            *(phase_list("import", kinds, kind=k.name) for k in kinds if k.phases(IMPORT))]


def run_plan(spark: SparkSession, kinds: Kinds, conf: Conf, clusters: Sequence[ClusterConf],
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
    ctx = _context(spark, kinds, conf, clusters, credentials, record, options, stop)
    ctx.plans_done = options.plans_done
    if isinstance(options, PlanOptions):
        return _finish(ctx, phase_list("plan", kinds, options.validate))
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
        return _finish(ctx, phase_list("apply", kinds))
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


def job_tables(conf: Conf, command: str, kinds: Sequence[RunKind]) -> list[JobTable]:
    """The job's tables `command` makes, when missing, as its run starts
    (`delta.tables.prepare_tables`): the lock log of an apply when it is a catalog table
    (its properties go with its `CREATE TABLE`), and the tables the run reads before it
    writes them (each kind names its own, `RunKind.job_tables`). Every other table of the
    job (the runs row, the audit, the snapshots, a lock log at a path) is made by its first
    append, in one commit with its first rows: a table made empty beforehand costs a commit
    of its own, and the append that follows reads the new table's state back
    (BENCHMARKS.md: the job's tables made by their first append)."""
    made = []
    if command == "apply" and not TableRef(conf.tables.locks).is_path:
        made.append(JobTable(conf.tables.locks, LOCKS, LOCK_TABLE_PROPERTIES))
    for kind in kinds:
        made += kind.job_tables(conf, command)
    return made


def _context(spark: SparkSession, kinds: Kinds, conf: Conf, clusters: Sequence[ClusterConf],
             credentials: Mapping[str, Credentials], record: RunRecord,
             options: AnyOptions, stop: Stop | None) -> RunContext:
    """The run's context, with the job's missing tables being made (`job_tables`) and the
    executors' check started (`executors.check_executors`), on helper threads while the
    first phases run on the driver."""
    with job_label(spark, f"{options.command}: make the job's tables"):
        prepare_tables(spark, job_tables(conf, options.command, kinds))
    ctx = RunContext(spark, conf, clusters, credentials, record, options,
                     Commits(AuditLog(spark, conf.tables.audit, record.run_id)),
                     kinds=kinds, stop=stop or Stop())
    ctx.plan_has_changes = lambda state: any(k.plan_has_changes(state) for k in kinds)
    ctx.findings_counted = functools.partial(_findings_counted, kinds=kinds)
    ctx.steps.done("start")
    with job_label(spark, f"{ctx.command}: check the executors"):
        checking = helper(spark, "executor-check",
                          lambda: executors.check_executors(spark, clusters))
    ctx.wait_for_executors = checking.result
    return ctx


def _findings_counted(state: RunState, kinds: Sequence[RunKind]) -> bool | None:
    """Whether the rows the kinds recorded hold findings, from their plans' counts (a run
    that changed nothing recorded only plan rows); None when a kind with rows has no
    counts to tell."""
    found = False
    for kind in kinds:
        if not state.slice(kind.name).rows:
            continue
        counts = kind.plan_counts(state)
        if not counts:
            return None
        found = found or any(outcome in names.FINDINGS for (_, _, outcome) in counts)
    return found


def _finish(ctx: RunContext, run: Run) -> RunResult:
    """Run the phases; the summary is made while the last commits land."""
    made: list[RunResult] = []

    def summary(state: RunState) -> None:
        with job_label(ctx.spark, f"{ctx.command}: summarize outcomes"):
            made.append(summarize(ctx, state, ctx.kinds))

    state = run.execute(ctx, summary)
    result = made[0]
    for kind in ctx.kinds:
        found = result.summaries.get(kind.name)
        if found is not None:
            kind.complete(state, found)
    ctx.steps.done("summary")
    return result


def run_import(spark: SparkSession, kinds: Kinds, conf: Conf,
               clusters: Sequence[ClusterConf],
               credentials: Mapping[str, Credentials], record: RunRecord,
               options: ImportOptions, stop: Stop | None = None) -> Any:
    """`import` of `options.kind`: write the live state in scope as manifest rows; Kafka is
    only read. The kind's own account of what it wrote (`RunKind.imported`).

    With mode `error` a table that exists is refused (UsageError) before any cluster is
    read.
    """
    if options.mode == "error" and table_exists(spark, TableRef(options.table)):
        raise UsageError(f"table {options.table} exists: import writes a new table unless "
                         "given --mode append or --mode overwrite")
    kind = next(k for k in kinds if k.name == options.kind)
    state = phase_list("import", kinds, kind=kind.name).execute(
        _context(spark, kinds, conf, clusters, credentials, record, options, stop))
    return kind.imported(state)


def take_snapshot(spark: SparkSession, kinds: Kinds, conf: Conf,
                  clusters: Sequence[ClusterConf],
                  credentials: Mapping[str, Credentials], record: RunRecord,
                  stop: Stop | None = None) -> dict[str, Any]:
    """`snapshot`: record every selected cluster's live state; change nothing. Each kind's
    account of what it recorded (`RunKind.recorded`), by kind name."""
    ctx = _context(spark, kinds, conf, clusters, credentials, record, SnapshotOptions(), stop)
    state = phase_list("snapshot", kinds).execute(ctx)
    return {k.name: k.recorded(ctx, state) for k in kinds if k.phases(RECORD)}


def run_check(spark: SparkSession, kinds: Kinds, conf: Conf, clusters: Sequence[ClusterConf],
              credentials: Mapping[str, Credentials], record: RunRecord,
              options: CheckOptions, stop: Stop | None = None) -> list[dict[str, Any]]:
    """`check`: snapshot the selected clusters, judge what every kind finds there and
    append the VIOLATIONS rows to `tables.violations`; the rows, as plain values. Kafka is
    only read, and no lock is taken."""
    ctx = _context(spark, kinds, conf, clusters, credentials, record, options, stop)
    found: list[dict[str, Any]] = []

    def collect(state: RunState) -> None:
        # Read back while the snapshot and violations commits land.
        with job_label(spark, f"{options.command}: read the violations"):
            for kind in kinds:
                rows = kind.findings(state)
                if rows is not None:
                    found.extend(r.asDict() for r in rows.collect())

    phase_list("check", kinds).execute(ctx, collect)
    counts: dict[str, int] = {}
    for row in found:
        counts[row["severity"]] = counts.get(row["severity"], 0) + 1
    record.outcome_counts = counts
    ctx.steps.done("summary")
    return found
