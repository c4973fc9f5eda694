"""The phase engine: phases with nothing to do are skipped, what a run commits and when
(`run.commits`: its intent before the first change, its results after, only its findings
when it changes nothing), the tentative view before a re-plan under the lock, its safe
points, and the guard that holds a phase to the state it declared (pure: phases and the
audit log are stand-ins; no Spark, no Delta)."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from provisioning.errors import LockUnavailable, RunCancelled
from provisioning.run.commits import Commits
from provisioning.run.engine import Phase, Run, RunContext, check_order
from provisioning.run.state import KindState, RunState, UndeclaredState
from provisioning.session import Stop


class Log:
    """Stands for the audit table: records each commit, and can hold one."""

    spark = None

    def __init__(self) -> None:
        self.written: list[str] = []
        self.gates: dict[str, threading.Event] = {}

    def write(self, phase: str, rows: Any) -> None:
        gate = self.gates.get(phase)
        if gate is not None:
            assert gate.wait(10), f"{phase} was never let through"
        self.written.append(phase if rows is None else f"{phase}: {rows.name}")


class Rows:
    """Stands for a phase's AUDIT rows; `where` keeps the findings (by name)."""

    def __init__(self, name: str, findings: bool = False) -> None:
        self.name = name
        self.findings = findings

    def unionByName(self, other: Rows) -> Rows:
        return Rows(f"{self.name}+{other.name}", self.findings or other.findings)

    def where(self, _condition: Any) -> Rows:
        return Rows(f"findings of {self.name}", self.findings)

    def isEmpty(self) -> bool:
        return not self.findings


class Step(Phase):
    ran: ClassVar[list[str]] = []

    def __init__(self, name: str, needed: bool = True, changes: bool = False,
                 view: bool = False, settles: bool = False,
                 halts: BaseException | None = None, findings: bool = False) -> None:
        self.name = name  # type: ignore[misc]
        self._needed = needed
        self.changes_kafka = changes  # type: ignore[misc]
        self.records_view = view  # type: ignore[misc]
        self.settles = settles  # type: ignore[misc]
        self._halts = halts
        self._findings = findings
        if halts is not None:
            self.writes = ("halted",)

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return self._needed

    def run(self, ctx: RunContext, state: RunState) -> None:
        Step.ran.append(self.name)
        ctx.commits.audit(self.name, Rows(f"{self.name} rows", self._findings))  # type: ignore[arg-type]
        if self._halts is not None:
            state.halted = self._halts  # type: ignore[assignment]

    def unreached(self, ctx: RunContext, state: RunState, error_name: str,
                  reason: str) -> Any:
        return Rows(f"{self.name} unsent {error_name}") if self.changes_kafka else None


def _ctx(commits: Commits, stop: Stop | None = None, changes_planned: bool = True
         ) -> RunContext:
    record: Any = type("Record", (), {"run_id": "r1"})()
    options: Any = type("Options", (), {"command": "apply"})()
    ctx = RunContext(spark=None, conf=None, clusters=(), credentials={},  # type: ignore[arg-type]
                     record=record, options=options, commits=commits, stop=stop or Stop())
    ctx.plan_has_changes = lambda _state: changes_planned
    # The stand-in rows filter themselves (no Spark here).
    commits.findings = lambda rows: rows.where(None)
    return ctx


def _run(*phases: Phase) -> Run:
    return Run(*phases, slices={})


def _apply_run(**changes: Any) -> Run:
    return _run(Step("plan", view=True), Step("validate"),
                Step("apply", changes=True, **changes), Step("verify", settles=True))


def test_a_phase_with_nothing_to_do_is_skipped_and_the_rest_run(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="provisioning.run.engine")
    Step.ran = []
    done: list[str] = []
    ctx = _ctx(Commits(Log()))  # type: ignore[arg-type]
    ctx.phases_done = lambda: done.append("phases done")
    _run(Step("plan"), Step("validate", needed=False), Step("apply")).execute(
        ctx, lambda state: done.append("summary"))
    assert Step.ran == ["plan", "apply"]
    assert done == ["phases done", "summary"]
    assert "phase validate: nothing to do" in caplog.text


