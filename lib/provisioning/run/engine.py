"""The phase engine: a run is an ordered list of phases over one shared state.

Each phase is one unit that names the state it reads and the state it writes; a
list whose phase reads something no earlier phase writes is refused when the list
is built, not halfway through a run. The engine owns the two orderings that make
a run safe to interrupt:

- every Delta commit that records the run's view before it acts (the snapshot, the
  plan's audit rows) has landed before the first phase that changes Kafka starts;
- audit commits land in phase order. Before Kafka was changed, a failed commit stops
  the run; after, every phase's rows are still written and the first failure is raised
  once they are (what happened must be recorded).

A phase that needs the run lock waits for it; the lock is taken while the phases
before it run. A phase that changes Kafka starts only while the lock is still held
(fencing: a run whose heartbeat lost the lock stops before it). A phase with nothing to
do (`needed` is false: no topic to validate, change or verify) is skipped: no Spark job,
no request, no commit.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning.conf import ClusterConf, Conf, Credentials
from provisioning.delta.audit_log import AuditLog
from provisioning.errors import LockUnavailable
from provisioning.results import ImportSummary, RunRecord
from provisioning.session import Background

if TYPE_CHECKING:
    from provisioning.kafka.client import ClusterState
    from provisioning.run.options import AnyOptions

log = logging.getLogger(__name__)


@dataclass
class RunState:
    """What the phases of one run hand each other; a field is None until a phase writes it."""

    states: Mapping[str, ClusterState] | None = None   # preflight: each cluster's facts
    desired: DataFrame | None = None                    # DESIRED rows, validated, in scope
    live: DataFrame | None = None                       # SNAPSHOT rows of the run's clusters
    plan: DataFrame | None = None                       # judged PLAN rows
    plan_rows: DataFrame | None = None                  # the plan phase's AUDIT rows
    validated: DataFrame | None = None                  # validateOnly TOPIC_RESULT rows
    applied: DataFrame | None = None                    # real request TOPIC_RESULT rows
    audit_rows: list[DataFrame] = field(default_factory=list)  # every phase's AUDIT rows
    # Live topics (not internal) in scope that no plan row names, per cluster.
    unmanaged: Mapping[str, int] | None = None
    imported: Sequence[ImportSummary] | None = None     # what `import` wrote, per cluster
    # Rows per (cluster, action, outcome) of the plan phase: what the later phases have to
    # do (nothing: they are skipped).
    plan_counts: Mapping[tuple[str, str, str], int] | None = None


STATE_FIELDS = frozenset(f.name for f in fields(RunState))


class Steps:
    """Logs `step NAME: SECONDS (at EPOCH)` as each step of a run ends (bench/run.py reads it)."""

    def __init__(self) -> None:
        self._last = time.monotonic()

    def done(self, name: str) -> None:
        now = time.monotonic()
        log.info("step %s: %.3fs (at %.3f)", name, now - self._last, time.time())
        self._last = now


def log_phase(phase: str, started: float, rows: DataFrame, by: str = "outcome"
              ) -> dict[str, int]:
    """Log the phase's topic count, duration, rate and counts per `by` (outcome, cluster);
    returns the counts (one small Spark job)."""
    counts = {str(r[by]): int(r["n"]) for r in
              rows.groupBy(by).agg(F.count(F.lit(1)).alias("n")).collect()}
    log_counts(phase, started, counts)
    return counts


def log_counts(phase: str, started: float, counts: Mapping[str, int]) -> None:
    """Log the phase's topic count, duration, rate and `counts`."""
    total = sum(counts.values())
    elapsed = time.monotonic() - started
    rate = f", {total / elapsed:.1f} topics/s" if elapsed > 0 and total else ""
    detail = ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "none"
    log.info("phase %s: %d topic(s) in %.1fs%s; %s", phase, total, elapsed, rate, detail)


