"""The Kafka requests a process sends, timed by API (`--profile`).

While a recorder is on (`recording`), every admin client this package opens times each request
it sends, from its sending to its answer (or failure), and its connection's bootstrap
(`BOOTSTRAP`: the connection, ApiVersions and the first Metadata), and hands each to the
recorder as (API, start, seconds). On the driver the recorder is the run's profile; in an
admin task it is a `Tally` whose totals go back with the task's rows (`run.executors`).
Off, nothing is wrapped and nothing is timed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# The pseudo-API of a client's start: connecting and its first requests.
BOOTSTRAP = "bootstrap"

Recorder = Callable[[str, float, float], None]
_recorders: list[Recorder] = []


def recorder() -> Recorder | None:
    """The recorder on in this process, or None."""
    return _recorders[-1] if _recorders else None


@contextmanager
def recording(to: Recorder) -> Iterator[None]:
    """Inside the block, the requests of admin clients opened here are given to `to`."""
    _recorders.append(to)
    try:
        yield
    finally:
        _recorders.remove(to)


def api_name(request: Any) -> str:
    """The API a request object is of: its class name without `Request`."""
    name = type(request).__name__
    return name[:-len("Request")] if name.endswith("Request") else name


def timed(client: Any, to: Recorder) -> None:
    """Time every request `client` (a KafkaAdminClient) sends from now on: its connection
    manager's `send` (which every admin request and this job's direct sends go through)
    is wrapped on this instance only."""
    manager = getattr(client, "_manager", None)
    send = getattr(manager, "send", None)
    if manager is None or not callable(send):
        return

    def timed_send(request: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.time()
        future = send(request, *args, **kwargs)
        api = api_name(request)
        try:
            future.add_both(lambda _answer: to(api, start, time.time() - start))
        except Exception:  # not a kafka-python future: time the call itself
            to(api, start, time.time() - start)
        return future

    manager.send = timed_send


class Tally:
    """Requests by API: how many, and their seconds in all (an admin task's)."""

    def __init__(self) -> None:
        self._by_api: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def __call__(self, api: str, _start: float, seconds: float) -> None:
        with self._lock:
            entry = self._by_api.setdefault(api, [0, 0.0])
            entry[0] += 1
            entry[1] += seconds

    def rows(self) -> list[tuple[str, int, float]]:
        """(api, count, seconds) of every API, by name."""
        with self._lock:
            return [(api, int(n), float(s)) for api, (n, s) in sorted(self._by_api.items())]