def test_a_plan_with_something_to_do_makes_one_commit_of_every_row() -> None:
    Step.ran = []
    log = Log()
    _run(Step("plan", view=True), Step("validate")).execute(_ctx(Commits(log)))  # type: ignore[arg-type]
    assert log.written == ["plan+validate: plan rows+validate rows"]


def test_a_run_that_changes_nothing_commits_only_its_findings() -> None:
    log = Log()
    _run(Step("plan", view=True, findings=True), Step("validate")).execute(
        _ctx(Commits(log), changes_planned=False))  # type: ignore[arg-type]
    assert log.written == ["plan+validate: findings of plan rows+validate rows"]

    log = Log()
    _run(Step("plan", view=True), Step("validate")).execute(
        _ctx(Commits(log), changes_planned=False))  # type: ignore[arg-type]
    assert log.written == []


def test_an_apply_commits_its_intent_before_the_first_change_and_its_results_after() -> None:
    Step.ran = []
    log = Log()
    seen: list[list[str]] = []

    class Sends(Step):
        def run(self, ctx: RunContext, state: RunState) -> None:
            seen.append(list(log.written))  # what had landed when the change started
            super().run(ctx, state)

    _run(Step("plan", view=True), Step("validate"), Sends("apply", changes=True),
         Step("verify", settles=True)).execute(_ctx(Commits(log)))  # type: ignore[arg-type]
    assert seen == [["plan+validate: plan rows+validate rows"]]
    assert log.written == ["plan+validate: plan rows+validate rows",
                           "apply+verify: apply rows+verify rows"]


class Snap(Step):
    """Records its view (the snapshot) as well as audit rows."""

    def run(self, ctx: RunContext, state: RunState) -> None:
        ctx.commits.record(f"{self.name}-write",
                           lambda: ctx.commits.audit_log.written.append(f"{self.name} record"))
        super().run(ctx, state)


class Relocks(Step):
    """Takes the lock and plans again (`replans`), as `run.relock.Relock` does."""

    replans = True
    needs_lock = True

    def run(self, ctx: RunContext, state: RunState) -> None:
        Snap("snapshot again").run(ctx, state)
        Step("plan again").run(ctx, state)


def _locked_apply(replanned: bool, applies: bool = True) -> Run:
    return _run(Snap("snapshot"), Step("plan", view=True),
                Relocks("lock", needed=replanned, view=True),
                Step("validate", needed=applies), Step("apply", changes=True, needed=applies))


def test_a_run_that_plans_again_under_its_lock_records_only_the_second_view() -> None:
    Step.ran = []
    log = Log()
    taken: list[str] = []
    ctx = _ctx(Commits(log))  # type: ignore[arg-type]
    ctx.wait_for_lock = lambda: taken.append("lock")
    _locked_apply(True).execute(ctx)
    assert taken == ["lock"]
    assert Step.ran == ["snapshot", "plan", "snapshot again", "plan again", "validate", "apply"]
    # The second view's record and its intent land before the change, the results after.
    assert log.written == [
        "snapshot again record",
        "snapshot again+plan again+validate: snapshot again rows+plan again rows+"
        "validate rows",
        "apply: apply rows"]


def test_the_lock_is_started_before_the_first_views_side_queries_are_waited_for() -> None:
    Step.ran = []
    order: list[str] = []
    started = threading.Event()
    ctx = _ctx(Commits(Log()))  # type: ignore[arg-type]

    def start() -> None:
        order.append("lock started")
        started.set()

    def count() -> None:
        # A side query of the first view, still running when the lock is asked for.
        order.append("side query done" if started.wait(10) else "side query never overlapped")

    ctx.commits.side("count", count)
    ctx.start_lock = start
    ctx.wait_for_lock = lambda: order.append("lock held")
    _locked_apply(True).execute(ctx)
    assert order == ["lock started", "side query done", "lock held"]


def test_a_run_with_nothing_to_change_takes_no_lock_and_keeps_its_first_view() -> None:
    Step.ran = []
    log = Log()
    taken: list[str] = []
    ctx = _ctx(Commits(log), changes_planned=False)  # type: ignore[arg-type]
    ctx.start_lock = lambda: taken.append("lock started")
    ctx.wait_for_lock = lambda: taken.append("lock")
    _locked_apply(False, applies=False).execute(ctx)
    assert taken == []
    assert Step.ran == ["snapshot", "plan"]
    # The snapshot's record, and no audit commit: the run found nothing worth recording.
    assert log.written == ["snapshot record"]


