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
from provisioning.kafka.outcomes import alter_outcome, create_outcome, delete_outcome
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
        lost = next((r["resent_after"] for r in results if r.get("resent_after")), None)
        existing = [res["topic"] for res in results
                    if res["error_name"] == names.TOPIC_ALREADY_EXISTS and not validate_only]
        live = _describe_existing(admin, existing, attempt, lost) if existing else {}
        for res in results:
            res.pop("resent_after", None)
            name = res.pop("topic")
            outcome = create_outcome(res["error_name"], validate_only)
            if name in live:
                outcome, extra = live[name]
                res.update(extra)
            yield result(cluster, name, phase, outcome, **res)


def _describe_existing(admin: ClusterAdmin, names_: Sequence[str], attempt: int,
                       lost: str | None = None) -> dict[str, tuple[str, dict[str, Any]]]:
    """The live facts of topics the broker says exist, to compare with their request.

    lost: the error that lost the answer to an earlier send of this same request (the
    resend then finds the topics that send created).
    """
    live = _described(admin, names_)
    configs = admin.topic_configs([n for n in names_ if live.get(n) and not live[n].error_name])
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for name in names_:
        t = live.get(name)
        if t is None or t.error_name:
            continue
        # An earlier attempt of this Spark task sent the same request: topics it created
        # come back TOPIC_ALREADY_EXISTS now, and matching ones were created by this run.
        if lost is not None:
            outcome, message = (names.CREATED, "created by this run: the answer to its "
                                f"CreateTopics was lost ({lost}) and the resend found it")
        elif attempt > 0:
            outcome, message = (names.CREATED, "created by an earlier attempt of this Spark task")
        else:
            # The snapshot saw no such topic: another client created it since, or the
            # cluster retried this very request when its controller changed mid-request.
            outcome, message = (names.ALREADY_PRESENT, "the topic exists as requested: it "
                                "appeared after the snapshot (another client, or this request "
                                "retried inside the cluster when its controller changed)")
        found[name] = (outcome, {
            "topic_id": t.topic_id,
            "result_partitions": t.partitions,
            "result_replication_factor": t.replication_factor,
            "result_assignment": t.replica_assignment,
            "result_configs": configs.get(name),
            "error_message": message,
        })
    return found


def _described(admin: ClusterAdmin, names_: Sequence[str]) -> dict[str, Any]:
    """Describe topics the controller says exist, for up to `kafka.request_timeout_ms`
    until each shows: right after a controller change, the broker answering metadata may
    not know a topic the controller has just created."""
    deadline = time.monotonic() + admin.kafka.request_timeout_ms / 1000
    found: dict[str, Any] = {}
    ask = list(dict.fromkeys(names_))
    delay = 0.2
    while True:
        for t in admin.describe_topics(ask):
            found[t.name] = t
        ask = [n for n in ask if n in found
               and found[n].error_name == "UNKNOWN_TOPIC_OR_PARTITION"]
        if not ask or time.monotonic() > deadline:
            return found
        time.sleep(delay)
        delay = min(delay * 2, 2.0)


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
        lost = res.pop("resent_after", None)
        outcome = delete_outcome(res["error_name"])
        if lost is not None and outcome == names.ALREADY_ABSENT:
            # The first DeleteTopics reached the broker but its answer was lost.
            outcome = names.DELETED
            res["error_message"] = (f"deleted by this run: the answer to its DeleteTopics "
                                    f"was lost ({lost}) and the resend found it gone")
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


# -- IncrementalAlterConfigs and CreatePartitions ---------------------------------

def alter_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                  credentials: Mapping[str, Credentials], kafka: KafkaConf,
                  validate_only: bool) -> Iterator[Result]:
    """The config operations and the partition increase of each ALTER row (validateOnly or
    for real), batched per cluster; one result per topic.

    Rows have cluster, topic, config_ops (CONFIG_OP list), partitions_to (the new total
    count, or null) and new_assignment (the replicas of each new partition, or null).
    """
    phase = names.VALIDATE if validate_only else names.APPLY

    def work(admin: ClusterAdmin, part: list[Row]) -> Iterator[Result]:
        return alter_batches(admin, part, validate_only)

    return for_each_cluster(rows, clusters, credentials, kafka, work,
                            failing(phase, names.FAILED), kafka.batch_size * 4)


_Answer = dict[str, Any]


