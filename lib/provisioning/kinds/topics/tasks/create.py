"""CreateTopics, validateOnly or for real: one cluster's rows as batched, pipelined requests."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from provisioning import names, retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka import requests
from provisioning.kafka.batching import TopicRequest, batches
from provisioning.kafka.client import ClusterAdmin, LiveTopic
from provisioning.kafka.outcomes import create_outcome
from provisioning.kafka.tasks.common import (
    Result,
    Row,
    Sent,
    exception_fields,
    for_each_cluster,
    in_flight,
    result,
)


def create_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                   credentials: Mapping[str, Credentials], kafka: KafkaConf,
                   validate_only: bool, attempt: int = 0) -> Iterator[Result]:
    """CreateTopics (validateOnly or for real) for rows of cluster, topic, partitions,
    replication_factor, replica_assignment, configs and known_partitions (the count the
    validateOnly pass returned, which sizes batches when partitions were left to the broker).

    attempt: the Spark task attempt (> 0: an earlier attempt may have sent the same request).
    """
    phase = names.VALIDATE if validate_only else names.APPLY

    def work(admin: ClusterAdmin, part: list[Row], sent: Sent) -> Iterator[Result]:
        return create_batches(admin, part, validate_only, attempt, sent)

    chunk = kafka.batch_size * 4 * kafka.max_in_flight_requests
    return for_each_cluster(rows, clusters, credentials, kafka, work, phase,
                            not validate_only, chunk)


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
                   attempt: int = 0, sent: Sent | None = None) -> Iterator[Result]:
    """One cluster's rows as batched, pipelined CreateTopics requests; a result per topic.

    A topic the broker says exists comes back `already_present` (or `created`, when an
    earlier attempt of this task or a lost answer sent the same request) with the live
    topic described; the run compares it with the request
    (`kinds.topics.plan.settle_existing`).
    """
    phase = names.VALIDATE if validate_only else names.APPLY
    cluster = admin.cluster.name
    known = {r["topic"]: r["known_partitions"] for r in rows
             if r.get("known_partitions") is not None}
    k = admin.kafka

    def send(batch: list[TopicRequest]) -> list[dict[str, Any]]:
        if sent is not None:
            sent.mark(r.name for r in batch)
        return requests.create_topics(admin, batch, validate_only)

    chunks = batches((topic_request(r) for r in rows), k.batch_size,
                     k.max_partitions_per_request, k.max_records_per_request, known)
    for batch, results, exc in in_flight(chunks, send, k.max_in_flight_requests):
        if exc is not None or results is None:
            # A lost connection mid-request: a real create may or may not have happened.
            outcome = names.FAILED if validate_only else names.UNKNOWN
            for r in batch:
                yield result(cluster, r.name, phase, outcome, attempts=1,
                             **exception_fields(exc or RuntimeError("no response")))
            continue
        lost = next((r["resent_after"] for r in results if r.get("resent_after")), None)
        existing = [res["topic"] for res in results
                    if res["error_name"] == names.TOPIC_ALREADY_EXISTS and not validate_only]
        described: dict[str, tuple[str, dict[str, Any]]] = {}
        if existing:
            try:
                described = _describe_existing(admin, existing, attempt, lost)
            except Exception as exc_:  # the creates are answered; only the comparison failed
                described = {name: (names.UNKNOWN, {
                    **exception_fields(exc_),
                    "error_message": ("the broker says the topic exists; describing it to "
                                      f"compare failed: {exc_}")[:2000]}) for name in existing}
        for res in results:
            res.pop("resent_after", None)
            name = res.pop("topic")
            outcome = create_outcome(res["error_name"], validate_only)
            if name in described:
                outcome, extra = described[name]
                res.update(extra)
            yield result(cluster, name, phase, outcome, **res)


def _describe_existing(admin: ClusterAdmin, names_: Sequence[str], attempt: int,
                       lost: str | None = None) -> dict[str, tuple[str, dict[str, Any]]]:
    """The live facts of topics the broker says exist, to compare with their request.

    lost: the error that lost the answer to an earlier send of this same request (the
    resend then finds the topics that send created).
    """
    live = described_until_seen(admin, names_)
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


def described_until_seen(admin: ClusterAdmin, names_: Sequence[str]) -> dict[str, LiveTopic]:
    """Describe topics the controller says exist, for up to `kafka.request_timeout_ms`
    until each shows (`retry.READ_BACK`): right after a controller change, the broker
    answering metadata may not know a topic the controller has just created."""
    deadline = retry.deadline_in(admin.kafka.request_timeout_ms / 1000)
    found: dict[str, LiveTopic] = {}
    ask = list(dict.fromkeys(names_))

    def read() -> list[LiveTopic]:
        return admin.describe_topics(ask)

    for described in retry.poll(retry.READ_BACK, read, deadline):
        for t in described.value:
            found[t.name] = t
        ask = [n for n in ask if n in found
               and found[n].error_name == "UNKNOWN_TOPIC_OR_PARTITION"]
        if not ask:
            break
    return found