def test_a_lock_refused_records_nothing_of_the_first_view() -> None:
    from provisioning.errors import LockHeld

    Step.ran = []
    log = Log()
    ctx = _ctx(Commits(log))  # type: ignore[arg-type]

    def refused() -> None:
        raise LockHeld("cluster local is locked by apply run other")

    ctx.wait_for_lock = refused
    with pytest.raises(LockHeld):
        _locked_apply(True).execute(ctx)
    assert Step.ran == ["snapshot", "plan"]
    assert log.written == []


def test_a_failed_record_before_kafka_changes_stops_the_run() -> None:
    commits = Commits(Log())  # type: ignore[arg-type]

    def broken() -> None:
        raise RuntimeError("storage gone")

    commits.record("snapshot-write", broken)
    with pytest.raises(RuntimeError, match="storage gone"):
        commits.before_kafka_changes()


def test_a_failed_intent_commit_stops_the_run_before_any_change() -> None:
    class Failing(Log):
        def write(self, phase: str, rows: Any) -> None:
            raise RuntimeError("intent commit failed")

    Step.ran = []
    with pytest.raises(RuntimeError, match="intent commit failed"):
        _apply_run().execute(_ctx(Commits(Failing())))  # type: ignore[arg-type]
    assert Step.ran == ["plan", "validate"]


def test_after_kafka_changed_the_results_are_written_before_a_failure_is_raised() -> None:
    Step.ran = []
    log = Log()

    class Breaks(Step):
        def run(self, ctx: RunContext, state: RunState) -> None:
            super().run(ctx, state)
            raise RuntimeError("verify broke")

    with pytest.raises(RuntimeError, match="verify broke"):
        _run(Step("plan", view=True), Step("apply", changes=True), Breaks("verify")).execute(
            _ctx(Commits(log)))  # type: ignore[arg-type]
    assert log.written == ["plan: plan rows", "apply+verify: apply rows+verify rows"]


def test_a_failed_run_whose_plan_cannot_be_asked_keeps_its_rows_whole_and_says_why(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="provisioning.run.engine")
    Step.ran = []
    log = Log()
    ctx = _ctx(Commits(log))  # type: ignore[arg-type]

    def unknowable(_state: RunState) -> bool:
        raise RuntimeError("the plan's counts are gone")

    ctx.plan_has_changes = unknowable

    class Breaks(Step):
        def run(self, ctx: RunContext, state: RunState) -> None:
            super().run(ctx, state)
            raise RuntimeError("validate broke")

    with pytest.raises(RuntimeError, match="validate broke"):
        _run(Step("plan", view=True), Breaks("validate")).execute(ctx)
    # Whether the plan had changes cannot be told: every row is kept, and the log says why.
    assert log.written == ["plan+validate: plan rows+validate rows"]
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "the run failed and whether its plan had anything to change cannot be "
                    "told (RuntimeError: the plan's counts are gone): every row it recorded "
                    "is kept")]


def test_a_signal_stops_the_run_at_the_next_safe_point_recording_what_was_never_sent() -> None:
    Step.ran = []
    stop = Stop()
    log = Log()

    class Signalled(Step):
        def run(self, ctx: RunContext, state: RunState) -> None:
            super().run(ctx, state)
            stop.request("SIGTERM")  # arrives while validate runs

    run = _run(Step("plan", view=True), Signalled("validate"), Step("apply", changes=True),
               Step("verify", settles=True))
    with pytest.raises(RunCancelled, match="cancelled by SIGTERM"):
        run.execute(_ctx(Commits(log), stop))  # type: ignore[arg-type]
    assert Step.ran == ["plan", "validate"]
    assert log.written == ["plan+validate: plan rows+validate rows",
                           "apply: apply unsent NOT_SENT"]


