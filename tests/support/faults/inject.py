"""The fault points of sitecustomize.py, installed by wrapping the job's functions in this
process. A wrapper adds a real failure (a signal, an exception, a pause) and otherwise
runs the job's own code unchanged."""

from __future__ import annotations

import functools
import os
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

_PAUSE_LIMIT_SECONDS = 300
_STATE = {"created": False, "describe_failed": False}


def _pause(path: str) -> None:
    go = Path(path)
    Path(f"{go}.waiting").touch()
    deadline = time.monotonic() + _PAUSE_LIMIT_SECONDS
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


def _attempt() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return 0 if ctx is None else ctx.attemptNumber()


def _wrap(owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]
          ) -> None:
    original = getattr(owner, name)
    setattr(owner, name, functools.wraps(original)(make(original)))


def install(faults: Sequence[str]) -> None:
    """Install each `point[:argument]` of `faults` (sitecustomize.py lists them)."""
    for fault in faults:
        point, _, argument = fault.partition(":")
        _POINTS[point](argument)


def _after(act: Callable[[], None]) -> Callable[[str], None]:
    """A fault point that runs `act` after each real (not validateOnly) request of the
    function of `provisioning.kafka.requests` its argument names (create_topics,
    delete_topics, create_partitions) was answered."""

    def install_it(request: str) -> None:
        from provisioning.kafka import requests

        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            def send(admin: Any, batch: Any, *a: Any, **k: Any) -> Any:
                answer = original(admin, batch, *a, **k)
                validate_only = k.get("validate_only", a[0] if a else False)
                if not validate_only:
                    _STATE["created"] = True
                    act()
                return answer
            return send

        _wrap(requests, request or "create_topics", make)

    return install_it


def _kill_first_attempt() -> None:
    # An exception would not fail the task (its rows would be recorded `unknown`): a task
    # fails, and Spark retries it, when its Python worker dies.
    if _attempt() == 0:
        _kill_worker()


def _kill_worker() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _describe_fails(_argument: str) -> None:
    _after(lambda: None)("create_topics")
    import kafka.errors as Errors

    from provisioning.kafka.client import ClusterAdmin

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def describe_topics(self: Any, *a: Any, **k: Any) -> Any:
            if _STATE["created"] and not _STATE["describe_failed"]:
                _STATE["describe_failed"] = True
                raise Errors.KafkaConnectionError("injected fault: connection lost")
            return original(self, *a, **k)
        return describe_topics

    _wrap(ClusterAdmin, "describe_topics", make)


def _kill_before_audit(phase: str) -> None:
    from provisioning.delta.audit_log import AuditLog

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def write(self: Any, written: str, rows: Any) -> None:
            # A commit names the phases whose rows it holds ("apply+verify").
            if phase in written.split("+"):
                os.kill(os.getpid(), signal.SIGKILL)
            original(self, written, rows)
        return write

    _wrap(AuditLog, "write", make)


def _pause_before_changes(path: str) -> None:
    from provisioning.run.commits import Commits

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def before_kafka_changes(self: Any) -> None:
            original(self)
            _pause(path)
        return before_kafka_changes

    _wrap(Commits, "before_kafka_changes", make)


def _pause_between_waves(path: str) -> None:
    from provisioning.kinds.topics import changes as phases

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def fence(*a: Any, **k: Any) -> None:
            if not k.get("read_back"):
                _pause(path)
            original(*a, **k)
        return fence

    _wrap(phases, "fence", make)


def _pause_in_snapshot(path: str) -> None:
    from provisioning.kinds.topics import phases

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def snapshot(*a: Any, **k: Any) -> Any:
            _pause(path)
            return original(*a, **k)
        return snapshot

    _wrap(phases, "snapshot", make)


def _pause_before_lock(path: str) -> None:
    from provisioning.delta.lock import RunLock

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def acquire(self: Any) -> None:
            _pause(path)
            original(self)
        return acquire

    _wrap(RunLock, "acquire", make)


def _pause_after_phases(path: str) -> None:
    from provisioning.run.commits import Commits

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def finish(self: Any, *args: Any) -> None:
            _pause(path)
            original(self, *args)
        return finish

    _wrap(Commits, "finish", make)


_POINTS: dict[str, Callable[[str], None]] = {
    "kill-driver-before-audit": _kill_before_audit,
    "fail-task-after": _after(_kill_first_attempt),
    "kill-worker-after": _after(_kill_worker),
    "describe-fails-after-create": _describe_fails,
    "pause-before-changes": _pause_before_changes,
    "pause-between-waves": _pause_between_waves,
    "pause-in-snapshot": _pause_in_snapshot,
    "pause-before-lock": _pause_before_lock,
    "pause-after-phases": _pause_after_phases,
}
