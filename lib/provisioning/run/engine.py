"""The phase engine: a run is an ordered list of phases over one shared state.

Each phase is one unit that names the state it reads and the state it writes; a list whose
phase reads something no earlier phase writes is refused when the list is built, not
halfway through a run.

The engine owns the commit policy, from what each phase is and what the run has ahead:

- rows of a phase that changed Kafka are committed at once (on a helper thread);
- rows of a phase before one that changes Kafka are committed on a helper thread, and the
  run's view (the snapshot, the plan's rows: `Phase.records_view`) lands before that phase
  starts;
- rows of a run with nothing ahead that changes Kafka wait and land with the next rows (a
  `plan` run makes one audit commit);
- rows and records of the phases before one that plans again under the run's lock
  (`Phase.replans`: an apply plans first without its lock) are tentative: when that phase
  runs, they are dropped and its own pass records the view it plans on; when it is skipped
  (nothing to change), the records go out and the rows land with the next ones (a no-op
  apply makes one audit commit);
- audit commits land in phase order. Before Kafka was changed, a failed commit stops the
  run; after, every phase's rows are still written and the first failure is raised once
  they are (what happened must be recorded).

Safe points. Before each phase, and before each wave of requests inside a phase that
changes Kafka, the engine asks whether a signal asked the run to stop (`RunContext.stop`)
and whether the run still holds its lock (`RunContext.check_lock`). A phase never reached
records, for every topic it would have changed, a `failed` row saying why (`unreached`).
A stop ends the run there (RunCancelled, exit 6). A lost lock ends it once the requests
in flight are recorded and what they did is verified (`Phase.settles`), with
LockUnavailable (exit 4). A phase with nothing to do (`needed` is false) is skipped: no
Spark job, no request, no commit.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning.conf import ClusterConf, Conf, Credentials
from provisioning.delta.audit_log import AuditLog
from provisioning.errors import LockUnavailable, ProvisioningError
from provisioning.results import ImportSummary, RunRecord
from provisioning.session import Stop, helper, succeeded

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
    violations: DataFrame | None = None                 # `check`'s VIOLATIONS rows
    # Rows per (cluster, action, outcome) of the plan phase: what the later phases have to
    # do (nothing: they are skipped).
    plan_counts: Mapping[tuple[str, str, str], int] | None = None
    # Under an apply's lock (run/relock.py): the (cluster, topic) keys planned again, and
    # the first pass's plan, whose rows of every other key are kept (nothing is sent for
    # them).
    replanned: DataFrame | None = None
    kept_plan: DataFrame | None = None
    # Why the run stopped changing Kafka mid-phase (its lock was lost): the phases that
    # settle what was sent still run, then this is raised.
    halted: ProvisioningError | None = None
    verified: DataFrame | None = None                   # verify's TOPIC_RESULT rows
    # Replica moves (see run/reassign_phases.py): the partitions being reassigned on each
    # cluster (REASSIGNMENT_IN_FLIGHT rows, as dicts) and the clusters where they could not
    # be listed (cluster -> why); PLAN rows with moves per (cluster, plan outcome); their
    # checks' and their requests' TOPIC_RESULT rows.
    in_flight: Sequence[Mapping[str, Any]] | None = None
    unlisted: Mapping[str, str] | None = None
    move_counts: Mapping[tuple[str, str], int] | None = None
    moves_validated: DataFrame | None = None
    moves_applied: DataFrame | None = None
    # ACL bindings (only when the conf names ACL manifests; see run/acl_phases.py).
    acl_desired: DataFrame | None = None                # ACL_DESIRED rows, validated
    acl_live: DataFrame | None = None                   # ACL_BINDING rows, live
    acl_plan: DataFrame | None = None                   # judged ACL_PLAN rows
    acl_validated: DataFrame | None = None              # the authority check's ACL_RESULT
    acl_applied: DataFrame | None = None                # CreateAcls / DeleteAcls ACL_RESULT
    acl_audit_rows: list[DataFrame] = field(default_factory=list)  # their AUDIT rows
    # ACL_PLAN rows per (cluster, action, plan outcome).
    acl_counts: Mapping[tuple[str, str, str], int] | None = None
    # Live bindings no ACL manifest names, and LITERAL TOPIC ones naming no live topic,
    # per cluster.
    acl_unmanaged: Mapping[str, int] | None = None
    acl_orphaned: Mapping[str, int] | None = None
    # Why the job may not change a cluster's ACLs (the snapshot's word), per cluster.
    acl_problems: Mapping[str, tuple[str, str]] | None = None


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


# How a phase's audit rows are committed (chosen by the engine, see the module docstring).
NOW, BEFORE_CHANGES, DEFER, TENTATIVE = "now", "before changes", "defer", "tentative"


class Commits:
    """The run's Delta commits and the order they land in (see the module docstring)."""

    def __init__(self, audit: AuditLog) -> None:
        self.audit_log = audit
        self.kafka_changed = False
        # How the current phase's audit rows are committed; set by the engine.
        self.policy = NOW
        self._before_changes: list[Future[Any]] = []  # must land before Kafka is changed
        self._audits: list[Future[Any]] = []          # audit commits in flight, phase order
        self._others: list[Future[Any]] = []          # other commits in flight
        self._side: list[Future[Any]] = []            # side queries in flight
        self._deferred: list[tuple[str, DataFrame]] = []  # rows of the next audit commit
        # Records of a tentative view (policy TENTATIVE), started or dropped once the run
        # knows whether it plans again under its lock.
        self._tentative: list[tuple[str, Callable[[], object]]] = []

    def _start(self, name: str, work: Callable[[], object]) -> Future[Any]:
        return helper(self.audit_log.spark, name, work)

    def record(self, name: str, commit: Callable[[], object]) -> None:
        """Start a commit of the run's view on a helper thread; it lands before Kafka is
        changed. A tentative view's record waits for `keep_tentative`."""
        if self.policy == TENTATIVE:
            self._tentative.append((name, commit))
            return
        task = self._start(name, commit)
        self._before_changes.append(task)
        self._others.append(task)

    def audit(self, phase: str, rows: DataFrame) -> None:
        """Commit the phase's AUDIT rows as the engine's policy for the phase says, once
        every earlier audit commit has landed."""
        if self.policy in (DEFER, TENTATIVE):
            self._deferred.append((phase, rows))
            return
        phases = [*(p for p, _ in self._deferred), phase]
        if self._deferred:
            rows = functools.reduce(lambda a, b: a.unionByName(b),
                                    [*(r for _, r in self._deferred), rows])
            self._deferred = []
        previous = list(self._audits)

        def commit() -> None:
            # Phase order: this commit waits for the audit commits before it.
            for earlier in previous:
                if not succeeded(earlier) and not self.kafka_changed:
                    return  # the run stops on that failure; nothing lands after it
            self.audit_log.write(phase, rows)

        task = self._start(f"audit-{'+'.join(phases)}", commit)
        self._audits.append(task)
        if self.policy == BEFORE_CHANGES:
            self._before_changes.append(task)

    def keep_tentative(self) -> None:
        """The tentative view is the run's: its records start, its rows land with the next
        audit commit."""
        pending, self._tentative = self._tentative, []
        for name, commit in pending:
            task = self._start(name, commit)
            self._before_changes.append(task)
            self._others.append(task)

    def drop_tentative(self) -> None:
        """The tentative view is replaced (the run plans again): nothing of it is written.
        Its side queries are waited for, so none of them writes the run's state late."""
        self._tentative, self._deferred = [], []
        pending, self._side = self._side, []
        for task in pending:
            task.exception()

    def flush(self) -> None:
        """Commit rows still deferred (the run ended before another phase recorded any)."""
        if self._deferred:
            policy, self.policy = self.policy, NOW
            try:
                phase, rows = self._deferred.pop()
                self.audit(phase, rows)
            finally:
                self.policy = policy

    def side(self, name: str, work: Callable[[], object]) -> None:
        """Run `work` (a query the run's result needs, not the next phase) on a helper
        thread; it is waited for with the run's commits, and its error raised as theirs."""
        self._side.append(self._start(name, work))

    def before_kafka_changes(self) -> None:
        """Wait for the commits that must land before Kafka is changed (raising their
        error)."""
        pending, self._before_changes = self._before_changes, []
        for task in pending:
            task.result()
        self.kafka_changed = True

    def finish(self) -> None:
        """The run ended normally: every commit and side query has landed, or the first
        error among them is raised."""
        self.flush()
        failures = [t.exception() for t in [*self._audits, *self._others, *self._side]]
        self._audits, self._others, self._side = [], [], []
        failure = next((f for f in failures if f is not None), None)
        if failure is not None:
            raise failure

    def abandon(self) -> None:
        """The run failed: what it recorded still lands; wait for commits and side queries
        without raising their errors."""
        try:
            self.flush()
        except Exception as exc:
            log.error("the deferred audit rows could not be written: %s", exc)
        for task in [*self._audits, *self._others, *self._side]:
            error = task.exception()
            if error is not None and task in self._audits:
                log.error("an audit commit failed: %s: %s", type(error).__name__, error)
        self._audits, self._others, self._side = [], [], []


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
    # What SIGTERM / SIGINT asked of the run (never requested where signals are not taken).
    stop: Stop = field(default_factory=Stop)
    # Starts taking the run's lock on a helper thread and returns; None: the run takes no
    # lock.
    start_lock: Callable[[], None] | None = None
    # Takes the run's lock (started or not), returning once the run holds it (or raising);
    # None: the run takes no lock.
    wait_for_lock: Callable[[], None] | None = None
    # Raises LockUnavailable when the run lost its lock (fencing); `read_back` asks the lock
    # log itself, else the heartbeat's last word is taken. None: the run takes no lock.
    check_lock: Callable[[bool], None] | None = None
    # Returns once the executors were found able to run the admin tasks (or raises
    # ExecutorsUnfit); called before the first phase that runs them. None: not checked.
    wait_for_executors: Callable[[], None] | None = None
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

    def safe_point(self, read_back: bool = False) -> None:
        """Raise RunCancelled when a signal asked the run to stop, LockUnavailable when it
        lost its lock; otherwise the run may send its next requests."""
        self.stop.check()
        if self.check_lock is not None:
            self.check_lock(read_back)