def test_a_lock_lost_before_a_change_records_it_and_a_lock_lost_mid_phase_still_verifies(
        ) -> None:
    Step.ran = []
    log = Log()
    ctx = _ctx(Commits(log))  # type: ignore[arg-type]

    def lost(_read_back: bool) -> None:
        raise LockUnavailable("lock lost: taken over")

    ctx.check_lock = lost
    with pytest.raises(LockUnavailable, match="taken over"):
        _apply_run().execute(ctx)
    assert Step.ran == ["plan", "validate"]
    assert log.written == ["plan+validate: plan rows+validate rows",
                           "apply: apply unsent LOCK_LOST"]

    Step.ran = []
    log = Log()
    halt = LockUnavailable("lock lost: the heartbeat could not renew it")
    with pytest.raises(LockUnavailable, match="could not renew"):
        _apply_run(halts=halt).execute(_ctx(Commits(log)))  # type: ignore[arg-type]
    assert Step.ran == ["plan", "validate", "apply", "verify"]
    assert log.written == ["plan+validate: plan rows+validate rows",
                           "apply+verify: apply rows+verify rows"]


# -- the guard: a phase touches only the state it declared ------------------------------

@dataclass
class Things(KindState):
    wanted: str | None = None
    made: str | None = None
    other: str | None = None


class Makes(Phase):
    name = "make"
    kind = "things"
    reads = ("things.wanted",)
    writes = ("things.made",)

    def __init__(self, reads_too: str | None = None, writes_too: str | None = None) -> None:
        self._reads_too, self._writes_too = reads_too, writes_too

    def run(self, ctx: RunContext, state: RunState) -> None:
        things = state.of(Things)
        things.made = f"made {things.wanted}"
        things.rows.append("its rows")  # type: ignore[arg-type]
        if self._reads_too:
            getattr(things, self._reads_too)
        if self._writes_too:
            setattr(things, self._writes_too, "x")


class Wants(Phase):
    name = "want"
    kind = "things"
    writes = ("things.wanted",)

    def run(self, ctx: RunContext, state: RunState) -> None:
        state.of(Things).wanted = "a topic"


def test_a_phase_reads_and_writes_what_it_declares_and_its_kinds_rows() -> None:
    state = Run(Wants(), Makes(), slices={"things": Things}).execute(
        _ctx(Commits(Log())))  # type: ignore[arg-type]
    things = state.of(Things)
    assert (things.wanted, things.made, things.rows) == ("a topic", "made a topic",
                                                         ["its rows"])


def test_a_phase_that_reads_a_field_it_did_not_declare_fails() -> None:
    with pytest.raises(UndeclaredState, match=r"phase make reads things\.other, which it does "
                                              "not declare it reads"):
        Run(Wants(), Makes(reads_too="other"), slices={"things": Things}).execute(
            _ctx(Commits(Log())))  # type: ignore[arg-type]

    class Peeks(Makes):
        reads = ()
        writes = ("things.made",)

    with pytest.raises(UndeclaredState, match=r"phase make reads things\.wanted"):
        Run(Wants(), Peeks(), slices={"things": Things}).execute(_ctx(Commits(Log())))  # type: ignore[arg-type]


def test_a_phase_that_writes_a_field_it_did_not_declare_fails() -> None:
    with pytest.raises(UndeclaredState, match=r"phase make writes things\.wanted, which it "
                                              "does not declare it writes"):
        Run(Wants(), Makes(writes_too="wanted"), slices={"things": Things}).execute(
            _ctx(Commits(Log())))  # type: ignore[arg-type]


def test_a_phase_list_naming_unknown_state_or_reading_before_any_write_is_refused() -> None:
    with pytest.raises(ValueError, match=r"phase make reads things\.wanted, which no earlier "
                                         "phase writes"):
        check_order([Makes()], {"things": Things})

    class Typo(Makes):
        reads = ("things.wantd",)

    with pytest.raises(ValueError, match=r"phase make names unknown state \['things.wantd'\]"):
        check_order([Wants(), Typo()], {"things": Things})


def test_a_phase_that_commits_at_once_lands_its_rows_before_the_next_phase() -> None:
    Step.ran = []
    log = Log()
    seen: list[list[str]] = []

    class AtOnce(Step):
        commits_at_once = True

    class Watches(Step):
        def run(self, ctx: RunContext, state: RunState) -> None:
            seen.append(list(log.written))
            super().run(ctx, state)

    _run(Step("plan", view=True), Step("apply", changes=True), AtOnce("move", changes=True),
         Watches("verify", settles=True)).execute(_ctx(Commits(log)))  # type: ignore[arg-type]
    assert seen == [["plan: plan rows", "move: move rows"]]
    assert log.written == ["plan: plan rows", "move: move rows",
                           "apply+verify: apply rows+verify rows"]
