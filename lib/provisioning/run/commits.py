"""What a run commits to Delta, and when: what its truth needs, no more.

- Its intent: every AUDIT row recorded before the first phase that changes Kafka (the
  plan's rows and the validate rows of every kind), as one commit that lands before that
  phase starts; the records of the view it plans on (the snapshots) land before it too.
- Its results: every AUDIT row recorded from that phase on (apply, verify, and the rows of
  what a stop left unsent), as one commit once the phases are done; on a failure the run
  survives (a signal, a lost lock, an error) they are still committed before the error is
  raised. A phase whose rows a later run needs to settle what this one leaves behind if
  it is killed (`Phase.commits_at_once`: what it set that a later run removes only when
  the audit says the job set it) commits its rows at once.
- A run that changes nothing commits one audit commit: of every row when its plan has
  something to change, whatever the flags allow (a `plan` a reviewer reads; an apply
  without the flag a change needs), else of its findings only (DRIFT, blocked, rejected
  and failed rows: `names.FINDINGS`), and none when there is no finding. Its runs row
  carries the plan's counts (`run.summary`).
- What the phases before a phase that plans again under the run's lock record is tentative
  (an apply plans first without its lock): when that phase runs, the rows and the records
  are dropped and its own pass records the view it plans on; when it is skipped, they are
  the run's.

Each audit append is an idempotent Delta write (`delta.audit_log.AuditLog`), so a retried
append never writes twice. Queries the result needs beside the phases (a count, a
progress line) run on helper threads (`side`) and are waited for with the commits.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.delta.audit_log import AuditLog
from provisioning.session import helper

log = logging.getLogger(__name__)


def findings_of(rows: DataFrame) -> DataFrame:
    """The AUDIT rows that are findings and decisions (`names.FINDINGS`)."""
    return rows.where(F.col("outcome").isin(*names.FINDINGS))


def _union(rows: list[tuple[str, DataFrame]]) -> DataFrame:
    return functools.reduce(lambda a, b: a.unionByName(b), [r for _, r in rows])


class Commits:
    """The run's commits (see the module docstring)."""

    def __init__(self, audit: AuditLog) -> None:
        self.audit_log = audit
        self.kafka_changed = False
        # Set by the engine: the phase running is before one that plans again under the
        # run's lock, so what it records is tentative.
        self.tentative = False
        self._intent: list[tuple[str, DataFrame]] = []
        self._results: list[tuple[str, DataFrame]] = []
        self._before_changes: list[Future[Any]] = []  # must land before Kafka is changed
        self._others: list[Future[Any]] = []          # other commits in flight
        self._side: list[Future[Any]] = []            # side queries in flight
        self._held: list[tuple[str, Callable[[], object]]] = []  # tentative records
        self._committed = False
        self._last: Future[Any] | None = None  # the last audit commit, once started
        # Set by the engine: the phase running commits its rows at once.
        self.at_once = False
        # What a run that changes nothing keeps of its rows.
        self.findings: Callable[[DataFrame], DataFrame] = findings_of
        # Whether the run's rows hold findings, when its plan's counts tell (None: they do
        # not, and the rows are asked); set by the engine.
        self.findings_counted: Callable[[], bool | None] = lambda: None

    def _start(self, name: str, work: Callable[[], object]) -> Future[Any]:
        return helper(self.audit_log.spark, name, work)

    def audit(self, phase: str, rows: DataFrame) -> None:
        """Keep the phase's AUDIT rows for the run's intent or results commit (or commit
        them now, after the first change, for a phase that commits at once)."""
        if self.at_once and self.kafka_changed:
            self.audit_log.write(phase, rows)
            return
        (self._results if self.kafka_changed else self._intent).append((phase, rows))

    def record(self, name: str, commit: Callable[[], object]) -> None:
        """Start a commit of the run's view on a helper thread; it lands before Kafka is
        changed. A tentative view's record waits for `keep_tentative`."""
        if self.tentative:
            self._held.append((name, commit))
            return
        task = self._start(name, commit)
        self._before_changes.append(task)
        self._others.append(task)

    def keep_tentative(self) -> None:
        """The tentative view is the run's: its records start, its rows stay the intent."""
        held, self._held = self._held, []
        for name, commit in held:
            task = self._start(name, commit)
            self._before_changes.append(task)
            self._others.append(task)

    def drop_tentative(self) -> None:
        """The tentative view is replaced (the run plans again): nothing of it is written.
        Its side queries are waited for, so none of them writes the run's state late."""
        self._held, self._intent = [], []
        pending, self._side = self._side, []
        for task in pending:
            task.exception()

    def side(self, name: str, work: Callable[[], object]) -> None:
        """Run `work` (a query the run's result needs, not the next phase) on a helper
        thread; it is waited for with the run's commits, and its error raised as theirs."""
        self._side.append(self._start(name, work))

    def before_kafka_changes(self) -> None:
        """Commit the run's intent and wait for it and the view's records (raising their
        error): from here on, rows are the run's results."""
        if not self.kafka_changed and self._intent:
            phases = [p for p, _ in self._intent]
            rows, self._intent = _union(self._intent), []
            log.info("recording the run's intent (%s) before the first change",
                     "+".join(dict.fromkeys(phases)))
            self.audit_log.write("+".join(dict.fromkeys(phases)), rows)
        pending, self._before_changes = self._before_changes, []
        for task in pending:
            task.result()
        self.kafka_changed = True

    def _commit_rows(self, plan_has_changes: bool) -> None:
        """The run's last audit commit: its results, or (nothing changed Kafka) its intent,
        whole when the plan has something to do, else its findings only."""
        if self._committed:
            return
        self._committed = True
        if self.kafka_changed:
            kept, self._results = self._results, []
            if kept:
                self.audit_log.write("+".join(dict.fromkeys(p for p, _ in kept)),
                                     _union(kept))
            return
        kept, self._intent = self._intent, []
        if not kept:
            return
        rows = _union(kept)
        if not plan_has_changes:
            counted = self.findings_counted()
            if counted is False:
                return
            rows = self.findings(rows)
            if counted is None and rows.isEmpty():
                return
        self.audit_log.write("+".join(dict.fromkeys(p for p, _ in kept)), rows)

    def land(self, plan_has_changes: bool) -> None:
        """Start the run's last audit commit on a helper thread: every phase is done, and
        what the run makes meanwhile (its summary) needs no commit of its own. `finish`
        (or `abandon`) waits for it."""
        if self._last is None and not self._committed:
            self._last = self._start("audit-last",
                                     functools.partial(self._commit_rows, plan_has_changes))

    def _last_rows(self, plan_has_changes: bool) -> None:
        """The last audit commit: the one `land` started, or made now."""
        if self._last is not None:
            self._last.result()
        else:
            self._commit_rows(plan_has_changes)

    def finish(self, plan_has_changes: bool) -> None:
        """The run ended normally: its last audit commit lands, every other commit and
        side query has landed, or the first error among them is raised.

        plan_has_changes: whether the run's plan has anything to change (else a run that
        changed nothing records only its findings).
        """
        failures: list[BaseException | None] = []
        try:
            self._last_rows(plan_has_changes)
        except Exception as exc:
            failures.append(exc)
        failures += [t.exception() for t in [*self._others, *self._side]]
        self._others, self._side = [], []
        failure = next((f for f in failures if f is not None), None)
        if failure is not None:
            raise failure

    def abandon(self, plan_has_changes: bool) -> None:
        """The run failed: what it recorded still lands; wait for commits and side queries
        without raising their errors."""
        try:
            self._last_rows(plan_has_changes)
        except Exception as exc:
            log.error("the run's audit rows could not be written: %s: %s",
                      type(exc).__name__, exc)
        for task in [*self._others, *self._side]:
            task.exception()
        self._others, self._side = [], []
