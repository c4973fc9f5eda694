"""Fault injection points for the reliability suite (off unless the job is given a fault).

The job reads PROVISIONING_FAULT and passes it down explicitly; nothing in the
library looks at the environment. Each point makes a real failure happen at a
precise moment: the driver process killed, or a Spark task failing after its
Kafka request succeeded.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

KILL_BEFORE_AUDIT = "kill-driver-before-audit"
FAIL_TASK_AFTER_CREATE = "fail-task-after-create"
_KNOWN = (KILL_BEFORE_AUDIT, FAIL_TASK_AFTER_CREATE)


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
