"""A request asked again: a broker that answers with a retriable error (a group coordinator
still loading its offsets, a leader being elected) is asked again until a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import kafka.errors as Errors

R = TypeVar("R")

# Seconds between two asks of a request the broker answered with a retriable error.
SETTLE_PAUSE_S = 0.25


def settled(call: Callable[[], R], deadline: float,
            only: tuple[type[Errors.KafkaError], ...] | None = None) -> R:
    """`call`'s answer, asked again while it raises a retriable KafkaError (with `only`:
    one of those), until `deadline` (time.monotonic()): no call starts after it, and the
    last error is raised."""
    while True:
        try:
            return call()
        except Errors.KafkaError as exc:
            again = isinstance(exc, only) if only is not None else exc.retriable
            if not again or time.monotonic() + SETTLE_PAUSE_S >= deadline:
                raise
        time.sleep(SETTLE_PAUSE_S)
