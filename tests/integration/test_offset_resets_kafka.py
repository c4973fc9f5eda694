"""Offset resets planned and sent against the session's plain broker, with real kafka-python
consumers: the requests validated and planned per partition on what the broker holds
(`kinds.offsets.plan` on `kinds.offsets.requests.read_offsets`), sent
(`send_resets`) and read back, then a consumer of the group reads from exactly the planned
offset. Every group and topic of this module is named under its own prefix (`P`).

    setup   a one-partition topic with 10 records: 0-6 written three hours ago, one second
            apart; 7-9 written ten minutes ago
    each to a group that read all 10 and committed (10), reset; its consumer's first record
    busy    a group with a live member given no offset, refused by name, its offset
            unchanged: a classic kafka-python member (its delete sent, and refused by the
            broker while the group reads the topic), and a KIP-848 consumer group's Java
            member (tests/java ConsumerGroupMember, `group.protocol=consumer`)
    once    a request planned again with the run that applied it: NOOP, nothing sent, the
            offset the consumer committed since left as it is
"""

from __future__ import annotations

import datetime as dt
import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata
from pyspark.sql import DataFrame, SparkSession

from provisioning.conf import ClusterConf, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kinds.offsets.plan import plan_resets, with_reset_row_errors
from provisioning.kinds.offsets.requests import (
    committed_offsets,
    outcome,
    read_offsets,
    send_resets,
)
from provisioning.kinds.offsets.schema import OFFSET_LIVE, OFFSET_RESET_DESIRED
from tests.builders import rows_df
from tests.integration.test_groups_kafka import JavaMember

pytestmark = pytest.mark.integration

P = f"off{secrets.token_hex(3)}-"
TOPIC = f"{P}events"
TP = TopicPartition(TOPIC, 0)
NOW = dt.datetime.now(dt.UTC)
OLD = NOW - dt.timedelta(hours=3)
KAFKA = KafkaConf(request_timeout_ms=10000)


def ms(at: dt.datetime) -> int:
    return int(at.timestamp() * 1000)


@pytest.fixture(scope="module")
def bootstrap(kafka: Any) -> Iterator[str]:
    servers = str(kafka.bootstrap_servers)
    admin = KafkaAdminClient(bootstrap_servers=servers)
    admin.create_topics([NewTopic(TOPIC, 1, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=servers)
    recent = NOW - dt.timedelta(minutes=10)
    for i in range(10):
        at = OLD + dt.timedelta(seconds=i) if i < 7 else recent + dt.timedelta(seconds=i)
        producer.send(TOPIC, f"record-{i}".encode(), timestamp_ms=ms(at))
    producer.flush()
    producer.close()
    yield servers


def consume_and_stop(bootstrap: str, group: str) -> None:
    """A classic group that reads the topic's 10 records, commits (10) and stops (Empty)."""
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    read, deadline = 0, time.monotonic() + 60
    while read < 10 and time.monotonic() < deadline:
        read += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
    assert read == 10
    consumer.commit()
    consumer.close()


def first_offset(bootstrap: str, group: str) -> int | None:
    """The offset a consumer of `group` starts at: its first record's (None: no record, it
    waits at the log end), without committing anything."""
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="none", enable_auto_commit=False)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500, max_records=1).values():
                return int(records[0].offset)
            if consumer.assignment() and time.monotonic() > deadline - 10:
                assert consumer.position(TP) == 10
                return None
        raise AssertionError(f"{group}: no assignment within 20 s")
    finally:
        consumer.close()