def _send_all(admin: ClusterAdmin, items: Sequence[T], send: Callable[[list[T]], list[_Answer]],
              key: Callable[[T], str], failed: str) -> dict[str, _Answer]:
    """`items` in batches of `kafka.batch_size`, pipelined; an answer per key (a lost
    connection answers for its whole batch)."""
    k = admin.kafka
    chunks = (list(items[i:i + k.batch_size]) for i in range(0, len(items), k.batch_size))
    answers: dict[str, _Answer] = {}
    for batch, results, exc in in_flight(chunks, send, k.max_in_flight_requests, _IO_ERRORS):
        if exc is not None or results is None:
            fields = exception_fields(exc or RuntimeError("no response"))
            for item in batch:
                answers[key(item)] = {**fields, "attempts": 1, "_outcome": failed}
            continue
        for item, res in zip(batch, results, strict=True):
            answers[key(item)] = res
    return answers


def alter_batches(admin: ClusterAdmin, rows: list[Row], validate_only: bool
                  ) -> Iterator[Result]:
    """One cluster's ALTER rows: IncrementalAlterConfigs for the config operations, then
    CreatePartitions for the partition increases (for real: only of topics whose configs
    were changed, so a topic is never half altered by a refusal)."""
    phase = names.VALIDATE if validate_only else names.APPLY
    lost = names.FAILED if validate_only else names.UNKNOWN
    cluster = admin.cluster.name
    ops = [(r["topic"], list(r["config_ops"] or [])) for r in rows if r["config_ops"]]
    configs = _send_all(admin, ops, lambda b: requests.alter_configs(admin, b, validate_only),
                        lambda t: t[0], lost)
    config_ok = {t for t, a in configs.items() if a.get("error_name") == "NONE"}
    growing = [(r["topic"], int(r["partitions_to"]),
                None if r["new_assignment"] is None else [list(b) for b in r["new_assignment"]])
               for r in rows if r["partitions_to"] is not None
               and (validate_only or not r["config_ops"] or r["topic"] in config_ok)]
    partitions = _send_all(
        admin, growing, lambda b: requests.create_partitions(admin, b, validate_only),
        lambda t: t[0], lost)
    for r in rows:
        topic = r["topic"]
        parts = [("IncrementalAlterConfigs", configs.get(topic)),
                 ("CreatePartitions", partitions.get(topic))]
        if r["partitions_to"] is not None and topic not in partitions:
            # Not sent: its config change was refused or lost first.
            parts[1] = ("CreatePartitions", {"error_code": -1, "error_name": "NOT_SENT",
                                             "error_message": "not sent: the config change "
                                             "of this topic did not succeed"})
        yield _alter_result(cluster, topic, phase, validate_only, parts, topic in config_ok)


def _alter_result(cluster: str, topic: str, phase: str, validate_only: bool,
                  parts: list[tuple[str, _Answer | None]], configs_changed: bool) -> Result:
    answered = [(what, a) for what, a in parts if a is not None]
    bad = [(what, a) for what, a in answered if a.get("error_name") != "NONE"]
    attempts = max((int(a.get("attempts") or 1) for _, a in answered), default=1)
    if not bad:
        return result(cluster, topic, phase, alter_outcome("NONE", validate_only),
                      error_code=0, error_name="NONE", attempts=attempts)
    # The config answer comes first: a CreatePartitions left unsent follows a refused one.
    _, first = bad[0]
    outcome = first.get("_outcome") or alter_outcome(first["error_name"], validate_only)
    message = "; ".join(f"{w}: {a.get('error_name')}: {a.get('error_message') or ''}".rstrip(": ")
                        for w, a in bad)
    if configs_changed and not validate_only:
        # The configs were changed and the partitions were not: the topic is half altered.
        outcome = names.FAILED if outcome == names.REJECTED else outcome
        message = f"the configs were changed, the partitions were not: {message}"
    return result(cluster, topic, phase, outcome, error_code=first.get("error_code"),
                  error_name=first.get("error_name"), error_message=message[:2000],
                  attempts=attempts)


# -- verify ---------------------------------------------------------------------