class Commits:
    """The run's Delta commits and the order they land in (see the module docstring).

    Audit commits wait only for the audit commits before them (phase order); the other
    commits of the run's view (the snapshot table) run alongside them and land before
    Kafka is changed, as the plan's audit rows do.
    """

    def __init__(self, audit: AuditLog) -> None:
        self.audit_log = audit
        self.kafka_changed = False
        self._before_changes: list[Background] = []  # must land before Kafka is changed
        self._audits: list[Background] = []          # audit commits in flight, phase order
        self._others: list[Background] = []          # other commits in flight
        self._side: list[Background] = []            # side queries in flight
        self._deferred: list[tuple[str, DataFrame]] = []  # rows of the next audit commit

    def _start(self, name: str, work: Callable[[], object]) -> Background:
        return Background(work, name, self.audit_log.spark)

    def record(self, name: str, commit: Callable[[], None]) -> None:
        """Start a commit of the run's view on a thread; it lands before Kafka is changed."""
        task = self._start(name, commit)
        self._before_changes.append(task)
        self._others.append(task)

    def audit(self, phase: str, rows: DataFrame, background: bool = False,
              before_changes: bool = False, defer: bool = False) -> None:
        """Append the phase's AUDIT rows once every earlier audit commit has landed.

        background: commit on a thread while the run goes on (the next audit commit, or
          the end of the run, waits for it). before_changes: it must land before Kafka
          is changed (implies background). defer: commit them with the next phase's rows,
          in one commit (or alone when the run ends first): for runs that change nothing.
        """
        if defer:
            self._deferred.append((phase, rows))
            return
        phases = [*(p for p, _ in self._deferred), phase]
        if self._deferred:
            rows = functools.reduce(lambda a, b: a.unionByName(b),
                                    [*(r for _, r in self._deferred), rows])
            self._deferred = []
        failure = self._settle("_audits")
        name = f"audit-{'+'.join(phases)}"
        if before_changes or background:
            task = self._start(name, lambda: self.audit_log.write(phase, rows))
            self._audits.append(task)
            if before_changes:
                self._before_changes.append(task)
        else:
            self.audit_log.write(phase, rows)
        if failure is not None:
            raise failure

    def _commit_deferred(self) -> None:
        """Commit rows still deferred (the run ended before another phase recorded any)."""
        if self._deferred:
            phase, rows = self._deferred.pop()
            self.audit(phase, rows)

    def _settle(self, which: str) -> BaseException | None:
        """Wait for the commits in flight of list `which`. Before Kafka was changed a failure
        is raised now; after, it is returned, to be raised once the caller has written its
        own rows."""
        pending: list[Background] = getattr(self, which)
        setattr(self, which, [])
        failure: BaseException | None = None
        for task in pending:
            if not self.kafka_changed:
                task.join()
            elif failure is None:
                failure = task.error()
            else:
                task.succeeded()
        return failure

    def side(self, name: str, work: Callable[[], object]) -> None:
        """Run `work` (a query the run's result needs, not the next phase) on a thread; it
        is waited for with the run's commits, and its error raised as theirs."""
        self._side.append(self._start(name, work))

    def before_kafka_changes(self) -> None:
        """Wait for the commits that must land before Kafka is changed (raising their error)."""
        for task in self._before_changes:
            task.join()
        self._before_changes = []
        self.kafka_changed = True

    def finish(self) -> None:
        """The run ended normally: every commit and side query has landed, or its error is
        raised."""
        self._commit_deferred()
        failures = [self._settle("_audits"), self._settle("_others")]
        side, self._side = self._side, []
        failures += [task.error() for task in side]
        failure = next((f for f in failures if f is not None), None)
        if failure is not None:
            raise failure

    def abandon(self) -> None:
        """The run failed: wait for commits and side queries still running, without raising
        theirs."""
        for task in [*self._audits, *self._others, *self._side]:
            task.succeeded()
        self._audits, self._others, self._side = [], [], []
        try:
            # What was recorded before the failure still lands.
            self._commit_deferred()
        except Exception as exc:
            log.error("the plan's audit rows could not be written: %s", exc)