def broker_offsets(bootstrap: str, group: str) -> dict[int, int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return {tp.partition: o.offset for tp, o in
                admin.list_group_offsets({group: None}).get(group, {}).items()
                if tp.topic == TOPIC}
    finally:
        admin.close()


def cluster(bootstrap: str) -> ClusterAdmin:
    return ClusterAdmin(ClusterConf("local", bootstrap), None, KAFKA)


def plan(spark: SparkSession, bootstrap: str, request: dict[str, Any],
         done: list[tuple[str, str]] = ()) -> DataFrame:  # type: ignore[assignment]
    """The plan of one request on cluster local, on what the broker holds now."""
    reqs = rows_df(spark, OFFSET_RESET_DESIRED, [
        {"cluster": "local", "topic": TOPIC, "requested_by": "team-off", **request}],
        {"source_table": "offset_resets", "source_version": 1, "row_errors": []}
    ).transform(with_reset_row_errors(("local",), NOW))
    valid = [r.asDict() for r in reqs.collect() if not r["row_errors"]]
    with cluster(bootstrap) as admin:
        live = read_offsets(admin, valid)
    return plan_resets(reqs, spark.createDataFrame(live, OFFSET_LIVE), spark.createDataFrame(
        list(done), "request_id string, run_id string"))


def apply(bootstrap: str, planned: DataFrame) -> list[tuple[Any, ...]]:
    """Every clean RESET and DELETE row sent: (partition, action, target, outcome,
    error_name) each."""
    rows = [r.asDict() for r in planned.collect()
            if r["action"] in ("RESET", "DELETE") and not r["row_errors"]]
    with cluster(bootstrap) as admin:
        return sorted((row["partition"], row["action"], row["target"],
                       outcome(row["action"], answer), answer["error_name"])
                      for row, answer in send_resets(admin, rows))


def shown(planned: DataFrame) -> list[tuple[Any, ...]]:
    return sorted((r["partition"], r["action"], r["committed"], r["log_start"], r["log_end"],
                   r["wanted"], r["target"], r["clamped"], r["lag_before"], r["lag_after"],
                   r["note"], r["row_errors"]) for r in planned.collect())


# (to, value, committed before: None read all 10, the wanted offset, the target, note)
MOVES = {
    "earliest": ("earliest", None, 0, 0, None),
    "offset": ("offset", "4", 4, 4, None),
    "shift": ("shift", "-3", 7, 7, None),
    "clamped": ("shift", "+5", 15, 10, "clamped: 15 is past the log end 10"),
    "timestamp": ("timestamp", (OLD + dt.timedelta(seconds=4)).isoformat(), 4, 4, None),
    "duration": ("duration", "PT1H", 7, 7, None),
}


@pytest.mark.parametrize("name", MOVES)
def test_each_to_moves_the_group_and_its_consumer_reads_from_the_planned_offset(
        spark: SparkSession, bootstrap: str, name: str) -> None:
    to, value, wanted, target, note = MOVES[name]
    group = f"{P}{name}"
    consume_and_stop(bootstrap, group)
    planned = plan(spark, bootstrap, {"request_id": f"r-{name}", "group": group, "to": to,
                                      "value": value})
    assert shown(planned) == [(0, "RESET", 10, 0, 10, wanted, target, wanted != target, 0,
                               10 - target, note, [])]
    assert apply(bootstrap, planned) == [(0, "RESET", target, "reset", "NONE")]
    assert broker_offsets(bootstrap, group) == {0: target}
    assert first_offset(bootstrap, group) == (None if target == 10 else target)


def test_latest_moves_a_group_behind_to_the_log_end(spark: SparkSession,
                                                    bootstrap: str) -> None:
    group = f"{P}latest"
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                             enable_auto_commit=False)
    consumer.assign([TP])
    consumer.commit({TP: OffsetAndMetadata(2, "", -1)})
    consumer.close()
    planned = plan(spark, bootstrap, {"request_id": "r-latest", "group": group,
                                      "to": "latest"})
    assert shown(planned) == [(0, "RESET", 2, 0, 10, 10, 10, False, 8, 0, None, [])]
    assert apply(bootstrap, planned) == [(0, "RESET", 10, "reset", "NONE")]
    assert broker_offsets(bootstrap, group) == {0: 10}
    assert first_offset(bootstrap, group) is None


def test_a_group_that_does_not_exist_yet_is_given_offsets(spark: SparkSession,
                                                          bootstrap: str) -> None:
    group = f"{P}new"
    planned = plan(spark, bootstrap, {"request_id": "r-new", "group": group, "to": "offset",
                                      "value": "6"})
    assert shown(planned) == [(0, "RESET", None, 0, 10, 6, 6, False, None, 4, None, [])]
    assert apply(bootstrap, planned) == [(0, "RESET", 6, "reset", "NONE")]
    assert first_offset(bootstrap, group) == 6


def test_delete_removes_the_groups_committed_offsets_on_the_topic(
        spark: SparkSession, bootstrap: str) -> None:
    group = f"{P}delete"
    consume_and_stop(bootstrap, group)
    planned = plan(spark, bootstrap, {"request_id": "r-delete", "group": group,
                                      "to": "delete"})
    assert shown(planned) == [(0, "DELETE", 10, 0, 10, None, None, None, 0, None, None, [])]
    assert apply(bootstrap, planned) == [(0, "DELETE", None, "offsets_deleted", "NONE")]
    assert broker_offsets(bootstrap, group) == {}
    with cluster(bootstrap) as admin:
        assert committed_offsets(admin, group, TOPIC) == {}