class Phase:
    """One unit of a run. `reads` and `writes` name RunState fields."""

    name: ClassVar[str]
    reads: ClassVar[tuple[str, ...]] = ()
    writes: ClassVar[tuple[str, ...]] = ()
    changes_kafka: ClassVar[bool] = False
    needs_lock: ClassVar[bool] = False
    # Whether the phase runs admin tasks on the executors (the Kafka room in Spark tasks).
    runs_tasks: ClassVar[bool] = False
    # Whether its audit rows are the run's view of what it is about to do (the plan): they
    # land before anything changes Kafka.
    records_view: ClassVar[bool] = False
    # Whether it settles what earlier phases sent (verify): it still runs after the lock
    # was lost mid-phase.
    settles: ClassVar[bool] = False
    # Whether it takes the run's lock and plans again under it: what the phases before it
    # recorded is tentative (see Commits).
    replans: ClassVar[bool] = False

    def run(self, ctx: RunContext, state: RunState) -> None:
        raise NotImplementedError

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        """False when the phase has nothing to do in this run (it is skipped)."""
        return True

    def unreached(self, ctx: RunContext, state: RunState, error_name: str,
                  reason: str) -> DataFrame | None:
        """AUDIT rows, `failed` with `error_name` and `reason`, for the topics this phase
        would have changed when the run stops before it; None: it changes nothing per
        topic."""
        return None


