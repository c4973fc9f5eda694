"""Kafka's codes as the job records them: error names, topic ids, config entries."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable
from typing import Any

import kafka.errors as Errors

CONFIG_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}
# Sources that mean "somebody set this", as opposed to a broker or built-in default.
NON_DEFAULT_SOURCES = {"DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "UNKNOWN"}


# The codes kafka-python names otherwise than Kafka's Errors enum (kafka-clients 4.3), or
# does not know: kafka-python says NOT_LEADER_FOR_PARTITION, MESSAGE_SIZE_TOO_LARGE,
# INVALID_TOPIC and INVALID_REPLICATION_ASSIGNMENT for the first four, UNKNOWN for the rest.
_KAFKA_NAMES = {
    6: "NOT_LEADER_OR_FOLLOWER",
    10: "MESSAGE_TOO_LARGE",
    17: "INVALID_TOPIC_EXCEPTION",
    39: "INVALID_REPLICA_ASSIGNMENT",
    128: "INVALID_REGULAR_EXPRESSION",
    129: "REBOOTSTRAP_REQUIRED",
    130: "STREAMS_INVALID_TOPOLOGY",
    131: "STREAMS_INVALID_TOPOLOGY_EPOCH",
    132: "STREAMS_TOPOLOGY_FENCED",
    133: "SHARE_SESSION_LIMIT_REACHED",
}


def error_name(code: int) -> str:
    """The name Kafka's Errors enum gives a code (0 -> NONE, 36 -> TOPIC_ALREADY_EXISTS)."""
    if code == 0:
        return "NONE"
    return _KAFKA_NAMES.get(code) or str(Errors.for_code(code).message)


def topic_id_text(value: Any) -> str | None:
    """A topic id as Kafka prints it (URL-safe base64, no padding); None for the zero id."""
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        raw = value.bytes
    elif isinstance(value, bytes | bytearray):
        raw = bytes(value)
    else:
        # kafka-python's to_dict() renders ids as hyphenated UUID strings.
        raw = uuid.UUID(str(value)).bytes
    if raw == bytes(16):
        return None
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def topic_id_uuid(text: str) -> uuid.UUID:
    """Inverse of `topic_id_text`."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))




def config_entry(name: str, value: str | None, source: str, read_only: bool,
                 sensitive: bool) -> dict[str, Any]:
    """One CONFIG_ENTRY row; a sensitive value is never kept."""
    return {
        "name": name,
        "value": None if sensitive else value,
        "source": source,
        "read_only": bool(read_only),
        "sensitive": bool(sensitive),
    }



def config_rows(configs: Iterable[Any], only_non_default: bool) -> list[dict[str, Any]]:
    """CONFIG_ENTRY rows, by name, of the config entries of one resource of a
    DescribeConfigs response (version 1 on: each names its source)."""
    rows = []
    for c in sorted(configs, key=lambda c: c.name):
        source = CONFIG_SOURCES.get(int(c.config_source), "UNKNOWN")
        if only_non_default and source not in NON_DEFAULT_SOURCES:
            continue
        rows.append(config_entry(c.name, c.value, source, c.read_only, c.is_sensitive))
    return rows


def retriable(exc: BaseException) -> bool:
    """A broker's answer worth asking again for (a group coordinator still loading its
    offsets, a leader being elected): kafka-python's retriable errors."""
    return isinstance(exc, Errors.KafkaError) and exc.retriable