class Member(threading.Thread):
    """A consumer of `group` that keeps polling until stopped (one live member)."""

    def __init__(self, bootstrap: str, group: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.group, self.stop = bootstrap, group, threading.Event()
        self.assigned = threading.Event()

    def run(self) -> None:
        consumer = KafkaConsumer(TOPIC, bootstrap_servers=self.bootstrap,
                                 group_id=self.group, enable_auto_commit=False,
                                 auto_offset_reset="earliest")
        while not self.stop.is_set():
            consumer.poll(timeout_ms=200)
            if consumer.assignment():
                self.assigned.set()
        consumer.close()


def test_a_group_with_a_live_member_is_refused_by_name_and_nothing_is_committed(
        spark: SparkSession, bootstrap: str) -> None:
    group = f"{P}busy"
    consume_and_stop(bootstrap, group)
    member = Member(bootstrap, group)
    member.start()
    try:
        assert member.assigned.wait(60)
        # A reset is refused by the job; a delete is sent, and the broker refuses it while
        # the group reads the topic.
        refusals = {
            "earliest": ("NON_EMPTY_GROUP", f"group {group}: it has 1 member(s) (type "
                         "classic, state Stable); nothing was sent", "rejected"),
            "delete": ("GROUP_SUBSCRIBED_TO_TOPIC", "Deleting offsets of a topic is "
                       "forbidden while the consumer group is actively subscribed to it.",
                       "rejected")}
        for to, refused in refusals.items():
            planned = plan(spark, bootstrap, {"request_id": f"r-busy-{to}", "group": group,
                                              "to": to})
            rows = [r.asDict() for r in planned.collect()]
            with cluster(bootstrap) as admin:
                answers = [(a["error_name"], a["error_message"], outcome(r["action"], a))
                           for r, a in send_resets(admin, rows)]
            assert answers == [refused]
            assert broker_offsets(bootstrap, group) == {0: 10}
    finally:
        member.stop.set()
        member.join(30)


def test_a_request_done_before_is_planned_done_and_nothing_moves(
        spark: SparkSession, bootstrap: str) -> None:
    group = f"{P}once"
    consume_and_stop(bootstrap, group)
    request = {"request_id": "r-once", "group": group, "to": "earliest"}
    assert apply(bootstrap, plan(spark, bootstrap, request)) == [
        (0, "RESET", 0, "reset", "NONE")]
    consume_and_stop(bootstrap, group)  # the consumer reads on and commits 10 again
    again = plan(spark, bootstrap, request, done=[("r-once", "run-first")])
    assert [(r["partition"], r["action"], r["done_by"], r["note"])
            for r in again.collect()] == [(None, "NOOP", "run-first",
                                           "done: applied by run run-first")]
    assert apply(bootstrap, again) == []
    assert broker_offsets(bootstrap, group) == {0: 10}


def test_a_kip848_consumer_group_with_a_live_java_member_is_refused(
        spark: SparkSession, bootstrap: str, policy_jar: Path, tmp_path: Path) -> None:
    group = f"{P}kip848"
    member = JavaMember(policy_jar, bootstrap, group, TOPIC, tmp_path / "member.log")
    try:
        member.wait_assigned()
        # The member commits its position (the log end) as it polls: wait until it has.
        deadline = time.monotonic() + 60
        while broker_offsets(bootstrap, group) != {0: 10}:
            assert time.monotonic() < deadline, "the Java member committed no offset"
            time.sleep(0.2)
        planned = plan(spark, bootstrap, {"request_id": "r-kip848", "group": group,
                                          "to": "offset", "value": "3"})
        rows = [r.asDict() for r in planned.collect()]
        with cluster(bootstrap) as admin:
            answers = [(a["error_name"], a["error_message"], outcome(r["action"], a))
                       for r, a in send_resets(admin, rows)]
        assert answers == [("NON_EMPTY_GROUP", f"group {group}: it has an unknown number of "
                            "member(s) (type consumer, state Stable); nothing was sent",
                            "rejected")]
        assert broker_offsets(bootstrap, group) == {0: 10}
    finally:
        assert member.stop() == 0
