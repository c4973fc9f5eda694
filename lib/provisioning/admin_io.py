"""The batched admin I/O as Spark tasks: requests in, one TOPIC_RESULT row per topic out.

Rows are grouped per cluster (one admin client per cluster per task) and
streamed in batches, so no stage holds more than one request's topics and
nothing is collected on the driver. Every topic handed in comes back with an
outcome, whatever the broker or the network did.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import kafka.errors as Errors
from pyspark.sql import DataFrame, Row, SparkSession

from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.errors import ClusterUnreachable
from provisioning.faults import Fault
from provisioning.kafka_admin import ClusterAdmin, TopicRequest, batches
from schemas import TOPIC_RESULT, column_names

VALIDATE, APPLY, VERIFY = "validate", "apply", "verify"

# Per-topic errors that mean "the broker refused this topic as asked": no retry helps.
_REJECTIONS = frozenset({
    "POLICY_VIOLATION",
    "INVALID_CONFIG",
    "INVALID_PARTITIONS",
    "INVALID_REPLICATION_FACTOR",
    "INVALID_REPLICA_ASSIGNMENT",
    "INVALID_TOPIC_EXCEPTION",
    "INVALID_REQUEST",
    "TOPIC_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "UNSUPPORTED_VERSION",
})
# Errors after which the request may or may not have taken effect.
_UNCERTAIN = frozenset({"REQUEST_TIMED_OUT", "NOT_CONTROLLER", "NETWORK_EXCEPTION"})


def create_outcome(error_name: str, validate_only: bool) -> str:
    """The audit outcome of one CreateTopics result."""
    if error_name == "NONE":
        return "validated" if validate_only else "created"
    if error_name == "TOPIC_ALREADY_EXISTS":
        return "already_present"
    if error_name in _REJECTIONS:
        return "rejected"
    if error_name in _UNCERTAIN and not validate_only:
        return "unknown"
    return "failed"


def delete_outcome(error_name: str) -> str:
    """The audit outcome of one DeleteTopics result."""
    if error_name == "NONE":
        return "deleted"
    if error_name in ("UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID"):
        return "already_absent"
    if error_name in ("TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"):
        return "rejected"
    if error_name in _UNCERTAIN:
        return "unknown"
    return "failed"


def _task_attempt() -> int:
    """Which attempt of the current Spark task this is (0 outside a task)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return 0 if ctx is None else ctx.attemptNumber()


def _result(cluster: str, topic: str, phase: str, outcome: str, **fields: Any
            ) -> tuple[Any, ...]:
    values: dict[str, Any] = dict.fromkeys(column_names(TOPIC_RESULT))
    values.update(cluster=cluster, topic=topic, phase=phase, outcome=outcome, **fields)
    return tuple(values[c] for c in column_names(TOPIC_RESULT))


def _exception_fields(exc: BaseException) -> dict[str, Any]:
    return {"error_code": -1, "error_name": type(exc).__name__,
            "error_message": str(exc)[:2000] or type(exc).__name__}


ClusterWork = Callable[[ClusterAdmin, list[Row]], Iterator[tuple[Any, ...]]]
ClusterFailure = Callable[[Row, BaseException], tuple[Any, ...]]


def _per_cluster(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                 credentials: Mapping[str, Credentials], kafka: KafkaConf,
                 work: ClusterWork, failed: ClusterFailure, chunk: int
                 ) -> Iterator[tuple[Any, ...]]:
    """Run `work` on each cluster's rows (sorted by cluster), a chunk at a time.

    Every row yields exactly one result: rows whose work raised, or whose
    cluster could not be reached, get `failed(row, exc)`.
    """
    topic_at = column_names(TOPIC_RESULT).index("topic")
    for name, group in itertools.groupby(rows, key=lambda r: r["cluster"]):
        remaining = iter(group)
        try:
            admin = ClusterAdmin(clusters[name], credentials.get(name), kafka).__enter__()
        except ClusterUnreachable as exc:
            for row in remaining:
                yield failed(row, exc)
            continue
        try:
            while part := list(itertools.islice(remaining, chunk)):
                done: dict[str, tuple[Any, ...]] = {}
                error: BaseException | None = None
                try:
                    for produced in work(admin, part):
                        done[produced[topic_at]] = produced
                except (Errors.KafkaError, OSError) as exc:
                    error = exc
                for row in part:
                    found = done.get(row["topic"])
                    yield found if found is not None else failed(
                        row, error or RuntimeError("the admin step returned no result"))
        finally:
            admin.__exit__(None, None, None)