def check_order(phases: Sequence[Phase]) -> None:
    """Raise ValueError unless every phase reads only what an earlier phase writes."""
    written: set[str] = {"audit_rows", "acl_audit_rows", "halted"}
    for phase in phases:
        unknown = [f for f in (*phase.reads, *phase.writes) if f not in STATE_FIELDS]
        if unknown:
            raise ValueError(f"phase {phase.name} names unknown state {unknown}")
        missing = [f for f in phase.reads if f not in written]
        if missing:
            raise ValueError(f"phase {phase.name} reads {', '.join(missing)}, which no "
                             "earlier phase writes")
        written.update(phase.writes)


def commit_policy(phases: Sequence[Phase], index: int) -> str:
    """How the audit rows of `phases[index]` are committed (see the module docstring)."""
    phase = phases[index]
    if any(p.replans for p in phases[index + 1:]):
        return TENTATIVE
    if phase.changes_kafka:
        return NOW
    if any(p.changes_kafka for p in phases[index + 1:]):
        return BEFORE_CHANGES if phase.records_view else NOW
    return DEFER


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
            for index, phase in enumerate(self.phases):
                if not phase.changes_kafka:  # its fence checks, recording what it skips
                    ctx.stop.check()
                if state.halted is not None and not phase.settles:
                    continue
                if not phase.needed(ctx, state):
                    log.info("phase %s: nothing to do", phase.name)
                    if phase.replans:
                        ctx.commits.keep_tentative()
                    continue
                if phase.runs_tasks and ctx.wait_for_executors is not None:
                    ready, ctx.wait_for_executors = ctx.wait_for_executors, None
                    ready()
                if phase.needs_lock and ctx.start_lock is not None:
                    # The lock's claim and read back overlap the wait for the tentative
                    # view's side queries.
                    ctx.start_lock()
                if phase.replans:
                    ctx.commits.drop_tentative()
                if phase.needs_lock and ctx.wait_for_lock is not None:
                    ctx.wait_for_lock()
                    ctx.steps.done("lock")
                ctx.commits.policy = commit_policy(self.phases, index)
                if phase.changes_kafka:
                    ctx.commits.before_kafka_changes()
                    fence(ctx, state, phase, read_back=True)
                phase.run(ctx, state)
            if state.halted is not None:
                raise state.halted
            if ctx.phases_done is not None:
                ctx.phases_done()
            if while_committing is not None:
                while_committing(state)
            ctx.commits.finish()
        except BaseException:
            ctx.commits.abandon()
            raise
        return state


