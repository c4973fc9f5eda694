"""What verify settles by: whether a live topic shows an ALTER's change, and a broker that
goes away while verify reads."""

from __future__ import annotations

import time

import kafka.errors as Errors
import pytest

from provisioning import retry
from provisioning.kafka.client import LiveTopic
from provisioning.kinds.topics.tasks import verify as tasks
from provisioning.kinds.topics.tasks.verify import alter_shown

ROW = {"topic": "t", "action": "ALTER", "partitions_to": 4, "before_partitions": 1,
       "config_ops": [{"name": "retention.ms", "op": "SET", "value": "172800000"},
                      {"name": "segment.ms", "op": "DELETE", "value": None}]}


def live(partitions: int, leaderless: int = 0) -> LiveTopic:
    return LiveTopic(name="t", topic_id="id", internal=False, partitions=partitions,
                     replication_factor=1, replica_assignment=None, error_name=None,
                     leaderless_partitions=leaderless)


def override(name: str, value: str) -> dict[str, object]:
    return {"name": name, "value": value, "source": "DYNAMIC_TOPIC_CONFIG",
            "read_only": False, "sensitive": False}


def test_the_whole_change_is_shown() -> None:
    assert alter_shown(ROW, live(4), [override("retention.ms", "172800000")]) == (
        True, True, [])


def test_part_of_the_change_is_shown() -> None:
    assert alter_shown(ROW, live(4, leaderless=1), [override("retention.ms", "172800000"),
                                                    override("segment.ms", "600000")]) == (
        False, True, ["partitions 4, expected 4", "segment.ms is 600000, expected no override"])


def test_nothing_of_the_change_is_shown() -> None:
    assert alter_shown(ROW, live(1), [override("retention.ms", "86400000"),
                                      override("segment.ms", "600000")]) == (
        False, False, ["partitions 1, expected 4", "retention.ms is 86400000, expected "
                       "172800000", "segment.ms is 600000, expected no override"])


def test_configs_not_readable_are_not_shown() -> None:
    assert alter_shown({**ROW, "partitions_to": None}, live(1), None) == (
        False, False, ["retention.ms is not readable, expected 172800000",
                       "segment.ms is not readable, expected no override"])


class FlakyAdmin:
    """Describes topics after `failures` refused connections (a broker killed mid-verify)."""

    def __init__(self, failures: int) -> None:
        self.cluster = type("Cluster", (), {"name": "local"})()
        self.failures = failures

    def describe_topics(self, names: list[str]) -> list[LiveTopic]:
        if self.failures:
            self.failures -= 1
            raise Errors.KafkaConnectionError("111 ECONNREFUSED")
        return [LiveTopic(name=n, topic_id=f"id-{n}", internal=False, partitions=1,
                          replication_factor=3, replica_assignment=None, error_name=None,
                          leaderless_partitions=0) for n in names]


def test_a_broker_gone_during_verify_is_left_behind_until_the_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "pause", lambda s: None)
    rows = [{"cluster": "local", "topic": t, "action": "CREATE"} for t in ("a", "b")]
    done = list(tasks.verify_rows(FlakyAdmin(2), rows, time.monotonic() + 60))  # type: ignore[arg-type]
    assert [(r[1], r[3], r[12]) for r in done] == [("a", "created", 3), ("b", "created", 3)]
    with pytest.raises(Errors.KafkaConnectionError):
        # past the deadline the error is the chunk's (recorded `unknown` by its caller)
        list(tasks.verify_rows(FlakyAdmin(1), rows, time.monotonic() - 1))  # type: ignore[arg-type]
