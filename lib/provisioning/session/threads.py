"""Helper threads of a run: work that goes on beside the main thread (commits, the lock, side
queries), each result a `concurrent.futures.Future`.

A new thread starts without Spark operation tags, in both modes; a helper takes over the
caller's tags, all but the run tag (cancelling a run never interrupts a commit).
Helpers are daemon threads: a process that must end (a second signal) never waits for one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from provisioning.session.tags import RUN_TAG

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")


def helper(spark: SparkSession | None, name: str, fn: Callable[[], T]) -> Future[T]:
    """Run `fn` on a thread of its own, carrying the caller's Spark tags (but the run tag);
    its result or error is the returned future's."""
    future: Future[T] = Future()
    future.set_running_or_notify_cancel()
    tags = (sorted(t for t in spark.getTags() if not t.startswith(RUN_TAG))
            if spark is not None else [])

    def target() -> None:
        try:
            for tag in tags:
                spark.addTag(tag)  # type: ignore[union-attr]
            result = fn()
        except BaseException as exc:  # the future hands it to whoever asks
            future.set_exception(exc)
        else:
            future.set_result(result)

    threading.Thread(target=target, name=name, daemon=True).start()
    return future


def succeeded(future: Future[Any]) -> bool:
    """Wait for `future`; True when it returned (its error, if any, is not raised here)."""
    return future.exception() is None
