"""Usage's offsets: ListOffsets routed to each partition's leader from the metadata, and
kafka-python's own routing (which reads every topic's metadata again and retries a moved
leader) only when a leader is unknown or a partition answers with an error. The requests are
recorded, not sent: the answers against a real broker are tests/integration/test_usage.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pytest
from kafka import TopicPartition
from kafka.admin import OffsetSpec
from kafka.structs import OffsetAndTimestamp

from provisioning.kafka import usage
from provisioning.kafka.client import LiveTopic, PartitionState


def _topic(name: str, leaders: list[int | None]) -> LiveTopic:
    states = tuple(PartitionState(p, leader, (1,), (1,)) for p, leader in enumerate(leaders))
    return LiveTopic(name=name, topic_id=None, internal=False, partitions=len(leaders),
                     replication_factor=1, replica_assignment=None, error_name=None,
                     leaderless_partitions=0, partition_states=states)


class _Admin:
    """What `usage._offsets` uses of a ClusterAdmin: the metadata and kafka-python's routing."""

    def __init__(self, topics: list[LiveTopic]) -> None:
        self.topics = {t.name: t for t in topics}
        self.routed: list[OffsetSpec] = []
        self.client = SimpleNamespace(list_partition_offsets=self._routed)

    def describe_topics(self, names: list[str]) -> list[LiveTopic]:
        return [self.topics[n] for n in names]

    def _routed(self, specs: Mapping[TopicPartition, OffsetSpec]) -> dict[Any, Any]:
        self.routed.append(next(iter(specs.values())))
        return {tp: OffsetAndTimestamp(7, 70, None) for tp in specs}


def _answer(request: Any, error: tuple[str, int] | None) -> Any:
    """A ListOffsets response: offset = partition + 100 * spec, timestamp = -1."""
    return SimpleNamespace(topics=[SimpleNamespace(name=t.name, partitions=[
        SimpleNamespace(partition_index=p.partition_index,
                        error_code=6 if (t.name, p.partition_index) == error else 0,
                        offset=p.partition_index - 100 * p.timestamp, timestamp=-1)
        for p in t.partitions]) for t in request.topics])


class _Sender:
    """Stands in for `compat.send_to_node`: records (node, spec, partitions) of every
    ListOffsets and answers it; `error` names a partition that answers
    NOT_LEADER_OR_FOLLOWER."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, int, list[tuple[str, int]]]] = []
        self.error: tuple[str, int] | None = None

    def __call__(self, _client: Any, node: int, request: Any, use: str) -> Any:
        parts = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
        self.sent.append((node, request.topics[0].partitions[0].timestamp, parts))
        return _answer(request, self.error)


@pytest.fixture
def sender(monkeypatch: pytest.MonkeyPatch) -> _Sender:
    sender = _Sender()
    monkeypatch.setattr(usage, "send_to_node", sender)
    return sender


def test_each_spec_goes_to_each_leader_once(sender: _Sender) -> None:
    admin = _Admin([_topic("a", [1, 2]), _topic("b", [2, 2])])
    found, failure = usage._offsets(admin, {("a", 0), ("a", 1), ("b", 0), ("b", 1)})  # type: ignore[arg-type]
    assert failure is None and admin.routed == []
    assert sorted(sender.sent) == sorted(
        (node, int(spec), parts) for spec in usage.SPECS
        for node, parts in ((1, [("a", 0)]), (2, [("a", 1), ("b", 0), ("b", 1)])))
    assert found == {spec: {tp: (tp[1] - 100 * int(spec), -1)
                            for tp in (("a", 0), ("a", 1), ("b", 0), ("b", 1))}
                     for spec in usage.SPECS}


def test_a_partition_without_a_leader_is_asked_through_kafka_pythons_routing(
        sender: _Sender) -> None:
    admin = _Admin([_topic("a", [1, None])])
    found, failure = usage._offsets(admin, {("a", 0), ("a", 1)})  # type: ignore[arg-type]
    assert failure is None and sender.sent == []
    assert sorted(admin.routed) == sorted(usage.SPECS)
    assert found == {spec: {("a", 0): (7, 70), ("a", 1): (7, 70)} for spec in usage.SPECS}


def test_a_partition_answering_with_an_error_is_asked_again_through_kafka_pythons_routing(
        sender: _Sender) -> None:
    sender.error = ("b", 1)
    admin = _Admin([_topic("a", [1]), _topic("b", [1, 1])])
    found, failure = usage._offsets(admin, {("a", 0), ("b", 0), ("b", 1)},  # type: ignore[arg-type]
                                    (OffsetSpec.LATEST,))
    assert failure is None and admin.routed == [OffsetSpec.LATEST]
    assert found == {OffsetSpec.LATEST: {("a", 0): (7, 70), ("b", 0): (7, 70),
                                         ("b", 1): (7, 70)}}