def _run_on_executors(spark: SparkSession, requests: DataFrame, task: Callable[..., Any],
                      clusters: Sequence[ClusterConf]) -> DataFrame:
    # One partition per cluster of the run, so clusters go to parallel tasks. Sized from
    # the conf rather than by counting the requests' clusters: that count was one more
    # Spark job (a shuffle) per phase, and a cluster without requests is an empty task.
    n = max(1, len(clusters))
    rdd = (requests.repartition(n, "cluster").sortWithinPartitions("cluster", "topic")
           .rdd.mapPartitions(task))
    # The tasks build every row from TOPIC_RESULT's own column list: checking each value
    # against the schema again in Python was most of a 10,000-topic phase (KIP-525 gives
    # each topic ~30 config entries, each a struct to verify).
    return spark.createDataFrame(rdd, TOPIC_RESULT, verifySchema=False)


# -- CreateTopics ---------------------------------------------------------------

def send_creates(spark: SparkSession, requests: DataFrame, clusters: Sequence[ClusterConf],
                 credentials: Mapping[str, Credentials], kafka: KafkaConf,
                 validate_only: bool, fault: Fault | None = None) -> DataFrame:
    """CreateTopics for every request row (validateOnly or for real), batched per cluster.

    `requests` has cluster, topic, partitions, replication_factor,
    replica_assignment, configs and known_partitions (the count validateOnly
    returned, used to size batches when partitions were left to the broker).
    """
    task = functools.partial(
        _create_task, clusters={c.name: c for c in clusters}, credentials=dict(credentials),
        kafka=kafka, validate_only=validate_only, fault=fault)
    return _run_on_executors(spark, requests, task, clusters)


def _create_task(rows: Iterator[Row], clusters: Mapping[str, ClusterConf],
                 credentials: Mapping[str, Credentials], kafka: KafkaConf,
                 validate_only: bool, fault: Fault | None) -> Iterator[tuple[Any, ...]]:
    phase = VALIDATE if validate_only else APPLY

    def failed(row: Row, exc: BaseException) -> tuple[Any, ...]:
        return _result(row["cluster"], row["topic"], phase, "failed", attempts=0,
                       **_exception_fields(exc))

    def work(admin: ClusterAdmin, part: list[Row]) -> Iterator[tuple[Any, ...]]:
        return _create_batches(admin, part, validate_only, fault)

    chunk = kafka.batch_size * 4 * kafka.max_in_flight_requests
    return _per_cluster(rows, clusters, credentials, kafka, work, failed, chunk)


def _request(row: Row) -> TopicRequest:
    return TopicRequest(
        name=row["topic"],
        partitions=row["partitions"],
        replication_factor=row["replication_factor"],
        replica_assignment=row["replica_assignment"],
        configs=dict(row["configs"] or {}),
    )


