"""The admin work of one Spark task: rows in, one TOPIC_RESULT row per topic out.

Rows (mappings with at least `cluster` and `topic`) arrive sorted by cluster; each
cluster gets one admin client and its rows are handled a chunk at a time, so no
task holds more than a few requests' topics. Every row handed in comes back with
an outcome, whatever the broker or the network did. Nothing here knows Spark: the
run room feeds these functions from a DataFrame and turns their rows back into one.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import kafka.errors as Errors

from provisioning import names
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.errors import ClusterUnreachable
from provisioning.kafka import requests
from provisioning.kafka.batching import TopicRequest, batches
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.outcomes import create_outcome, delete_outcome
from schemas import TOPIC_RESULT, column_names

Row = Mapping[str, Any]
Result = tuple[Any, ...]
_RESULT_COLUMNS = column_names(TOPIC_RESULT)
_TOPIC_AT = _RESULT_COLUMNS.index("topic")
# What a lost connection or a broken response raises from the client.
_IO_ERRORS = (Errors.KafkaError, OSError)


def result(cluster: str, topic: str, phase: str, outcome: str, **fields: Any) -> Result:
    """One TOPIC_RESULT row; columns not given are null."""
    values: dict[str, Any] = dict.fromkeys(_RESULT_COLUMNS)
    values.update(cluster=cluster, topic=topic, phase=phase, outcome=outcome, **fields)
    return tuple(values[c] for c in _RESULT_COLUMNS)


def exception_fields(exc: BaseException) -> dict[str, Any]:
    """The error columns of a result for an exception instead of a broker answer."""
    return {"error_code": -1, "error_name": type(exc).__name__,
            "error_message": str(exc)[:2000] or type(exc).__name__}


ClusterWork = Callable[[ClusterAdmin, list[Row]], Iterable[Result]]
ClusterFailure = Callable[[Row, BaseException], Result]


def failing(phase: str, outcome: str) -> ClusterFailure:
    """The result of a row whose cluster could not be reached or whose work raised."""
    def failed(row: Row, exc: BaseException) -> Result:
        return result(row["cluster"], row["topic"], phase, outcome, attempts=0,
                      **exception_fields(exc))

    return failed


def for_each_cluster(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                     credentials: Mapping[str, Credentials], kafka: KafkaConf,
                     work: ClusterWork, failed: ClusterFailure, chunk: int
                     ) -> Iterator[Result]:
    """Run `work` on each cluster's rows (sorted by cluster), a chunk at a time.

    Every row yields exactly one result: rows whose work raised, or whose
    cluster could not be reached, get `failed(row, exc)`.
    """
    for name, group in itertools.groupby(rows, key=lambda r: r["cluster"]):
        remaining = iter(group)
        admin = ClusterAdmin(clusters[name], credentials.get(name), kafka)
        try:
            admin.connect()
        except ClusterUnreachable as exc:
            for row in remaining:
                yield failed(row, exc)
            continue
        with admin:
            while part := list(itertools.islice(remaining, chunk)):
                done: dict[str, Result] = {}
                error: BaseException | None = None
                try:
                    for produced in work(admin, part):
                        done[produced[_TOPIC_AT]] = produced
                except _IO_ERRORS as exc:
                    error = exc
                for row in part:
                    found = done.get(row["topic"])
                    yield found if found is not None else failed(
                        row, error or RuntimeError("the admin step returned no result"))


# -- CreateTopics ---------------------------------------------------------------

def create_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                   credentials: Mapping[str, Credentials], kafka: KafkaConf,
                   validate_only: bool, attempt: int = 0,
                   after_create: Callable[[int], None] | None = None) -> Iterator[Result]:
    """CreateTopics (validateOnly or for real) for rows of cluster, topic, partitions,
    replication_factor, replica_assignment, configs and known_partitions (the count the
    validateOnly pass returned, which sizes batches when partitions were left to the broker).

    attempt: the Spark task attempt (> 0: an earlier attempt may have sent the same request).
    after_create: called with `attempt` after each real CreateTopics answered (fault tests).
    """
    phase = names.VALIDATE if validate_only else names.APPLY

    def work(admin: ClusterAdmin, part: list[Row]) -> Iterator[Result]:
        return create_batches(admin, part, validate_only, attempt, after_create)

    chunk = kafka.batch_size * 4 * kafka.max_in_flight_requests
    return for_each_cluster(rows, clusters, credentials, kafka, work,
                            failing(phase, names.FAILED), chunk)


def topic_request(row: Row) -> TopicRequest:
    """The CreateTopics entry of a request row."""
    return TopicRequest(
        name=row["topic"],
        partitions=row["partitions"],
        replication_factor=row["replication_factor"],
        replica_assignment=row["replica_assignment"],
        configs=dict(row["configs"] or {}),
    )


def create_batches(admin: ClusterAdmin, rows: list[Row], validate_only: bool,
                   attempt: int = 0, after_create: Callable[[int], None] | None = None
                   ) -> Iterator[Result]:
    """One cluster's rows as batched, pipelined CreateTopics requests; a result per topic.

    A topic the broker says exists comes back `already_present` (or `created`, when an
    earlier attempt of this task sent the request) with the live topic described; the
    run compares it with the request (`transforms.results.settle_existing`).
    """
    phase = names.VALIDATE if validate_only else names.APPLY
    cluster = admin.cluster.name
    known = {r["topic"]: r["known_partitions"] for r in rows
             if r.get("known_partitions") is not None}
    k = admin.kafka
    chunks = batches((topic_request(r) for r in rows), k.batch_size,
                     k.max_partitions_per_request, k.max_records_per_request, known)
    sent = in_flight(chunks, lambda batch: requests.create_topics(admin, batch, validate_only),
                     k.max_in_flight_requests, _IO_ERRORS)
    for batch, results, exc in sent:
        if exc is not None or results is None:
            # A lost connection mid-request: a real create may or may not have happened.
            outcome = names.FAILED if validate_only else names.UNKNOWN
            for r in batch:
                yield result(cluster, r.name, phase, outcome, attempts=1,
                             **exception_fields(exc or RuntimeError("no response")))
            continue
        if after_create is not None and not validate_only:
            after_create(attempt)
        existing = [res["topic"] for res in results
                    if res["error_name"] == names.TOPIC_ALREADY_EXISTS and not validate_only]
        live = _describe_existing(admin, existing, attempt) if existing else {}
        for res in results:
            name = res.pop("topic")
            outcome = create_outcome(res["error_name"], validate_only)
            if name in live:
                outcome, extra = live[name]
                res.update(extra)
            yield result(cluster, name, phase, outcome, **res)


def _describe_existing(admin: ClusterAdmin, names_: Sequence[str], attempt: int
                       ) -> dict[str, tuple[str, dict[str, Any]]]:
    """The live facts of topics the broker says exist, to compare with their request."""
    live = {t.name: t for t in admin.describe_topics(names_)}
    configs = admin.topic_configs([n for n in names_ if live.get(n) and not live[n].error_name])
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for name in names_:
        t = live.get(name)
        if t is None or t.error_name:
            continue
        # An earlier attempt of this Spark task sent the same request: topics it created
        # come back TOPIC_ALREADY_EXISTS now, and matching ones were created by this run.
        outcome, message = ((names.CREATED, "created by an earlier attempt of this Spark task")
                            if attempt > 0 else
                            (names.ALREADY_PRESENT, "the topic exists as requested"))
        found[name] = (outcome, {
            "topic_id": t.topic_id,
            "result_partitions": t.partitions,
            "result_replication_factor": t.replication_factor,
            "result_assignment": t.replica_assignment,
            "result_configs": configs.get(name),
            "error_message": message,
        })
    return found


T = TypeVar("T")
R = TypeVar("R")


def in_flight(items: Iterable[T], send: Callable[[T], R], window: int,
              expected: tuple[type[BaseException], ...]
              ) -> Iterator[tuple[T, R | None, BaseException | None]]:
    """(item, send(item), None) or (item, None, error) for each item, in order, with up to
    `window` sends running at once (KRaft commits one request's records while the next is
    on its way: measured faster than one at a time, see BENCHMARKS.md).

    Errors of the `expected` types are returned with their item; any other propagates
    once the sends already started have finished.
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
    with ThreadPoolExecutor(window, thread_name_prefix="create-topics") as pool:
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


