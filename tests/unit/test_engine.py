"""The phase engine: phases with nothing to do are skipped, the commit policy it derives from
the run's phases, the order its commits land in, and its safe points (pure: phases and the
audit log are stand-ins; no Spark, no Delta)."""

from __future__ import annotations

import logging
import threading
from typing import Any, ClassVar

import pytest

from provisioning.errors import LockUnavailable, RunCancelled
from provisioning.run.engine import (
    BEFORE_CHANGES,
    DEFER,
    NOW,
    TENTATIVE,
    Commits,
    Phase,
    Run,
    RunContext,
    RunState,
    commit_policy,
)
from provisioning.session import Stop


class Log:
    """Stands for the audit table: records each phase's commit, and can hold one."""

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
    def __init__(self, name: str) -> None:
        self.name = name

    def unionByName(self, other: Rows) -> Rows:
        return Rows(f"{self.name}+{other.name}")


class Step(Phase):
    ran: ClassVar[list[str]] = []

    def __init__(self, name: str, needed: bool = True, changes: bool = False,
                 view: bool = False, settles: bool = False,
                 halts: BaseException | None = None) -> None:
        self.name = name  # type: ignore[misc]
        self._needed = needed
        self.changes_kafka = changes  # type: ignore[misc]
        self.records_view = view  # type: ignore[misc]
        self.settles = settles  # type: ignore[misc]
        self._halts = halts

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return self._needed

    def run(self, ctx: RunContext, state: RunState) -> None:
        Step.ran.append(self.name)
        ctx.commits.audit(self.name, Rows(f"{self.name} rows"))
        if self._halts is not None:
            state.halted = self._halts  # type: ignore[assignment]

    def unreached(self, ctx: RunContext, state: RunState, error_name: str,
                  reason: str) -> Any:
        return Rows(f"{self.name} unsent {error_name}") if self.changes_kafka else None


def _ctx(commits: Commits, stop: Stop | None = None) -> RunContext:
    record: Any = type("Record", (), {"run_id": "r1"})()
    options: Any = type("Options", (), {"command": "apply"})()
    return RunContext(spark=None, conf=None, clusters=(), credentials={},  # type: ignore[arg-type]
                      record=record, options=options, commits=commits, stop=stop or Stop())


def _apply_run(**changes: Any) -> Run:
    return Run(Step("plan", view=True), Step("validate"), Step("apply", changes=True, **changes),
               Step("verify", settles=True))


def test_a_phase_with_nothing_to_do_is_skipped_and_the_rest_run(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="provisioning.run.engine")
    Step.ran = []
    done: list[str] = []
    ctx = _ctx(Commits(Log()))  # type: ignore[arg-type]
    ctx.phases_done = lambda: done.append("phases done")
    Run(Step("plan"), Step("validate", needed=False), Step("apply")).execute(
        ctx, lambda state: done.append("summary"))
    assert Step.ran == ["plan", "apply"]
    assert done == ["phases done", "summary"]
    assert "phase validate: nothing to do" in caplog.text


def test_the_commit_policy_follows_what_the_run_has_ahead() -> None:
    apply = _apply_run().phases
    assert [commit_policy(apply, i) for i in range(4)] == [BEFORE_CHANGES, NOW, NOW, DEFER]
    plan = Run(Step("plan", view=True), Step("validate")).phases
    assert [commit_policy(plan, i) for i in range(2)] == [DEFER, DEFER]


def test_a_plan_run_makes_one_commit_and_an_apply_one_per_phase() -> None:
    Step.ran = []
    log = Log()
    Run(Step("plan", view=True), Step("validate")).execute(_ctx(Commits(log)))  # type: ignore[arg-type]
    assert log.written == ["validate: plan rows+validate rows"]

    log = Log()
    _apply_run().execute(_ctx(Commits(log)))  # type: ignore[arg-type]
    assert log.written == ["plan: plan rows", "validate: validate rows", "apply: apply rows",
                           "verify: verify rows"]


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
    return Run(Snap("snapshot"), Step("plan", view=True),
               Relocks("lock", needed=replanned, view=True),
               Step("validate", needed=applies), Step("apply", changes=True, needed=applies))


def test_what_comes_before_a_replan_is_tentative() -> None:
    phases = _locked_apply(True).phases
    assert [commit_policy(phases, i) for i in range(5)] == [
        TENTATIVE, TENTATIVE, BEFORE_CHANGES, NOW, NOW]


def test_a_run_that_plans_again_under_its_lock_records_only_the_second_view() -> None:
    Step.ran = []
    log = Log()
    taken: list[str] = []
    ctx = _ctx(Commits(log))  # type: ignore[arg-type]
    ctx.wait_for_lock = lambda: taken.append("lock")
    _locked_apply(True).execute(ctx)
    assert taken == ["lock"]
    assert Step.ran == ["snapshot", "plan", "snapshot again", "plan again", "validate", "apply"]
    assert sorted(log.written) == sorted([
        "snapshot again record", "snapshot again: snapshot again rows",
        "plan again: plan again rows", "validate: validate rows", "apply: apply rows"])
    # the audit commits in phase order, each view's record before the change
    assert [w for w in log.written if "record" not in w] == [
        "snapshot again: snapshot again rows", "plan again: plan again rows",
        "validate: validate rows", "apply: apply rows"]


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
    assert Step.ran == ["snapshot", "plan", "snapshot again", "plan again", "validate", "apply"]


