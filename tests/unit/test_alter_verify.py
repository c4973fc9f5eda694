"""Whether a live topic shows an ALTER's change: what verify settles an alter by."""

from __future__ import annotations

from provisioning.kafka.client import LiveTopic
from provisioning.kafka.tasks import alter_shown

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
