"""Per-topic error codes mapped to audit outcomes (every code has exactly one)."""

from __future__ import annotations

from provisioning import names

# Per-topic errors that mean "the broker refused this topic as asked": no retry helps.
REJECTIONS = frozenset({
    "POLICY_VIOLATION",
    "INVALID_CONFIG",
    "INVALID_PARTITIONS",
    "INVALID_REPLICATION_FACTOR",
    "INVALID_REPLICA_ASSIGNMENT",
    "INVALID_TOPIC_EXCEPTION",
    "INVALID_REQUEST",
    "TOPIC_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "UNSUPPORTED_VERSION",
})
# Errors after which the request may or may not have taken effect.
UNCERTAIN = frozenset({"REQUEST_TIMED_OUT", "NOT_CONTROLLER", "NETWORK_EXCEPTION"})


def create_outcome(error_name: str, validate_only: bool) -> str:
    """The audit outcome of one CreateTopics result."""
    if error_name == "NONE":
        return names.VALIDATED if validate_only else names.CREATED
    if error_name == names.TOPIC_ALREADY_EXISTS:
        return names.ALREADY_PRESENT
    if error_name in REJECTIONS:
        return names.REJECTED
    if error_name in UNCERTAIN and not validate_only:
        return names.UNKNOWN
    return names.FAILED


def delete_outcome(error_name: str) -> str:
    """The audit outcome of one DeleteTopics result."""
    if error_name == "NONE":
        return names.DELETED
    if error_name in ("UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID"):
        return names.ALREADY_ABSENT
    if error_name in ("TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"):
        return names.REJECTED
    if error_name in UNCERTAIN:
        return names.UNKNOWN
    return names.FAILED


def alter_outcome(error_name: str, validate_only: bool) -> str:
    """The audit outcome of one IncrementalAlterConfigs or CreatePartitions result."""
    if error_name == "NONE":
        return names.VALIDATED if validate_only else names.ALTERED
    if error_name in REJECTIONS or error_name == "UNKNOWN_TOPIC_OR_PARTITION":
        return names.REJECTED
    if error_name in UNCERTAIN and not validate_only:
        return names.UNKNOWN
    return names.FAILED