def verify_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                   credentials: Mapping[str, Credentials], kafka: KafkaConf
                   ) -> Iterator[Result]:
    """Wait until created topics have a leader on every partition, deleted ones are gone and
    altered ones show the change.

    Rows have cluster, topic and action (CREATE, DELETE or ALTER; an ALTER row also has
    config_ops, partitions_to and before_partitions). Resolves the `unknown` outcomes a
    timeout left behind into created / deleted / altered / failed.
    """
    # One deadline per cluster for all its chunks: topics that never appear (a create the
    # broker lost) cost `verify_timeout_ms` once, not once per chunk of `batch_size`.
    deadlines: dict[str, float] = {}

    def work(admin: ClusterAdmin, part: list[Row]) -> Iterator[Result]:
        deadline = deadlines.setdefault(
            admin.cluster.name, time.monotonic() + kafka.verify_timeout_ms / 1000)
        return verify_rows(admin, part, deadline)

    return for_each_cluster(rows, clusters, credentials, kafka, work,
                            failing(names.VERIFY, names.UNKNOWN), kafka.batch_size)


def alter_shown(row: Row, topic: Any, configs: Sequence[Mapping[str, Any]] | None
                ) -> tuple[bool, bool, list[str]]:
    """Whether the live topic shows all of an ALTER row's change, any of it, and what is
    still missing (one line each)."""
    missing: list[str] = []
    shown = 0
    target = row.get("partitions_to")
    if target is not None:
        if topic.partitions is not None and topic.partitions >= target \
                and topic.leaderless_partitions == 0:
            shown += 1
        else:
            missing.append(f"partitions {topic.partitions}, expected {target}")
            if (topic.partitions or 0) > (row.get("before_partitions") or 0):
                shown += 1
    overrides = {c["name"]: c["value"] for c in configs or []
                 if c["source"] == names.TOPIC_OVERRIDE}
    for op in row.get("config_ops") or []:
        done = (overrides.get(op["name"]) == op["value"] if op["op"] == names.SET
                else op["name"] not in overrides)
        if configs is not None and done:
            shown += 1
        else:
            have = "not readable" if configs is None else overrides.get(op["name"], "not set")
            want = op["value"] if op["op"] == names.SET else "no override"
            missing.append(f"{op['name']} is {have}, expected {want}")
    return not missing, shown > 0, missing


def verify_rows(admin: ClusterAdmin, rows: list[Row], deadline: float) -> Iterator[Result]:
    """Describe the rows' topics until each is settled or `deadline` (time.monotonic())
    passes; each topic is described at least once, even past the deadline."""
    cluster = admin.cluster.name
    pending = {r["topic"]: r for r in rows}
    attempts = 0
    last: dict[str, Any] = {}
    last_configs: dict[str, list[dict[str, Any]]] = {}
    while pending:
        attempts += 1
        try:
            described = admin.describe_topics(sorted(pending))
            altered = [t.name for t in described if t.error_name is None
                       and pending.get(t.name, {}).get("action") == names.ALTER]
            if altered:
                last_configs = admin.topic_configs(altered)
        except _IO_ERRORS:
            # Only reads: a broker that went away (a controller killed mid-run) is left
            # behind by the next attempt, which asks another; until the deadline.
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.5)
            continue
        for t in described:
            last[t.name] = t
            row = pending.get(t.name)
            action = None if row is None else row["action"]
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
            elif action == names.ALTER and t.error_name is None and row is not None \
                    and alter_shown(row, t, last_configs.get(t.name))[0]:
                pending.pop(t.name)
                yield result(cluster, t.name, names.VERIFY, names.ALTERED,
                             topic_id=t.topic_id, result_partitions=t.partitions,
                             result_replication_factor=t.replication_factor,
                             result_configs=last_configs.get(t.name), attempts=attempts,
                             error_code=0, error_name="NONE")
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(0.25)
    for name, row in sorted(pending.items()):
        action = row["action"]
        seen = last.get(name)
        missing = seen is None or seen.error_name == "UNKNOWN_TOPIC_OR_PARTITION"
        if action == names.ALTER and missing:
            outcome, message = names.FAILED, "the topic does not exist any more"
        elif action == names.ALTER:
            _, any_shown, lacking = alter_shown(row, seen, last_configs.get(name))
            outcome = names.UNKNOWN if any_shown else names.FAILED
            message = (("part of the change is not visible: " if any_shown
                        else "the change did not take effect: ") + "; ".join(lacking))
        elif action == names.CREATE and missing:
            outcome, message = names.FAILED, "the topic does not exist after the create"
        elif action == names.CREATE:
            outcome, message = names.UNKNOWN, "not every partition has a leader yet"
        else:
            outcome, message = names.UNKNOWN, "the topic still exists after the delete"
        yield result(cluster, name, names.VERIFY, outcome, attempts=attempts, error_code=-1,
                     error_name="VERIFY_TIMEOUT", error_message=message,
                     topic_id=None if seen is None else seen.topic_id)