def _create_batches(admin: ClusterAdmin, rows: list[Row], validate_only: bool,
                    fault: Fault | None = None) -> Iterator[tuple[Any, ...]]:
    phase = VALIDATE if validate_only else APPLY
    cluster = admin.cluster.name
    by_name = {r["topic"]: r for r in rows}
    known = {r["topic"]: r["known_partitions"] for r in rows
             if r["known_partitions"] is not None}
    k = admin.kafka
    requests = batches((_request(r) for r in rows), k.batch_size,
                       k.max_partitions_per_request, k.max_records_per_request, known)
    sent = _in_flight(requests, lambda batch: admin.create_topics(batch, validate_only),
                      k.max_in_flight_requests, (Errors.KafkaError, OSError))
    for batch, results, exc in sent:
        if exc is not None or results is None:
            # A lost connection mid-request: a real create may or may not have happened.
            outcome = "failed" if validate_only else "unknown"
            for r in batch:
                yield _result(cluster, r.name, phase, outcome, attempts=1,
                              **_exception_fields(exc or RuntimeError("no response")))
            continue
        if fault is not None and not validate_only:
            fault.after_create(_task_attempt())
        existing = [res["topic"] for res in results
                    if res["error_name"] == "TOPIC_ALREADY_EXISTS" and not validate_only]
        compared = _compare_existing(admin, [by_name[t] for t in existing]) if existing else {}
        if _task_attempt() > 0:
            # An earlier attempt of this task sent the same request: topics it created come
            # back TOPIC_ALREADY_EXISTS now, and matching ones were created by this run.
            compared = {name: ("created", {**extra, "error_message":
                               "created by an earlier attempt of this Spark task"})
                        if outcome == "already_present" else (outcome, extra)
                        for name, (outcome, extra) in compared.items()}
        for res in results:
            name = res.pop("topic")
            outcome = create_outcome(res["error_name"], validate_only)
            if name in compared:
                outcome, extra = compared[name]
                res.update(extra)
            yield _result(cluster, name, phase, outcome, **res)


T = TypeVar("T")
R = TypeVar("R")