# -- DeleteTopics ---------------------------------------------------------------

def delete_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                   credentials: Mapping[str, Credentials], kafka: KafkaConf
                   ) -> Iterator[Result]:
    """DeleteTopics (by topic id when known) for rows of cluster, topic and topic_id."""
    return for_each_cluster(rows, clusters, credentials, kafka, _delete_part,
                            failing(names.APPLY, names.FAILED), kafka.batch_size)


def _delete_part(admin: ClusterAdmin, part: list[Row]) -> Iterator[Result]:
    cluster = admin.cluster.name
    try:
        results = requests.delete_topics(admin, [(r["topic"], r["topic_id"]) for r in part])
    except _IO_ERRORS as exc:
        for r in part:
            yield result(cluster, r["topic"], names.APPLY, names.UNKNOWN, attempts=1,
                         **exception_fields(exc))
        return
    planned_ids = {r["topic"]: r["topic_id"] for r in part}
    gone_ids = [res["topic"] for res in results if res["error_name"] == "UNKNOWN_TOPIC_ID"]
    now_live = {t.name: t for t in admin.describe_topics(gone_ids)} if gone_ids else {}
    for res in results:
        name = res.pop("topic")
        outcome = delete_outcome(res["error_name"])
        live = now_live.get(name)
        if live is not None and live.error_name is None:
            # Deleting by id refused a topic recreated under the same name since the
            # snapshot: the new topic is not the one the plan judged, so it stays.
            outcome = names.BLOCKED
            res["topic_id"] = live.topic_id
            res["error_message"] = (
                f"topic {name} was recreated since the snapshot (id now {live.topic_id}, "
                f"the plan saw {planned_ids.get(name)}); nothing was deleted")
        yield result(cluster, name, names.APPLY, outcome, **res)


