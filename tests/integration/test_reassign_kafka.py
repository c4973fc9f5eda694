"""Replica moves against a real three-node KRaft cluster with one rack per node (a, b, c):
kinds.reassign.requests's requests and throttles, and the reassign task functions, checked against
what the brokers hold."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from dev.devkafka import KafkaCluster
from provisioning import names
from provisioning.conf import ClusterConf, KafkaConf
from provisioning.errors import ClusterUnreachable
from provisioning.kafka.client import ClusterAdmin
from provisioning.kinds.reassign import names as move_names
from provisioning.kinds.reassign import requests as reassign
from provisioning.kinds.reassign.placement import PartitionSpec, place
from provisioning.kinds.reassign.tasks import (
    reassign_progress,
    reassign_results,
    reassign_verify_results,
)
from schemas import TOPIC_RESULT, column_names
from tests.conftest import RACKS
from tests.helpers import wait_until

pytestmark = pytest.mark.integration

KAFKA = KafkaConf(request_timeout_ms=30000, batch_size=4)
RECORDS = 10_000
RECORD_BYTES = 2_000
SLOW = 100_000           # bytes per second: a move of a few MB per partition takes minutes
FAST = 1_000_000_000
LEADER, FOLLOWER = names.LEADER_THROTTLED_REPLICAS, names.FOLLOWER_THROTTLED_REPLICAS
NONE = {"error_code": 0, "error_name": "NONE", "error_message": None, "attempts": 1}


@pytest.fixture
def racked(racked_kafka: KafkaCluster) -> KafkaCluster:
    return racked_kafka


@pytest.fixture
def conf(racked: KafkaCluster) -> ClusterConf:
    return ClusterConf(name="racked", bootstrap_servers=racked.bootstrap_servers)


@pytest.fixture
def admin(conf: ClusterConf) -> Iterator[ClusterAdmin]:
    with ClusterAdmin(conf, None, KAFKA) as opened:
        yield opened


def create(cluster: KafkaCluster, topic: str, assignment: dict[int, list[int]]) -> None:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        client.create_topics([NewTopic(topic, replica_assignments=assignment)],
                             raise_errors=True, wait_for_metadata=True)
    finally:
        client.close()


def produce(cluster: KafkaCluster, topic: str, partitions: int, records: int, size: int
            ) -> None:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks=1,
                             linger_ms=20, batch_size=512 * 1024)
    try:
        for i in range(records):
            producer.send(topic, value=i.to_bytes(4, "big") + b"x" * (size - 4),
                          partition=i % partitions)
        producer.flush(timeout=120)
    finally:
        producer.close()


def read_all(cluster: KafkaCluster, topic: str, partitions: int, expected: int
             ) -> list[int]:
    """The record numbers every partition holds, read from the start."""
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers,
                             enable_auto_commit=False, consumer_timeout_ms=2000)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        seen: list[int] = []
        deadline = time.monotonic() + 120
        while len(seen) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=1000).values():
                seen.extend(int.from_bytes(r.value[:4], "big") for r in batch)
        return sorted(seen)
    finally:
        consumer.close()


def described(cluster: KafkaCluster, topic: str) -> dict[int, tuple[int, list[int]]]:
    """partition -> (leader, replicas)."""
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        (t,) = client.describe_topics([topic])
    finally:
        client.close()
    return {p["partition_index"]: (p["leader_id"], list(p["replica_nodes"]))
            for p in t["partitions"]}


def throttle_configs(admin: ClusterAdmin, topic: str) -> dict[str, set[str]]:
    """The topic's throttled-replicas overrides, as sets of partition:broker."""
    configs = admin.topic_configs([topic]).get(topic, [])
    return {c["name"]: set(filter(None, (c["value"] or "").split(",")))
            for c in configs if c["name"] in names.THROTTLED_REPLICAS_CONFIGS}


