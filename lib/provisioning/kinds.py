"""The kinds of resource the job manages, registered once: here.

A kind (topics, their replica moves, ACL bindings, client quotas) brings its own modules
in each room it touches, named after it: `conf/<kind>.py` (its conf section),
`run/<kind>/` (its slice of the run's state, its phases per command, what it reads again
under the lock, its summary), `views/<kind>.py` (its output, its saved-plan section, its
report views) and `cli/<kind>.py` (its flags, its import, its manifest files), beside what
it needs in `transforms/`, `kafka/`, `names/`, `results/` and `schemas/`. The rooms that
loop over kinds (the engine, the re-plan under the lock, the command lists, the summary,
the saved plan, the report, the conf) find a kind's part in their room with `parts(room)`:
the `KIND` object of `provisioning.<room>.<kind>`. They name no kind themselves.

Adding a kind is its modules and one line in `KINDS`. The order is the order the kinds'
phases run in within each step of a run (manifests, snapshot, plan, validate, apply): a
kind whose phases read another kind's state comes after it.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, TypeVar

KINDS: tuple[str, ...] = (
    "topics",
    "acls",
    "reassign",
    "quotas",
    "users",
)

T = TypeVar("T")


@functools.cache
def _part(room: str, kind: str) -> Any:
    module = importlib.import_module(f"provisioning.{room}.{kind}")
    found = getattr(module, "KIND", None)
    if found is None:
        raise TypeError(f"provisioning.{room}.{kind} has no KIND: every registered kind "
                        f"brings its part of the {room} room as KIND")
    return found


def parts(room: str, expected: type[T]) -> tuple[T, ...]:
    """Every registered kind's part of `room`, in registry order, each checked to be an
    `expected`."""
    found = tuple(_part(room, kind) for kind in KINDS)
    wrong = [f"provisioning.{room}.{kind}.KIND" for kind, part in zip(KINDS, found,
                                                                       strict=True)
             if not isinstance(part, expected)]
    if wrong:
        raise TypeError(f"{', '.join(wrong)}: not a {expected.__name__}")
    return found
