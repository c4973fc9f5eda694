"""What a run commits at its end (`run.commits`): the last audit commit started while the
summary is made, and a run that changed nothing whose plan's counts tell it has no
findings asks its rows nothing (pure: stand-ins for the rows and the audit log)."""

from __future__ import annotations

import threading
from typing import Any

from provisioning import names
from provisioning.run.commands import _findings_counted
from provisioning.run.commits import Commits
from provisioning.run.state import KindState, RunState


class Log:
    spark = None

    def __init__(self) -> None:
        self.written: list[str] = []
        self.gate = threading.Event()

    def write(self, phase: str, rows: Any) -> None:
        if phase != "plan":  # the intent is let through at once
            assert self.gate.wait(10), "the commit was never let through"
        self.written.append(f"{phase}: {rows.name}")


class Rows:
    def __init__(self, name: str, asked: list[str]) -> None:
        self.name = name
        self.asked = asked

    def unionByName(self, other: Rows) -> Rows:
        return Rows(f"{self.name}+{other.name}", self.asked)

    def where(self, _condition: Any) -> Rows:
        return Rows(f"findings of {self.name}", self.asked)

    def isEmpty(self) -> bool:
        self.asked.append("isEmpty")
        return False


def test_the_last_commit_lands_while_the_caller_goes_on_and_finish_waits_for_it() -> None:
    log = Log()
    commits = Commits(log)  # type: ignore[arg-type]
    commits.audit("plan", Rows("plan rows", []))  # type: ignore[arg-type]
    commits.before_kafka_changes()
    commits.audit("apply", Rows("apply rows", []))  # type: ignore[arg-type]
    commits.land(True)
    assert log.written == ["plan: plan rows"]  # held at its gate: the caller went on
    log.gate.set()
    commits.finish(True)
    assert log.written == ["plan: plan rows", "apply: apply rows"]


def test_no_findings_counted_means_no_commit_and_no_question_to_the_rows() -> None:
    asked: list[str] = []
    log = Log()
    log.gate.set()
    commits = Commits(log)  # type: ignore[arg-type]
    commits.findings = lambda rows: rows.where(None)  # type: ignore[assignment]
    commits.audit("plan", Rows("plan rows", asked))  # type: ignore[arg-type]
    commits.findings_counted = lambda: False
    commits.finish(False)
    assert (log.written, asked) == ([], [])

    commits = Commits(log)  # type: ignore[arg-type]
    commits.findings = lambda rows: rows.where(None)  # type: ignore[assignment]
    commits.audit("plan", Rows("plan rows", asked))  # type: ignore[arg-type]
    commits.findings_counted = lambda: True  # findings: written, nothing asked
    commits.finish(False)
    assert (log.written, asked) == (["plan: findings of plan rows"], [])

    commits = Commits(log)  # type: ignore[arg-type]
    commits.findings = lambda rows: rows.where(None)  # type: ignore[assignment]
    commits.audit("plan", Rows("plan rows", asked))  # type: ignore[arg-type]
    commits.finish(False)  # the counts cannot tell: the rows are asked
    assert asked == ["isEmpty"]


class Slice(KindState):
    pass


class Kind:
    def __init__(self, name: str, counts: dict[tuple[str, str, str], int]) -> None:
        self.name = name
        self.counts = counts

    def plan_counts(self, state: RunState) -> dict[tuple[str, str, str], int]:
        return self.counts


def test_findings_are_counted_from_every_kind_that_recorded_rows() -> None:
    state = RunState({"topics": Slice(), "other": Slice()})
    state.slice("topics").rows.append("rows")  # type: ignore[arg-type]
    quiet = Kind("topics", {("local", names.NOOP, names.ALREADY_PRESENT): 3})
    drifted = Kind("topics", {("local", names.DRIFT, names.DRIFTED): 1})
    # A kind without rows is not asked; one with rows and no counts cannot tell.
    silent = Kind("other", {})
    assert _findings_counted(state, [quiet, silent]) is False  # type: ignore[list-item]
    assert _findings_counted(state, [drifted, silent]) is True  # type: ignore[list-item]
    state.slice("other").rows.append("rows")  # type: ignore[arg-type]
    assert _findings_counted(state, [quiet, silent]) is None  # type: ignore[list-item]