def wait_settled(admin: ClusterAdmin, targets: dict[tuple[str, int], list[int]],
                 timeout_s: float = 180) -> dict[tuple[str, int], str]:
    """Each move's state once none is moving and two reads half a second apart agree (a
    broker's metadata may trail the controller's that ended the move)."""
    deadline = time.monotonic() + timeout_s
    last: dict[tuple[str, int], str] | None = None
    while True:
        states, _ = reassign_progress(admin, targets)
        settled = move_names.REASSIGNING not in states.values()
        if (settled and states == last) or time.monotonic() > deadline:
            return states
        last = states if settled else None
        time.sleep(0.5 if settled else 1)


def as_dict(row: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip(column_names(TOPIC_RESULT), row, strict=True))


def test_the_cluster_state_has_each_live_broker_rack(admin: ClusterAdmin,
                                                     racked: KafkaCluster) -> None:
    state = admin.cluster_state()
    assert (state.cluster_id, state.broker_ids, state.racks, state.fenced_broker_ids) == (
        racked.cluster_id, (1, 2, 3), {1: "a", 2: "b", 3: "c"}, ())


def test_rf_1_to_3_throttled_in_flight_then_done_and_unthrottled(
        admin: ClusterAdmin, racked: KafkaCluster, conf: ClusterConf) -> None:
    topic = "rf.up"
    create(racked, topic, {p: [p % 3 + 1] for p in range(6)})
    produce(racked, topic, 6, RECORDS, RECORD_BYTES)
    # Every partition to all three brokers (one per rack), its leader first.
    targets = {p: [p % 3 + 1, (p + 1) % 3 + 1, (p + 2) % 3 + 1] for p in range(6)}
    moves = [reassign.Move(topic, p, tuple(t)) for p, t in targets.items()]

    assert reassign.broker_rates(admin, [1, 2, 3]) == {1: {}, 2: {}, 3: {}}
    assert reassign.set_broker_rates(admin, [1, 2, 3], SLOW) == {b: NONE for b in (1, 2, 3)}
    entries = reassign.throttled_replicas(
        (topic, p, [p % 3 + 1], t) for p, t in targets.items())
    assert entries == {topic: reassign.Throttle(
        leader=("0:1", "1:2", "2:3", "3:1", "4:2", "5:3"),
        follower=("0:2", "0:3", "1:1", "1:3", "2:1", "2:2", "3:2", "3:3", "4:1", "4:3",
                  "5:1", "5:2"))}
    assert reassign.throttle_topics(admin, entries, names.APPEND) == {
        topic: {**NONE, "topic": topic}}

    answers = reassign.alter_reassignments(admin, moves, batch=4)
    assert answers == [{**NONE, "topic": topic, "partition": p} for p in range(6)]

    # In flight: the target, what is being added, nothing removed.
    assert reassign.list_reassignments(admin, [topic]) == {
        (topic, p): reassign.Ongoing(replicas=tuple(t), adding=tuple(sorted(t[1:])),
                                     removing=())
        for p, t in targets.items()}
    assert reassign.list_reassignments(admin, ["no.such.topic"]) == {}
    wait_until("the topic's throttled replicas", lambda: throttle_configs(admin, topic) == {
        LEADER: set(entries[topic].leader), FOLLOWER: set(entries[topic].follower)})
    slow = reassign.RateSetting(str(SLOW), "DYNAMIC_BROKER_CONFIG")
    wait_until("the brokers' rates", lambda: reassign.broker_rates(admin, [1, 2, 3]) == {
        b: {names.LEADER_THROTTLED_RATE: slow, names.FOLLOWER_THROTTLED_RATE: slow}
        for b in (1, 2, 3)})
    left = reassign.bytes_left(admin, reassign.list_reassignments(admin, [topic]))
    assert sorted(left) == [(topic, p) for p in range(6)]
    assert all(v is not None and v >= 0 for v in left.values())
    assert sum(v or 0 for v in left.values()) > 0

    # A second start of the same moves sends nothing: they are under way.
    rows = [{"cluster": "racked", "topic": topic, "reassignment": [
        {"partition": p, "before": [p % 3 + 1], "after": t, "in_flight": False}
        for p, t in targets.items()]}]
    (again,) = [as_dict(r) for r in reassign_results(rows, {"racked": conf}, {}, KAFKA, SLOW)]
    assert (again["outcome"], again["throttle_rate"], again["throttled_brokers"]) == (
        move_names.REASSIGNING, None, [])
    assert {(p["partition"], p["outcome"], p["error_message"])
            for p in again["result_reassignment"]} == {
        (p, move_names.REASSIGNING, "already under way") for p in range(6)}

    # Somebody raises the rate: the job's value is gone, so it removes nothing.
    reassign.set_broker_rates(admin, [1, 2, 3], FAST)
    fast = reassign.RateSetting(str(FAST), "DYNAMIC_BROKER_CONFIG")
    wait_until("the brokers' rates", lambda: reassign.broker_rates(admin, [1, 2, 3]) == {
        b: {names.LEADER_THROTTLED_RATE: fast, names.FOLLOWER_THROTTLED_RATE: fast}
        for b in (1, 2, 3)})
    removed = reassign.remove_broker_rates(admin, [1, 2, 3], only_value=SLOW)
    assert {b: a["removed"] for b, a in removed.items()} == {1: [], 2: [], 3: []}
    keyed = {(topic, p): t for p, t in targets.items()}
    assert wait_settled(admin, keyed) == {k: move_names.REASSIGNED for k in keyed}

    assert reassign.throttle_topics(admin, entries, names.SUBTRACT) == {
        topic: {**NONE, "topic": topic}}
    wait_until("the topic's throttled replicas removed",
               lambda: throttle_configs(admin, topic) == {})
    removed = reassign.remove_broker_rates(admin, [1, 2, 3], only_value=FAST)
    assert {b: a["removed"] for b, a in removed.items()} == {
        b: [names.LEADER_THROTTLED_RATE, names.FOLLOWER_THROTTLED_RATE] for b in (1, 2, 3)}
    wait_until("the brokers' rates removed",
               lambda: reassign.broker_rates(admin, [1, 2, 3]) == {1: {}, 2: {}, 3: {}})

    after = described(racked, topic)
    assert {p: replicas for p, (_, replicas) in after.items()} == targets
    assert all(sorted(RACKS[b] for b in replicas) == ["a", "b", "c"]
               for _, replicas in after.values())
    assert read_all(racked, topic, 6, RECORDS) == list(range(RECORDS))


