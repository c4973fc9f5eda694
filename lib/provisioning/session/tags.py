"""Job tags and signals: every Spark operation of a run carries tags naming its command and
phase, and SIGTERM / SIGINT stop a run at its next safe point.

Only APIs that both modes support: job labels are operation tags (`addTag`), cancellation
is `interruptTag`.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from provisioning.errors import RunCancelled

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


def _tag(text: str) -> str:
    """An operation tag of `text`: Spark refuses empty tags and commas."""
    return (text.replace(",", ";").strip() or "topic-provisioning")[:200]


@contextmanager
def job_label(spark: SparkSession, text: str) -> Iterator[None]:
    """Tag the Spark operations started inside the block with `text` (the phase), in both
    modes: the Spark UI lists a job's tags, and `interruptTag` cancels them."""
    tag = _tag(text)
    had = tag in spark.getTags()
    spark.addTag(tag)
    try:
        yield
    finally:
        if not had:
            spark.removeTag(tag)


# The tag of a run's own operations (its queries and admin tasks, on the main thread):
# helper threads do not carry it, so cancelling the run never interrupts a commit.
RUN_TAG = "topic-provisioning run "


# The tag of one idempotent append's operations (`delta.idempotent.append_once`): what it
# interrupts, after an error, before it fences the table.
APPEND_TAG = "topic-provisioning append "


def run_tag(run_id: str) -> str:
    return f"{RUN_TAG}{run_id}"


class Stop:
    """What SIGTERM or SIGINT asked of a run.

    The first signal only records itself (`requested`): the run starts no new request or
    Spark job from its next safe point on (`check`), records what was done and what was
    never sent, gives its lock back and exits 6. A second signal interrupts the run's own
    Spark operations by tag at once (`interrupt`, set once the run has a session) and
    raises RunCancelled wherever the main thread is.
    """

    def __init__(self) -> None:
        self.signal: str | None = None
        self.interrupt: Callable[[], None] | None = None
        self._event = threading.Event()

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def request(self, name: str) -> None:
        self.signal = self.signal or name
        self._event.set()

    def error(self) -> RunCancelled:
        return RunCancelled(
            f"cancelled by {self.signal}: the run stopped at a safe point; what it did and "
            "what it never sent are recorded, and a rerun converges")

    def check(self) -> None:
        """A safe point: raise RunCancelled when a signal asked the run to stop."""
        if self.requested:
            raise self.error()

    def tag_operations(self, spark: SparkSession, run_id: str) -> AbstractContextManager[None]:
        """Tag the run's own Spark operations (on this thread) with its run tag, which a
        second signal interrupts."""
        tag = run_tag(run_id)
        self.interrupt = lambda: _interrupt(spark, tag)
        return job_label(spark, tag)


@contextmanager
def handling_signals(stop: Stop) -> Iterator[Stop]:
    """Inside the block SIGTERM and SIGINT act on `stop` as its docstring says. Only the main
    thread can take signals: elsewhere the block changes nothing (`stop` is never
    requested)."""
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    signals = (signal.SIGTERM, signal.SIGINT)
    hard: list[str] = []

    def handler(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        if not stop.requested:
            stop.request(name)
            log.warning("%s received: the run stops at its next safe point (requests in "
                        "flight complete or time out, what they did is recorded, the lock "
                        "is given back); a second signal interrupts it at once", name)
            return
        for s in signals:
            signal.signal(s, signal.SIG_DFL if s == signal.SIGTERM
                          else signal.default_int_handler)
        hard.append(name)
        if stop.interrupt is not None:
            threading.Thread(target=stop.interrupt, name="interrupt", daemon=True).start()
        raise RunCancelled(f"cancelled by a second {name}: the run's Spark operations were "
                           "interrupted; requests then in flight may have no audit row, and "
                           "the next run's snapshot sees what they did")

    previous = {s: signal.signal(s, handler) for s in signals}
    try:
        yield stop
    except RunCancelled:
        raise
    except BaseException as exc:
        # Raised inside a call to Spark, the interruption may reach here as that call's own
        # error (py4j wraps what interrupts its socket read).
        if hard:
            raise RunCancelled(f"cancelled by a second {hard[0]}: the run's Spark "
                               "operations were interrupted") from exc
        raise
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _interrupt(spark: SparkSession, tag: str) -> None:
    try:
        interrupted = spark.interruptTag(_tag(tag))
    except Exception as exc:  # the run is stopping anyway; its operations may be done
        log.warning("could not interrupt the run's Spark operations: %s", type(exc).__name__)
        return
    log.info("interrupted %d Spark operation(s) of the run", len(interrupted))
