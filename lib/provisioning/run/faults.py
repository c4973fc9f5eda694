"""Fault injection points for the reliability suite (off unless the job is given a fault).

The job reads PROVISIONING_FAULT and passes it down explicitly; nothing in the
library looks at the environment. Each point makes a real failure happen at a
precise moment: the driver process killed, or a Spark task failing after its
Kafka request succeeded; or a pause before a phase that changes Kafka, while the
test changes something real underneath the run (takes its lock over).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

KILL_BEFORE_AUDIT = "kill-driver-before-audit"
FAIL_TASK_AFTER_CREATE = "fail-task-after-create"
PAUSE_BEFORE_CHANGES = "pause-before-changes"
_KNOWN = (KILL_BEFORE_AUDIT, FAIL_TASK_AFTER_CREATE, PAUSE_BEFORE_CHANGES)
_PAUSE_LIMIT_SECONDS = 300


@dataclass(frozen=True)
class Fault:
    """`point` or `point:argument`, e.g. kill-driver-before-audit:apply."""

    point: str
    argument: str = ""

    @classmethod
    def parse(cls, text: str | None) -> Fault | None:
        if not text:
            return None
        point, _, argument = text.partition(":")
        if point not in _KNOWN:
            raise ValueError(f"unknown fault point {point!r} (known: {', '.join(_KNOWN)})")
        return cls(point, argument)

    def before_audit(self, phase: str) -> None:
        """Kill this process (SIGKILL: no cleanup, no finally) before `phase` is audited."""
        if self.point == KILL_BEFORE_AUDIT and self.argument == phase:
            os.kill(os.getpid(), signal.SIGKILL)

    def after_create(self, attempt: int) -> None:
        """Fail the Spark task's first attempt after its CreateTopics succeeded."""
        if self.point == FAIL_TASK_AFTER_CREATE and attempt == 0:
            raise RuntimeError("injected fault: task fails after CreateTopics succeeded")

    def before_changes(self) -> None:
        """pause-before-changes:PATH: before the first phase that changes Kafka, create
        PATH.waiting and wait (at most five minutes) until PATH exists."""
        if self.point != PAUSE_BEFORE_CHANGES:
            return
        go = Path(self.argument)
        Path(f"{go}.waiting").touch()
        deadline = time.monotonic() + _PAUSE_LIMIT_SECONDS
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