def test_rf_3_to_2_through_the_tasks_keeps_the_leaders_and_clears_its_throttles(
        admin: ClusterAdmin, racked: KafkaCluster, conf: ClusterConf) -> None:
    topic = "rf.down"
    live = {p: [p % 3 + 1, (p + 1) % 3 + 1, (p + 2) % 3 + 1] for p in range(6)}
    create(racked, topic, live)
    produce(racked, topic, 6, 600, 100)
    leaders = {p: leader for p, (leader, _) in described(racked, topic).items()}
    assert leaders == {p: r[0] for p, r in live.items()}
    targets = place([PartitionSpec(topic, p, tuple(r), replication_factor=2)
                     for p, r in live.items()], [1, 2, 3], RACKS)
    rows = [{"cluster": "racked", "topic": topic, "live_topic_id": None, "reassignment": [
        {"partition": p, "before": live[p], "after": targets[(topic, p)], "in_flight": False}
        for p in range(6)]}]

    (started,) = [as_dict(r) for r in reassign_results(rows, {"racked": conf}, {}, KAFKA,
                                                        10_000_000)]
    assert (started["outcome"], started["error_name"], started["throttle_rate"],
            started["throttled_brokers"]) == (move_names.REASSIGNING, "NONE", 10_000_000, [1, 2, 3])
    assert started["result_reassignment"] == [
        {"partition": p, "before": live[p], "after": targets[(topic, p)],
         "outcome": move_names.REASSIGNING, "error_name": "NONE", "error_message": None}
        for p in range(6)]

    (verified,) = [as_dict(r) for r in reassign_verify_results(
        rows, {"racked": conf}, {}, KAFKA, wait_seconds=120,
        owned_brokers={"racked": dict.fromkeys((1, 2, 3), 10_000_000)})]
    assert (verified["phase"], verified["outcome"], verified["result_replication_factor"],
            verified["result_assignment"]) == (
        names.VERIFY, move_names.REASSIGNED, 2, {p: targets[(topic, p)] for p in range(6)})
    assert [p["outcome"] for p in verified["result_reassignment"]] == [move_names.REASSIGNED] * 6
    after = described(racked, topic)
    assert {p: leader for p, (leader, _) in after.items()} == leaders
    assert {p: replicas for p, (_, replicas) in after.items()} == {
        p: targets[(topic, p)] for p in range(6)}
    assert all(r[0] == live[p][0] and len(r) == 2 for (_, p), r in targets.items())
    wait_until("the topic's throttled replicas removed",
               lambda: throttle_configs(admin, topic) == {})
    wait_until("the brokers' rates removed",
               lambda: reassign.broker_rates(admin, [1, 2, 3]) == {1: {}, 2: {}, 3: {}})