def test_a_run_with_nothing_to_change_takes_no_lock_and_keeps_its_first_view() -> None:
    Step.ran = []
    log = Log()
    taken: list[str] = []
    ctx = _ctx(Commits(log))  # type: ignore[arg-type]
    ctx.start_lock = lambda: taken.append("lock started")
    ctx.wait_for_lock = lambda: taken.append("lock")
    _locked_apply(False, applies=False).execute(ctx)
    assert taken == []
    assert Step.ran == ["snapshot", "plan"]
    # one audit commit (the first view's rows together) and the snapshot's record
    assert sorted(log.written) == ["plan: snapshot rows+plan rows", "snapshot record"]


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


def test_an_audit_commit_waits_for_earlier_audit_commits_not_for_the_snapshot() -> None:
    log = Log()
    commits = Commits(log)  # type: ignore[arg-type]
    snapshot_started = threading.Event()
    release_snapshot = threading.Event()

    def snapshot_commit() -> None:
        snapshot_started.set()
        assert release_snapshot.wait(10)

    commits.record("snapshot-write", snapshot_commit)
    assert snapshot_started.wait(10)
    log.gates["plan"] = threading.Event()
    commits.policy = BEFORE_CHANGES
    commits.audit("plan", None)  # type: ignore[arg-type]
    commits.policy = NOW
    commits.audit("validate", None)  # type: ignore[arg-type]
    # the validate commit waits for the plan's, in phase order
    threading.Event().wait(0.5)
    assert log.written == []
    log.gates["plan"].set()
    for task in list(commits._audits):
        task.result(10)
    # ... but neither waited for the snapshot commit, still held
    assert log.written == ["plan", "validate"]
    assert not release_snapshot.is_set()
    release_snapshot.set()
    commits.before_kafka_changes()
    commits.finish()


def test_a_failed_commit_before_kafka_changes_stops_the_run() -> None:
    commits = Commits(Log())  # type: ignore[arg-type]

    def broken() -> None:
        raise RuntimeError("storage gone")

    commits.record("snapshot-write", broken)
    with pytest.raises(RuntimeError, match="storage gone"):
        commits.before_kafka_changes()


def test_after_kafka_changed_every_phase_is_written_before_a_failure_is_raised() -> None:
    class Failing(Log):
        def write(self, phase: str, rows: Any) -> None:
            if phase == "apply":
                raise RuntimeError("apply commit failed")
            super().write(phase, rows)

    log = Failing()
    commits = Commits(log)  # type: ignore[arg-type]
    commits.before_kafka_changes()
    commits.audit("apply", None)  # type: ignore[arg-type]
    commits.audit("verify", None)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="apply commit failed"):
        commits.finish()
    assert log.written == ["verify"]


def test_deferred_rows_land_alone_at_the_end_or_when_the_run_fails() -> None:
    alone = Log()
    commits = Commits(alone)  # type: ignore[arg-type]
    commits.policy = DEFER
    commits.audit("plan", Rows("plan rows"))  # type: ignore[arg-type]
    commits.finish()
    assert alone.written == ["plan: plan rows"]

    failed = Log()
    commits = Commits(failed)  # type: ignore[arg-type]
    commits.policy = DEFER
    commits.audit("plan", Rows("plan rows"))  # type: ignore[arg-type]
    commits.abandon()
    assert failed.written == ["plan: plan rows"]  # what was recorded still lands


def test_a_signal_stops_the_run_at_the_next_safe_point_recording_what_was_never_sent() -> None:
    Step.ran = []
    stop = Stop()
    log = Log()

    class Signalled(Step):
        def run(self, ctx: RunContext, state: RunState) -> None:
            super().run(ctx, state)
            stop.request("SIGTERM")  # arrives while validate runs

    run = Run(Step("plan", view=True), Signalled("validate"), Step("apply", changes=True),
              Step("verify", settles=True))
    with pytest.raises(RunCancelled, match="cancelled by SIGTERM"):
        run.execute(_ctx(Commits(log), stop))  # type: ignore[arg-type]
    assert Step.ran == ["plan", "validate"]
    assert log.written == ["plan: plan rows", "validate: validate rows",
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
    assert log.written[-1] == "apply: apply unsent LOCK_LOST"

    Step.ran = []
    log = Log()
    halt = LockUnavailable("lock lost: the heartbeat could not renew it")
    with pytest.raises(LockUnavailable, match="could not renew"):
        _apply_run(halts=halt).execute(_ctx(Commits(log)))  # type: ignore[arg-type]
    assert Step.ran == ["plan", "validate", "apply", "verify"]
    assert log.written == ["plan: plan rows", "validate: validate rows", "apply: apply rows",
                           "verify: verify rows"]
