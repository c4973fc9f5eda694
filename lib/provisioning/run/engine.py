"""The phase engine: a run is an ordered list of phases over one shared state.

Each phase is one unit that names the state it reads and the state it writes
(`run.state`: `kind.field`, or a shared field); a list whose phase reads something no
earlier phase writes is refused when the list is built, not halfway through a run, and a
phase that touches a field it did not declare fails as it does (the guarded state).

What the run commits, and when, is `run.commits`: its intent (every row recorded before
the first phase that changes Kafka) as one commit that lands before that phase; its
results as one commit once the phases are done, or as the run fails; a run that changes
nothing commits its findings only. What the phases before a phase that plans again under
the run's lock (`Phase.replans`) record is tentative: dropped when that phase runs, kept
when it is skipped.

Safe points. Before each phase, and before each wave of requests inside a phase that
changes Kafka, the engine asks whether a signal asked the run to stop (`RunContext.stop`)
and whether the run still holds its lock (`RunContext.check_lock`). A phase never reached
records, for everything it would have changed, a `failed` row saying why (`unreached`).
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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from provisioning.conf import ClusterConf, Conf, Credentials
from provisioning.errors import LockUnavailable, ProvisioningError
from provisioning.results import RunRecord
from provisioning.run.commits import Commits
from provisioning.run.state import KindState, RunState, declarable
from provisioning.session import Stop, profile
from schemas import tables, with_kind_columns

if TYPE_CHECKING:
    from provisioning.run.kind import RunKind
    from provisioning.run.options import AnyOptions

log = logging.getLogger(__name__)


class Steps:
    """Logs `step NAME: SECONDS (at EPOCH)` as each step of a run ends (bench/run.py reads it)."""

    def __init__(self) -> None:
        self._last = time.monotonic()

    def done(self, name: str) -> None:
        now = time.monotonic()
        log.info("step %s: %.3fs (at %.3f)", name, now - self._last, time.time())
        profile.mark(name)
        self._last = now


def log_phase(phase: str, started: float, rows: DataFrame, by: str = "outcome"
              ) -> dict[str, int]:
    """Log the phase's topic count, duration, rate and counts per `by` (outcome, cluster);
    returns the counts (one small Spark job)."""
    counts = {str(r[by]): int(r["n"]) for r in
              rows.groupBy(by).agg(F.count(F.lit(1)).alias("n")).collect()}
    log_counts(phase, started, counts)
    return counts


def log_counts(phase: str, started: float, counts: Mapping[str, int], what: str = "topic"
               ) -> None:
    """Log the phase's count of `what` (topics, or an entity kind's `Nouns.one`), duration,
    rate and `counts`."""
    total = sum(counts.values())
    elapsed = time.monotonic() - started
    rate = f", {total / elapsed:.1f} {what}s/s" if elapsed > 0 and total else ""
    detail = ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "none"
    log.info("phase %s: %d %s(s) in %.1fs%s; %s", phase, total, what, elapsed, rate, detail)


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
    # The kinds the run loops over (each kind's part of the run package, in registry order).
    kinds: tuple[RunKind, ...] = ()
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
    # Called once the run's plan is final (after the last phase that plans), before any
    # phase that sends requests: the saved plan's check that every kind's section was
    # compared (`views.planfile`).
    plans_done: Callable[[], None] | None = None
    # Whether the run's plan has anything to change, whatever the flags allow
    # (`run.commands`: every kind asked); a run that changed nothing and has nothing
    # planned records its findings only.
    plan_has_changes: Callable[[RunState], bool] = lambda _state: True
    # Whether the rows the run recorded hold findings (`names.FINDINGS`), as its plan's
    # counts tell; None when they cannot (the rows themselves are asked then).
    findings_counted: Callable[[RunState], bool | None] = lambda _state: None

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @functools.cached_property
    def audit(self) -> StructType:
        """The audit table as this run writes it: the shared columns and each of its kinds'
        own (`RunKind.audit_column`), in the kinds' order."""
        return with_kind_columns(tables.AUDIT, (kind.audit_column for kind in self.kinds))

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
    """One unit of a run. `reads` and `writes` name state fields (`run.state`); `kind` is
    the kind whose phase it is (its slice's `rows` it may always append to)."""

    # Plain attributes: a phase of a kind on a shared base (`run.entity`) is named after
    # its kind, and one whose declarations depend on its kind's layers sets its own.
    name: str
    kind: str | None = None
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    changes_kafka: ClassVar[bool] = False
    needs_lock: ClassVar[bool] = False
    # Whether the phase runs admin tasks on the executors (the Kafka package in Spark tasks).
    runs_tasks: ClassVar[bool] = False
    # Whether its audit rows are the run's view of what it is about to do (the plan): they
    # land before anything changes Kafka.
    records_view: ClassVar[bool] = False
    # Whether it settles what earlier phases sent (verify): it still runs after the lock
    # was lost mid-phase.
    settles: ClassVar[bool] = False
    # Whether it takes the run's lock and plans again under it: what the phases before it
    # recorded is tentative (see run.commits).
    replans: ClassVar[bool] = False
    # Whether it makes (part of) the run's plan: the saved-plan check runs once the last
    # such phase is done.
    plans: ClassVar[bool] = False
    # Whether its rows are committed as it records them rather than with the run's
    # results: a later run needs them to settle what this one leaves if it is killed
    # (see run.commits).
    commits_at_once: ClassVar[bool] = False

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


