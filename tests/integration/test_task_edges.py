"""The edges of the Kafka room against a real broker: every row gets one status whatever the
task's work raised, and a request resent by a retried Spark task is recognised for what the
first attempt did (alters and deletes, as for creates)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewPartitions

from provisioning.conf import ClusterConf, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.tasks.common import Sent, for_each_cluster, in_flight, result
from provisioning.kinds.topics.tasks.alter import alter_batches
from provisioning.kinds.topics.tasks.delete import delete_part

pytestmark = [pytest.mark.integration]

KAFKA = KafkaConf(request_timeout_ms=15000, operation_timeout_ms=15000)


def _cluster(kafka: Any) -> ClusterConf:
    return ClusterConf(name="local", bootstrap_servers=kafka.bootstrap_servers)


def test_a_row_whose_request_may_have_been_sent_is_unknown_never_failed(kafka: Any) -> None:
    from schemas import TOPIC_RESULT, column_names

    at = {c: i for i, c in enumerate(column_names(TOPIC_RESULT))}
    rows = [{"cluster": "local", "topic": t} for t in ("edge.a", "edge.b", "edge.c")]

    def work(admin: ClusterAdmin, part: list[dict[str, Any]], sent: Sent
             ) -> Iterator[tuple[Any, ...]]:
        sent.mark(["edge.a", "edge.b"])
        yield result("local", "edge.a", "apply", "created", attempts=1)
        raise RuntimeError("the task's own code failed after its request")

    def statuses(phase: str, changes_kafka: bool) -> list[tuple[Any, ...]]:
        out = for_each_cluster(rows, {"local": _cluster(kafka)}, {}, KAFKA, work, phase,
                               changes_kafka, chunk=10)
        return [(r[at["topic"]], r[at["outcome"]], r[at["error_name"]], r[at["attempts"]],
                 r[at["error_message"]]) for r in out]

    failure = "the task's own code failed after its request"
    assert statuses("apply", True) == [
        ("edge.a", "created", None, 1, None),
        ("edge.b", "unknown", "RuntimeError", 1, failure),
        ("edge.c", "failed", "RuntimeError", 0, f"not sent: {failure}")]
    # validateOnly changes nothing: nothing it sent can be unknown
    assert [s[:2] for s in statuses("validate", False)] == [
        ("edge.a", "created"), ("edge.b", "failed"), ("edge.c", "failed")]
    # verify only reads: what it could not read is unknown
    assert [s[:2] for s in statuses("verify", False)] == [
        ("edge.a", "created"), ("edge.b", "unknown"), ("edge.c", "unknown")]


def test_sends_not_started_when_the_caller_stops_are_never_started() -> None:
    started: list[int] = []
    lock = threading.Lock()

    def send(i: int) -> int:
        with lock:
            started.append(i)
        return i

    sends = in_flight(range(100), send, window=3)
    assert next(sends)[0] == 0
    sends.close()  # the caller stops: what was in flight finishes, nothing more is sent
    assert sorted(started) == [0, 1, 2]


@pytest.fixture
def admin(kafka: Any) -> Iterator[ClusterAdmin]:
    with ClusterAdmin(_cluster(kafka), None, KAFKA) as connected:
        yield connected


def test_a_retried_partition_increase_the_first_attempt_made_is_altered(
        kafka: Any, admin: ClusterAdmin) -> None:
    client = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        client.create_topics({"edge.grow": {"num_partitions": 1, "replication_factor": 1}},
                             raise_errors=True, wait_for_metadata=True)
        # the first attempt's CreatePartitions reached the broker; its answer was lost
        client.create_partitions({"edge.grow": NewPartitions(3)})
    finally:
        client.close()
    row = {"cluster": "local", "topic": "edge.grow", "config_ops": [], "partitions_to": 3,
           "new_assignment": None}
    (first,) = alter_batches(admin, [row], validate_only=False, attempt=0)
    (retried,) = alter_batches(admin, [row], validate_only=False, attempt=1)
    from schemas import TOPIC_RESULT, column_names

    at = {c: i for i, c in enumerate(column_names(TOPIC_RESULT))}
    assert (first[at["outcome"]], first[at["error_name"]]) == ("rejected", "INVALID_PARTITIONS")
    assert (retried[at["outcome"]], retried[at["error_name"]], retried[at["error_message"]]) \
        == ("altered", "NONE", "made by an earlier attempt of this Spark task: the topic has "
                               "3 partitions")


def test_a_retried_delete_of_a_topic_the_first_attempt_deleted_is_deleted(
        kafka: Any, admin: ClusterAdmin) -> None:
    client = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        client.create_topics({"edge.gone": {"num_partitions": 1, "replication_factor": 1}},
                             raise_errors=True, wait_for_metadata=True)
    finally:
        client.close()
    (live,) = admin.describe_topics(["edge.gone"])
    row = {"cluster": "local", "topic": "edge.gone", "topic_id": live.topic_id}
    (first,) = delete_part(admin, [row], Sent(), attempt=0)
    (retried,) = delete_part(admin, [row], Sent(), attempt=1)
    (plain,) = delete_part(admin, [row], Sent(), attempt=0)
    from schemas import TOPIC_RESULT, column_names

    at = {c: i for i, c in enumerate(column_names(TOPIC_RESULT))}
    assert first[at["outcome"]] == "deleted"
    assert (retried[at["outcome"]], retried[at["error_message"]]) == (
        "deleted", "deleted by an earlier attempt of this Spark task: the retried DeleteTopics "
                   "found it gone")
    # a first attempt that finds it gone says so: someone else deleted it
    assert plain[at["outcome"]] == "already_absent"