# -- verify ---------------------------------------------------------------------

def verify_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                   credentials: Mapping[str, Credentials], kafka: KafkaConf
                   ) -> Iterator[Result]:
    """Wait until created topics have a leader on every partition and deleted ones are gone.

    Rows have cluster, topic and action (CREATE or DELETE). Resolves the `unknown`
    outcomes a timeout left behind into created / deleted / failed.
    """
    return for_each_cluster(rows, clusters, credentials, kafka, verify_rows,
                            failing(names.VERIFY, names.UNKNOWN), kafka.batch_size)


def verify_rows(admin: ClusterAdmin, rows: list[Row]) -> Iterator[Result]:
    """Describe the rows' topics until each is settled or `kafka.verify_timeout_ms` passes."""
    cluster = admin.cluster.name
    pending = {r["topic"]: r["action"] for r in rows}
    deadline = time.monotonic() + admin.kafka.verify_timeout_ms / 1000
    attempts = 0
    last: dict[str, Any] = {}
    while pending:
        attempts += 1
        for t in admin.describe_topics(sorted(pending)):
            last[t.name] = t
            action = pending.get(t.name)
            if action == names.CREATE and t.error_name is None \
                    and t.leaderless_partitions == 0:
                pending.pop(t.name)
                yield result(cluster, t.name, names.VERIFY, names.CREATED,
                             topic_id=t.topic_id, result_partitions=t.partitions,
                             result_replication_factor=t.replication_factor,
                             attempts=attempts, error_code=0, error_name="NONE")
            elif action == names.DELETE and t.error_name == "UNKNOWN_TOPIC_OR_PARTITION":
                pending.pop(t.name)
                yield result(cluster, t.name, names.VERIFY, names.DELETED, attempts=attempts,
                             error_code=0, error_name="NONE")
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(0.25)
    for name, action in sorted(pending.items()):
        seen = last.get(name)
        missing = seen is None or seen.error_name == "UNKNOWN_TOPIC_OR_PARTITION"
        if action == names.CREATE and missing:
            outcome, message = names.FAILED, "the topic does not exist after the create"
        elif action == names.CREATE:
            outcome, message = names.UNKNOWN, "not every partition has a leader yet"
        else:
            outcome, message = names.UNKNOWN, "the topic still exists after the delete"
        yield result(cluster, name, names.VERIFY, outcome, attempts=attempts, error_code=-1,
                     error_name="VERIFY_TIMEOUT", error_message=message,
                     topic_id=None if seen is None else seen.topic_id)