def fence(ctx: RunContext, state: RunState, phase: Phase, read_back: bool = False,
          unsent: Callable[[str, str], DataFrame | None] | None = None) -> None:
    """A safe point before `phase` (or before its next wave of requests) changes Kafka: go
    on while the run may; otherwise record every topic it would still have changed as
    `failed`, saying why (`unsent`, by default the phase's `unreached`), and raise.

    read_back: ask the lock log itself (before a phase), not only the heartbeat.
    """
    from provisioning.names import LOCK_LOST, NOT_SENT

    try:
        ctx.safe_point(read_back)
    except ProvisioningError as exc:
        error_name = LOCK_LOST if isinstance(exc, LockUnavailable) else NOT_SENT
        reason = (str(exc) if isinstance(exc, LockUnavailable)
                  else f"not sent: {exc}")
        make = unsent or functools.partial(phase.unreached, ctx, state)
        rows = make(error_name, reason)
        if rows is not None:
            policy, ctx.commits.policy = ctx.commits.policy, NOW
            try:
                ctx.commits.audit(phase.name, rows)
            finally:
                ctx.commits.policy = policy
            state.audit_rows.append(rows)
        raise


def require(value: Any, name: str) -> Any:
    """`value`, which an earlier phase wrote (the order check makes None impossible)."""
    if value is None:
        raise RuntimeError(f"run state {name} is missing")
    return value
