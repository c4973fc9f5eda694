"""Per-topic error codes mapped to audit outcomes, config entries as the job records them, and
request batching under broker caps."""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.admin import DescribeConfigsResponse

from provisioning.kafka.batching import TopicRequest, batches
from provisioning.kafka.codes import (
    config_entry,
    config_rows,
    error_name,
    topic_id_text,
    topic_id_uuid,
)
from provisioning.kafka.outcomes import create_outcome, delete_outcome


@pytest.mark.parametrize(("name", "validate_only", "outcome"), [
    ("NONE", True, "validated"),
    ("NONE", False, "created"),
    ("TOPIC_ALREADY_EXISTS", False, "already_present"),
    ("POLICY_VIOLATION", True, "rejected"),
    ("INVALID_CONFIG", True, "rejected"),
    ("INVALID_REPLICATION_FACTOR", True, "rejected"),
    ("TOPIC_AUTHORIZATION_FAILED", False, "rejected"),
    ("REQUEST_TIMED_OUT", False, "unknown"),
    ("REQUEST_TIMED_OUT", True, "failed"),
    ("THROTTLING_QUOTA_EXCEEDED", False, "failed"),
    ("UNKNOWN_SERVER_ERROR", False, "failed"),
])
def test_create_outcome(name: str, validate_only: bool, outcome: str) -> None:
    assert create_outcome(name, validate_only) == outcome


@pytest.mark.parametrize(("name", "outcome"), [
    ("NONE", "deleted"),
    ("UNKNOWN_TOPIC_OR_PARTITION", "already_absent"),
    ("UNKNOWN_TOPIC_ID", "already_absent"),
    ("TOPIC_AUTHORIZATION_FAILED", "rejected"),
    ("TOPIC_DELETION_DISABLED", "failed"),
    ("REQUEST_TIMED_OUT", "unknown"),
])
def test_delete_outcome(name: str, outcome: str) -> None:
    assert delete_outcome(name) == outcome


def test_error_names_come_from_the_protocol() -> None:
    assert [error_name(c) for c in (0, 36, 44, 89, 73)] == [
        "NONE", "TOPIC_ALREADY_EXISTS", "POLICY_VIOLATION", "THROTTLING_QUOTA_EXCEEDED",
        "TOPIC_DELETION_DISABLED"]


@pytest.mark.parametrize(("code", "name"), [
    (6, "NOT_LEADER_OR_FOLLOWER"), (10, "MESSAGE_TOO_LARGE"), (17, "INVALID_TOPIC_EXCEPTION"),
    (39, "INVALID_REPLICA_ASSIGNMENT"), (133, "SHARE_SESSION_LIMIT_REACHED")])
def test_error_names_are_kafkas_where_kafka_python_spells_them_otherwise(code: int,
                                                                        name: str) -> None:
    assert error_name(code) == name


def test_an_invalid_name_or_assignment_is_a_rejection() -> None:
    assert [create_outcome(error_name(c), False) for c in (17, 39)] == ["rejected"] * 2


def test_topic_ids_print_as_kafka_does() -> None:
    u = uuid.UUID("0f5d8a2c-6f3e-4b7a-9c1d-2e3f4a5b6c7d")
    text = topic_id_text(u)
    assert text == "D12KLG8-S3qcHS4_SltsfQ"
    assert topic_id_uuid(text) == u
    assert topic_id_text(uuid.UUID(int=0)) is None


def test_sensitive_config_values_are_never_kept() -> None:
    assert config_entry("sasl.jaas.config", "secret", "DYNAMIC_TOPIC_CONFIG", False, True) == {
        "name": "sasl.jaas.config", "value": None, "source": "DYNAMIC_TOPIC_CONFIG",
        "read_only": False, "sensitive": True}


def _described(name: str, value: str | None, source: int, sensitive: bool = False) -> object:
    """One config entry of a DescribeConfigs response, as kafka-python decodes it."""
    return DescribeConfigsResponse.DescribeConfigsResult.DescribeConfigsResourceResult(
        name=name, value=value, read_only=False, config_source=source, is_sensitive=sensitive,
        synonyms=[], config_type=0, documentation=None)


def test_described_configs_become_rows_by_name_with_their_sources() -> None:
    entries = [_described("segment.ms", "604800000", 5),
               _described("retention.ms", "3600000", 1),
               _described("sasl.jaas.config", "secret", 2, sensitive=True),
               _described("cleanup.policy", "delete", 4),
               _described("min.insync.replicas", "2", 99)]
    row = {"read_only": False, "sensitive": False}
    assert config_rows(entries, only_non_default=False) == [
        {"name": "cleanup.policy", "value": "delete", "source": "STATIC_BROKER_CONFIG", **row},
        {"name": "min.insync.replicas", "value": "2", "source": "UNKNOWN", **row},
        {"name": "retention.ms", "value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG", **row},
        {"name": "sasl.jaas.config", "value": None, "source": "DYNAMIC_BROKER_CONFIG",
         "read_only": False, "sensitive": True},
        {"name": "segment.ms", "value": "604800000", "source": "DEFAULT_CONFIG", **row}]
    assert [r["name"] for r in config_rows(entries, only_non_default=True)] == [
        "min.insync.replicas", "retention.ms", "sasl.jaas.config"]


def _topic(name: str, partitions: int | None = 1, configs: int = 0) -> TopicRequest:
    return TopicRequest(name, partitions, 1, None, {f"c{i}": "v" for i in range(configs)})


def _names(groups: list[list[TopicRequest]]) -> list[list[str]]:
    return [[t.name for t in g] for g in groups]


def test_batches_respect_the_topic_count() -> None:
    topics = [_topic(f"t{i}") for i in range(5)]
    assert _names(list(batches(topics, 2, 10_000, 10_000))) == [
        ["t0", "t1"], ["t2", "t3"], ["t4"]]


def test_batches_respect_the_partition_cap() -> None:
    topics = [_topic("a", 6000), _topic("b", 3000), _topic("c", 2000), _topic("d", 1)]
    assert _names(list(batches(topics, 100, 10_000, 100_000))) == [["a", "b"], ["c", "d"]]


def test_batches_count_records_as_topic_plus_partitions_plus_configs() -> None:
    # each topic costs 1 + 10 + 4 = 15 records; 3 fit under 45, a fourth does not
    topics = [_topic(f"t{i}", 10, 4) for i in range(4)]
    assert _names(list(batches(topics, 100, 10_000, 45))) == [["t0", "t1", "t2"], ["t3"]]


def test_batches_use_validated_partition_counts_for_broker_defaults() -> None:
    topics = [_topic("a", None), _topic("b", None)]
    assert _names(list(batches(topics, 100, 10, 1000))) == [["a", "b"]]
    assert _names(list(batches(topics, 100, 10, 1000, {"a": 8, "b": 8}))) == [["a"], ["b"]]


def test_a_topic_over_the_cap_alone_still_goes_in_its_own_batch() -> None:
    topics = [_topic("small", 1), _topic("huge", 20_000), _topic("after", 1)]
    assert _names(list(batches(topics, 100, 10_000, 100_000))) == [
        ["small"], ["huge"], ["after"]]


def test_topic_ids_from_uuid_strings() -> None:
    assert topic_id_text("0f5d8a2c-6f3e-4b7a-9c1d-2e3f4a5b6c7d") == "D12KLG8-S3qcHS4_SltsfQ"
