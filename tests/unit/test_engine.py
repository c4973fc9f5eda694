"""The phase engine: phases with nothing to do are skipped, and the order its commits land in
(pure: phases and the audit log are stand-ins; no Spark, no Delta)."""

from __future__ import annotations

import logging
import threading
from typing import Any, ClassVar

import pytest

from provisioning.run.engine import Commits, Phase, Run, RunContext, RunState


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
        self.written.append(phase)


class Step(Phase):
    ran: ClassVar[list[str]] = []

    def __init__(self, name: str, needed: bool = True) -> None:
        self.name = name  # type: ignore[misc]
        self._needed = needed

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return self._needed

    def run(self, ctx: RunContext, state: RunState) -> None:
        Step.ran.append(self.name)


def _ctx(commits: Commits) -> RunContext:
    record: Any = type("Record", (), {"run_id": "r1"})()
    options: Any = type("Options", (), {"command": "apply"})()
    return RunContext(spark=None, conf=None, clusters=(), credentials={},  # type: ignore[arg-type]
                      record=record, options=options, commits=commits)


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
    commits.audit("plan", None, before_changes=True)
    # the next audit commit waits for the plan's, in phase order
    waiting = threading.Thread(target=lambda: commits.audit("validate", None))
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive() and log.written == []
    log.gates["plan"].set()
    waiting.join(10)
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
    commits.audit("apply", None, background=True)
    with pytest.raises(RuntimeError, match="apply commit failed"):
        commits.audit("verify", None)
    assert log.written == ["verify"]


def test_deferred_rows_go_in_the_next_phases_commit_or_alone_at_the_end() -> None:
    class Rows:
        def __init__(self, name: str) -> None:
            self.name = name

        def unionByName(self, other: Rows) -> Rows:
            return Rows(f"{self.name}+{other.name}")

    class Recording(Log):
        def write(self, phase: str, rows: Any) -> None:
            self.written.append(f"{phase}: {rows.name}")

    log = Recording()
    commits = Commits(log)  # type: ignore[arg-type]
    commits.audit("plan", Rows("plan rows"), defer=True)
    assert log.written == []
    commits.audit("validate", Rows("validate rows"))
    assert log.written == ["validate: plan rows+validate rows"]  # one commit

    alone = Recording()
    commits = Commits(alone)  # type: ignore[arg-type]
    commits.audit("plan", Rows("plan rows"), defer=True)
    commits.finish()
    assert alone.written == ["plan: plan rows"]

    failed = Recording()
    commits = Commits(failed)  # type: ignore[arg-type]
    commits.audit("plan", Rows("plan rows"), defer=True)
    commits.abandon()
    assert failed.written == ["plan: plan rows"]  # what was recorded still lands