def check_order(phases: Sequence[Phase], slices: Mapping[str, type[KindState]]) -> None:
    """Raise ValueError unless every phase names only fields of `slices` (or shared ones)
    and reads only what an earlier phase writes."""
    known = declarable(slices)
    written: set[str] = {"halted", *(f"{kind}.rows" for kind in slices)}
    for phase in phases:
        unknown = [f for f in (*phase.reads, *phase.writes) if f not in known]
        if unknown:
            raise ValueError(f"phase {phase.name} names unknown state {unknown}")
        missing = [f for f in phase.reads if f not in written]
        if missing:
            raise ValueError(f"phase {phase.name} reads {', '.join(missing)}, which no "
                             "earlier phase writes")
        written.update(phase.writes)


def view(state: RunState, phase: Phase) -> RunState:
    """`state` as `phase` may touch it (`RunState.guarded`)."""
    return state.guarded(phase.name, phase.reads, phase.writes, phase.kind)


class Run:
    """An ordered list of phases over the slices of `slices` (kind -> slice class),
    checked when built."""

    def __init__(self, *phases: Phase, slices: Mapping[str, type[KindState]]) -> None:
        check_order(phases, slices)
        self.phases = phases
        self.slices = dict(slices)

    def execute(self, ctx: RunContext,
                while_committing: Callable[[RunState], None] | None = None) -> RunState:
        """Run every phase in order; every commit has landed when this returns.

        Once the last phase is done, `ctx.phases_done` is called (an apply gives its lock
        back: nothing changes Kafka any more), the last audit commit starts, and
        `while_committing` (the run's summary) is made while the last commits land.
        """
        state = RunState({kind: cls() for kind, cls in self.slices.items()})
        last_plan = max((i for i, p in enumerate(self.phases) if p.plans or p.replans),
                        default=-1)
        try:
            for index, phase in enumerate(self.phases):
                self._step(ctx, state, index, phase)
                if index == last_plan and ctx.plans_done is not None:
                    ctx.plans_done()
            if state.halted is not None:
                raise state.halted
            if ctx.phases_done is not None:
                ctx.phases_done()
            # The last audit commit lands while the summary is made.
            ctx.commits.findings_counted = functools.partial(ctx.findings_counted, state)
            ctx.commits.land(ctx.plan_has_changes(state))
            if while_committing is not None:
                while_committing(state)
            ctx.commits.finish(ctx.plan_has_changes(state))
        except BaseException:
            ctx.commits.abandon(_planned_or_true(ctx, state))
            raise
        return state

    def _step(self, ctx: RunContext, state: RunState, index: int, phase: Phase) -> None:
        if not phase.changes_kafka:  # its fence checks, recording what it skips
            ctx.stop.check()
        if state.halted is not None and not phase.settles:
            return
        seen = view(state, phase)
        if not phase.needed(ctx, seen):
            log.info("phase %s: nothing to do", phase.name)
            if phase.replans:
                ctx.commits.keep_tentative()
            return
        if phase.runs_tasks and ctx.wait_for_executors is not None:
            ready, ctx.wait_for_executors = ctx.wait_for_executors, None
            ready()
        if phase.needs_lock and ctx.start_lock is not None:
            # The lock's claim and read back overlap the wait for the tentative view's
            # side queries.
            ctx.start_lock()
        if phase.replans:
            ctx.commits.drop_tentative()
        if phase.needs_lock and ctx.wait_for_lock is not None:
            ctx.wait_for_lock()
            ctx.steps.done("lock")
        ctx.commits.tentative = any(p.replans for p in self.phases[index + 1:])
        ctx.commits.at_once = phase.commits_at_once
        if phase.changes_kafka:
            ctx.commits.before_kafka_changes()
            fence(ctx, seen, phase, read_back=True)
        phase.run(ctx, seen)


def _planned_or_true(ctx: RunContext, state: RunState) -> bool:
    """Whether the failed run's plan had anything to change (true when that cannot be
    told: what it recorded is kept whole, and the log says why)."""
    try:
        return ctx.plan_has_changes(state)
    except Exception as exc:
        # The run is failing already: its own error is the one raised.
        log.warning("the run failed and whether its plan had anything to change cannot be "
                    "told (%s: %s): every row it recorded is kept", type(exc).__name__, exc)
        return True


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
            recorded(ctx, state.slice(phase.kind) if phase.kind else None, phase.name, rows)
        raise


def recorded(ctx: RunContext, rows_of: KindState | None, phase: str, rows: DataFrame
             ) -> None:
    """`rows` (AUDIT) recorded by `phase`: kept in its kind's slice (`rows_of`, for the
    summary) and committed with the run's intent or results (`run.commits`)."""
    if rows_of is not None:
        rows_of.rows.append(rows)
    ctx.commits.audit(phase, rows)


def require(value: Any, name: str) -> Any:
    """`value`, which an earlier phase wrote (the order check makes None impossible)."""
    if value is None:
        raise RuntimeError(f"run state {name} is missing")
    return value