@dataclass
class RunContext:
    """What every phase of one run may use; fixed for the run."""

    spark: SparkSession
    conf: Conf
    clusters: Sequence[ClusterConf]
    credentials: Mapping[str, Credentials]
    record: RunRecord
    options: AnyOptions
    commits: Commits
    steps: Steps = field(default_factory=Steps)
    # Returns once the run holds its lock (or raises); None: the run takes no lock.
    wait_for_lock: Callable[[], None] | None = None
    # Returns once the executors were found able to run the admin tasks (or raises
    # ExecutorsUnfit); called before the first phase that runs them. None: not checked.
    wait_for_executors: Callable[[], None] | None = None
    # Raises when the run lost its lock since (fencing); None: the run takes no lock.
    check_lock: Callable[[], None] | None = None
    # Called once every phase is done, before the last commits are waited for.
    phases_done: Callable[[], None] | None = None

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @property
    def command(self) -> str:
        return self.options.command

    @property
    def cluster_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.clusters)


class Phase:
    """One unit of a run. `reads` and `writes` name RunState fields."""

    name: ClassVar[str]
    reads: ClassVar[tuple[str, ...]] = ()
    writes: ClassVar[tuple[str, ...]] = ()
    changes_kafka: ClassVar[bool] = False
    needs_lock: ClassVar[bool] = False
    # Whether the phase runs admin tasks on the executors (the Kafka room in Spark tasks).
    runs_tasks: ClassVar[bool] = False

    def run(self, ctx: RunContext, state: RunState) -> None:
        raise NotImplementedError

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        """False when the phase has nothing to do in this run (it is skipped)."""
        return True

    def unreached(self, ctx: RunContext, state: RunState, reason: str) -> DataFrame | None:
        """AUDIT rows for the topics this phase would have changed, when the run stops
        before it (the lock was lost); None: the phase changes nothing per topic."""
        return None


def check_order(phases: Sequence[Phase]) -> None:
    """Raise ValueError unless every phase reads only what an earlier phase writes."""
    written: set[str] = {"audit_rows"}
    for phase in phases:
        unknown = [f for f in (*phase.reads, *phase.writes) if f not in STATE_FIELDS]
        if unknown:
            raise ValueError(f"phase {phase.name} names unknown state {unknown}")
        missing = [f for f in phase.reads if f not in written]
        if missing:
            raise ValueError(f"phase {phase.name} reads {', '.join(missing)}, which no "
                             "earlier phase writes")
        written.update(phase.writes)


class Run:
    """An ordered list of phases, checked when built."""

    def __init__(self, *phases: Phase) -> None:
        check_order(phases)
        self.phases = phases

    def execute(self, ctx: RunContext,
                while_committing: Callable[[RunState], None] | None = None) -> RunState:
        """Run every phase in order; every commit has landed when this returns.

        Once the last phase is done, `ctx.phases_done` is called (an apply gives its lock
        back: nothing changes Kafka any more), then `while_committing` (the run's summary)
        while the last commits land.
        """
        state = RunState()
        try:
            for phase in self.phases:
                if not phase.needed(ctx, state):
                    log.info("phase %s: nothing to do", phase.name)
                    continue
                if phase.runs_tasks and ctx.wait_for_executors is not None:
                    ready, ctx.wait_for_executors = ctx.wait_for_executors, None
                    ready()
                if phase.needs_lock and ctx.wait_for_lock is not None:
                    ctx.wait_for_lock()
                    ctx.steps.done("lock")
                if phase.changes_kafka:
                    ctx.commits.before_kafka_changes()
                    fault = getattr(ctx.options, "fault", None)
                    if fault is not None:
                        fault.before_changes()
                    _fence(ctx, state, phase)
                phase.run(ctx, state)
            if ctx.phases_done is not None:
                ctx.phases_done()
            if while_committing is not None:
                while_committing(state)
            ctx.commits.finish()
        except BaseException:
            ctx.commits.abandon()
            raise
        return state


def _fence(ctx: RunContext, state: RunState, phase: Phase) -> None:
    """Go on only while the run holds its lock; otherwise record every topic the phase would
    have changed as `failed` (lock lost) and raise."""
    if ctx.check_lock is None:
        return
    try:
        ctx.check_lock()
    except LockUnavailable as exc:
        rows = phase.unreached(ctx, state, str(exc))
        if rows is not None:
            ctx.commits.audit(phase.name, rows)
            state.audit_rows.append(rows)
        raise


def require(value: Any, name: str) -> Any:
    """`value`, which an earlier phase wrote (the order check makes None impossible)."""
    if value is None:
        raise RuntimeError(f"run state {name} is missing")
    return value