def _in_flight(items: Iterable[T], send: Callable[[T], R], window: int,
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


def _compare_existing(admin: ClusterAdmin, rows: Sequence[Row]
                      ) -> dict[str, tuple[str, dict[str, Any]]]:
    """For topics the broker says exist: already_present when they match, else drift."""
    names = [r["topic"] for r in rows]
    live = {t.name: t for t in admin.describe_topics(names)}
    configs = admin.topic_configs([n for n in names if live.get(n) and not live[n].error_name])
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for row in rows:
        t = live.get(row["topic"])
        if t is None or t.error_name:
            continue
        overrides = {c["name"]: c["value"] for c in configs.get(t.name, [])
                     if c["source"] == "DYNAMIC_TOPIC_CONFIG"}
        request = _request(row)
        want_partitions = (len(request.replica_assignment) if request.replica_assignment
                           else request.partitions)
        want_rf = (len(next(iter(request.replica_assignment.values())))
                   if request.replica_assignment else request.replication_factor)
        differences = []
        if want_partitions is not None and want_partitions != t.partitions:
            differences.append(f"partitions {t.partitions}, requested {want_partitions}")
        if want_rf is not None and want_rf != t.replication_factor:
            differences.append(f"replication factor {t.replication_factor}, requested {want_rf}")
        differences += [f"config {k}={overrides.get(k)!r}, requested {v!r}"
                        for k, v in sorted(request.configs.items()) if overrides.get(k) != v]
        found[t.name] = (
            "drift" if differences else "already_present",
            {
                "topic_id": t.topic_id,
                "result_partitions": t.partitions,
                "result_replication_factor": t.replication_factor,
                "result_configs": configs.get(t.name),
                "error_message": ("the topic exists and differs: " + "; ".join(differences)
                                  if differences else "the topic exists as requested"),
            },
        )
    return found


# -- DeleteTopics ---------------------------------------------------------------

def send_deletes(spark: SparkSession, requests: DataFrame, clusters: Sequence[ClusterConf],
                 credentials: Mapping[str, Credentials], kafka: KafkaConf) -> DataFrame:
    """DeleteTopics (by topic id when known) for every row of (cluster, topic, topic_id)."""
    task = functools.partial(_delete_task, clusters={c.name: c for c in clusters},
                             credentials=dict(credentials), kafka=kafka)
    return _run_on_executors(spark, requests, task, clusters)


def _delete_task(rows: Iterator[Row], clusters: Mapping[str, ClusterConf],
                 credentials: Mapping[str, Credentials], kafka: KafkaConf
                 ) -> Iterator[tuple[Any, ...]]:
    def failed(row: Row, exc: BaseException) -> tuple[Any, ...]:
        return _result(row["cluster"], row["topic"], APPLY, "failed", attempts=0,
                       **_exception_fields(exc))

    def work(admin: ClusterAdmin, part: list[Row]) -> Iterator[tuple[Any, ...]]:
        cluster = admin.cluster.name
        try:
            results = admin.delete_topics([(r["topic"], r["topic_id"]) for r in part])
        except (Errors.KafkaError, OSError) as exc:
            for r in part:
                yield _result(cluster, r["topic"], APPLY, "unknown", attempts=1,
                              **_exception_fields(exc))
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
                outcome = "blocked"
                res["topic_id"] = live.topic_id
                res["error_message"] = (
                    f"topic {name} was recreated since the snapshot (id now {live.topic_id}, "
                    f"the plan saw {planned_ids.get(name)}); nothing was deleted")
            yield _result(cluster, name, APPLY, outcome, **res)

    return _per_cluster(rows, clusters, credentials, kafka, work, failed, kafka.batch_size)


# -- verify ---------------------------------------------------------------------

def verify(spark: SparkSession, requests: DataFrame, clusters: Sequence[ClusterConf],
           credentials: Mapping[str, Credentials], kafka: KafkaConf) -> DataFrame:
    """Wait until created topics have a leader on every partition and deleted ones are gone.

    `requests` has cluster, topic and action (CREATE or DELETE). Resolves the
    `unknown` outcomes a timeout left behind into created / deleted / failed.
    """
    task = functools.partial(_verify_task, clusters={c.name: c for c in clusters},
                             credentials=dict(credentials), kafka=kafka)
    return _run_on_executors(spark, requests, task, clusters)


def _verify_task(rows: Iterator[Row], clusters: Mapping[str, ClusterConf],
                 credentials: Mapping[str, Credentials], kafka: KafkaConf
                 ) -> Iterator[tuple[Any, ...]]:
    def failed(row: Row, exc: BaseException) -> tuple[Any, ...]:
        return _result(row["cluster"], row["topic"], VERIFY, "unknown", attempts=0,
                       **_exception_fields(exc))

    def work(admin: ClusterAdmin, part: list[Row]) -> Iterator[tuple[Any, ...]]:
        return _verify_rows(admin, part)

    return _per_cluster(rows, clusters, credentials, kafka, work, failed, kafka.batch_size)


def _verify_rows(admin: ClusterAdmin, rows: list[Row]) -> Iterator[tuple[Any, ...]]:
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
            if action == "CREATE" and t.error_name is None and t.leaderless_partitions == 0:
                pending.pop(t.name)
                yield _result(cluster, t.name, VERIFY, "created", topic_id=t.topic_id,
                              result_partitions=t.partitions,
                              result_replication_factor=t.replication_factor,
                              attempts=attempts, error_code=0, error_name="NONE")
            elif action == "DELETE" and t.error_name == "UNKNOWN_TOPIC_OR_PARTITION":
                pending.pop(t.name)
                yield _result(cluster, t.name, VERIFY, "deleted", attempts=attempts,
                              error_code=0, error_name="NONE")
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(0.25)
    for name, action in sorted(pending.items()):
        seen = last.get(name)
        missing = seen is None or seen.error_name == "UNKNOWN_TOPIC_OR_PARTITION"
        if action == "CREATE" and missing:
            outcome, message = "failed", "the topic does not exist after the create"
        elif action == "CREATE":
            outcome, message = "unknown", "not every partition has a leader yet"
        else:
            outcome, message = "unknown", "the topic still exists after the delete"
        yield _result(cluster, name, VERIFY, outcome, attempts=attempts, error_code=-1,
                      error_name="VERIFY_TIMEOUT", error_message=message,
                      topic_id=None if seen is None else seen.topic_id)

