"""What every admin task shares: result rows, the one per-row catch, pipelined sends.

Rows (mappings with at least `cluster` and `topic`) arrive sorted by cluster; each cluster
gets one admin client and its rows are handled a chunk at a time, so no task holds more
than a few requests' topics. Every row handed in comes back with exactly one result,
whatever the broker, the network or the task's own code did: `for_each_cluster` is the one
place that turns an error into rows. A row whose request may have reached Kafka is never
`failed` by an error on this side: it is `unknown`, and `verify` settles it.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import kafka.errors as Errors

from provisioning import names, retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.errors import ClusterUnreachable
from provisioning.kafka.client import ClusterAdmin
from schemas import TOPIC_RESULT, column_names

log = logging.getLogger(__name__)

Row = Mapping[str, Any]
Result = tuple[Any, ...]
_RESULT_COLUMNS = column_names(TOPIC_RESULT)
_TOPIC_AT = _RESULT_COLUMNS.index("topic")
# What a lost connection or a broken response raises from the client.
IO_ERRORS = (Errors.KafkaError, OSError)


def result(cluster: str, topic: str, phase: str, outcome: str, **fields: Any) -> Result:
    """One TOPIC_RESULT row; columns not given are null."""
    values: dict[str, Any] = dict.fromkeys(_RESULT_COLUMNS)
    values.update(cluster=cluster, topic=topic, phase=phase, outcome=outcome, **fields)
    return tuple(values[c] for c in _RESULT_COLUMNS)


def exception_fields(exc: BaseException) -> dict[str, Any]:
    """The error columns of a result for an exception instead of a broker answer."""
    return {"error_code": -1, "error_name": type(exc).__name__,
            "error_message": str(exc)[:2000] or type(exc).__name__}


class Sent:
    """The topics (or other items, by their key) of one chunk for which a request that may
    change Kafka has started (marked by the sending thread, just before the request)."""

    def __init__(self) -> None:
        self._topics: set[Hashable] = set()
        self._lock = threading.Lock()

    def mark(self, topics: Iterable[Hashable]) -> None:
        with self._lock:
            self._topics.update(topics)

    def __contains__(self, topic: object) -> bool:
        with self._lock:
            return topic in self._topics


ClusterWork = Callable[[ClusterAdmin, list[Row], Sent], Iterable[Result]]


@dataclass(frozen=True)
class Shape:
    """What a kind of task handles: how a request row and a result row name their item
    (a topic, or another kind's subject), and the result row for a request row the work left
    unanswered, from its phase, outcome and error columns."""

    key: Callable[[Row], Hashable]
    result_key: Callable[[Result], Hashable]
    result: Callable[[Row, str, str, dict[str, Any]], Result]


TOPICS = Shape(
    key=lambda row: row["topic"],
    result_key=lambda produced: produced[_TOPIC_AT],
    result=lambda row, phase, outcome, fields: result(row["cluster"], row["topic"], phase,
                                                      outcome, **fields),
)


@dataclass(frozen=True)
class KeyedResults:
    """The result rows of a kind whose items are named by `key` columns (another kind's
    result table, its `columns` in order): `result` makes one, `shape` is what
    `for_each_cluster` takes."""

    columns: tuple[str, ...]
    key: tuple[str, ...]

    def key_of(self, row: Row) -> tuple[Any, ...]:
        """The item a row (request or result, by column name) is about, as a tuple."""
        return tuple(row[c] for c in self.key)

    def result(self, row: Row, phase: str, outcome: str, **fields: Any) -> Result:
        """One result row for the item of `row`; columns not given are null."""
        values: dict[str, Any] = dict.fromkeys(self.columns)
        values.update({c: row[c] for c in self.key})
        values.update(phase=phase, outcome=outcome, **fields)
        return tuple(values[c] for c in self.columns)

    @property
    def shape(self) -> Shape:
        at = [self.columns.index(c) for c in self.key]
        return Shape(key=self.key_of,
                     result_key=lambda produced: tuple(produced[i] for i in at),
                     result=lambda row, phase, outcome, fields: self.result(
                         row, phase, outcome, **fields))

    def for_each_cluster(self, rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                         credentials: Mapping[str, Credentials], kafka: KafkaConf,
                         work: ClusterWork, phase: str, changes_kafka: bool,
                         chunk: int) -> Iterator[Result]:
        """`for_each_cluster` over rows of this kind: one of its result rows per row."""
        return for_each_cluster(rows, clusters, credentials, kafka, work, phase,
                                changes_kafka, chunk, self.shape)

    @staticmethod
    def until_deadline(kafka: KafkaConf,
                       verify: Callable[[ClusterAdmin, list[Row], float], Iterator[Result]]
                       ) -> Callable[[ClusterAdmin, list[Row], Sent], Iterator[Result]]:
        """`verify(admin, part, deadline)` over each chunk, with one deadline per cluster
        for all its chunks: `kafka.verify_timeout_ms` from its first."""
        deadlines: dict[str, float] = {}

        def work(admin: ClusterAdmin, part: list[Row], _sent: Sent) -> Iterator[Result]:
            deadline = deadlines.setdefault(
                admin.cluster.name, retry.deadline_in(kafka.verify_timeout_ms / 1000))
            return verify(admin, part, deadline)

        return work


def for_each_cluster(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                     credentials: Mapping[str, Credentials], kafka: KafkaConf,
                     work: ClusterWork, phase: str, changes_kafka: bool, chunk: int,
                     shape: Shape = TOPICS) -> Iterator[Result]:
    """Run `work` on each cluster's rows (sorted by cluster), a chunk at a time; every row
    yields exactly one result.

    A row without a result of its own (its cluster was unreachable, or its chunk's work
    raised) is `unknown` when a request that changes Kafka may have been sent for it
    (`changes_kafka` and marked in `Sent`), otherwise `failed`, with the error and
    `attempts` 0 (`unknown` in `verify`, which only reads).
    shape: the kind of item the rows hold (TOPICS: TOPIC_RESULT rows, keyed by topic).
    """
    for name, group in itertools.groupby(rows, key=lambda r: r["cluster"]):
        remaining = iter(group)
        admin = ClusterAdmin(clusters[name], credentials.get(name), kafka)
        try:
            admin.connect()
        except ClusterUnreachable as exc:
            for row in remaining:
                yield _unsettled(row, phase, exc, sent=False,
                                 reads_only=phase == names.VERIFY, shape=shape)
            continue
        with admin:
            while part := list(itertools.islice(remaining, chunk)):
                done: dict[Hashable, Result] = {}
                sent = Sent()
                error: BaseException | None = None
                try:
                    for produced in work(admin, part, sent):
                        done[shape.result_key(produced)] = produced
                except Exception as exc:  # the one per-row catch: every row gets a status
                    log.warning("cluster %s: %s while %s %d topic(s): %s", name,
                                type(exc).__name__, phase, len(part), str(exc)[:300])
                    error = exc
                for row in part:
                    found = done.get(shape.key(row))
                    yield found if found is not None else _unsettled(
                        row, phase, error or RuntimeError("the admin step returned no result"),
                        sent=changes_kafka and shape.key(row) in sent,
                        reads_only=phase == names.VERIFY, shape=shape)


def _unsettled(row: Row, phase: str, exc: BaseException, sent: bool,
               reads_only: bool, shape: Shape = TOPICS) -> Result:
    if sent or reads_only:
        return shape.result(row, phase, names.UNKNOWN,
                            {"attempts": 1, **exception_fields(exc)})
    fields = exception_fields(exc)
    fields["error_message"] = f"not sent: {fields['error_message']}"[:2000]
    return shape.result(row, phase, names.FAILED, {"attempts": 0, **fields})


T = TypeVar("T")
R = TypeVar("R")


def in_flight(items: Iterable[T], send: Callable[[T], R], window: int,
              expected: tuple[type[BaseException], ...] = IO_ERRORS
              ) -> Iterator[tuple[T, R | None, BaseException | None]]:
    """(item, send(item), None) or (item, None, error) for each item, in order, with up to
    `window` sends running at once (KRaft commits one request's records while the next is
    on its way: measured faster than one at a time, see BENCHMARKS.md).

    Errors of the `expected` types are returned with their item; any other propagates
    once the sends already started have finished. Sends queued but not started when the
    caller stops are never started.
    """
    if window <= 1:
        for item in items:
            try:
                yield item, send(item), None
            except expected as exc:
                yield item, None, exc
        return
    pending: list[tuple[T, Future[R]]] = []
    source = iter(items)
    pool = ThreadPoolExecutor(window, thread_name_prefix="admin-requests")
    try:
        while True:
            while len(pending) < window:
                queued = next(source, None)
                if queued is None:
                    break
                pending.append((queued, pool.submit(send, queued)))
            if not pending:
                return
            item, future = pending.pop(0)
            try:
                yield item, future.result(), None
            except expected as exc:
                yield item, None, exc
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