def test_per_partition_errors_for_a_bad_target(admin: ClusterAdmin, racked: KafkaCluster,
                                               conf: ClusterConf) -> None:
    topic = "bad.target"
    create(racked, topic, {0: [1], 1: [2]})
    answers = reassign.alter_reassignments(admin, [
        reassign.Move(topic, 0, (1, 9)), reassign.Move(topic, 1, (2, 3)),
        reassign.Move("no.such.topic", 0, (1,))])
    assert [(a["topic"], a["partition"], a["error_name"]) for a in answers] == [
        (topic, 0, "INVALID_REPLICA_ASSIGNMENT"), (topic, 1, "NONE"),
        ("no.such.topic", 0, "UNKNOWN_TOPIC_OR_PARTITION")]
    assert answers[0]["error_message"]

    rows = [{"cluster": "racked", "topic": topic, "reassignment": [
        {"partition": 0, "before": [1], "after": [1, 9], "in_flight": False},
        {"partition": 1, "before": [2], "after": [2, 3], "in_flight": True}]}]
    (started,) = [as_dict(r) for r in reassign_results(rows, {"racked": conf}, {}, KAFKA, None)]
    first, second = started["result_reassignment"]
    assert (first["outcome"], first["error_name"]) == (names.REJECTED,
                                                       "INVALID_REPLICA_ASSIGNMENT")
    assert (second["outcome"], second["error_message"]) == (
        move_names.REASSIGNING, "under way since an earlier run")
    # Part started, part refused: the topic is half moved.
    assert (started["outcome"], started["error_name"]) == (
        names.FAILED, "INVALID_REPLICA_ASSIGNMENT")
    assert wait_settled(admin, {(topic, 0): [1, 9], (topic, 1): [2, 3]}) == {
        (topic, 0): names.FAILED, (topic, 1): move_names.REASSIGNED}


def test_a_fenced_broker_is_listed_apart_and_a_move_to_it_waits_until_cancelled(
        admin: ClusterAdmin, racked: KafkaCluster) -> None:
    create(racked, "to.fenced", {0: [1]})
    racked.stop_node(3)
    try:
        deadline = time.monotonic() + 60
        while True:
            # The client's connection may have been to the stopped node: its next request
            # goes to another one.
            try:
                state = admin.cluster_state()
            except ClusterUnreachable:
                state = None
            if state is not None and state.fenced_broker_ids == (3,):
                break
            assert time.monotonic() < deadline, state
            time.sleep(0.5)
        assert (state.broker_ids, state.racks) == ((1, 2), {1: "a", 2: "b"})
        # The controller takes a move to a fenced broker (the move then waits for it), so
        # the job's own check before sending is what keeps fenced brokers out.
        (answer,) = reassign.alter_reassignments(admin, [reassign.Move("to.fenced", 0, (1, 3))])
        assert answer == {**NONE, "topic": "to.fenced", "partition": 0}
        assert reassign.list_reassignments(admin, ["to.fenced"]) == {
            ("to.fenced", 0): reassign.Ongoing(replicas=(1, 3), adding=(3,), removing=())}
        (cancelled,) = reassign.alter_reassignments(admin, [reassign.Move("to.fenced", 0, None)])
        assert cancelled == {**NONE, "topic": "to.fenced", "partition": 0}
        assert reassign.list_reassignments(admin, ["to.fenced"]) == {}
        assert described(racked, "to.fenced") == {0: (1, [1])}
    finally:
        racked.start_node(3)
