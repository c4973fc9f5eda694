"""The admin requests: CreateTopics, DeleteTopics, IncrementalAlterConfigs (KIP-339) and
CreatePartitions (KIP-195); built, sent to the controller, retried when throttled
(KIP-599), answered with one result per topic (`raise_errors=False` semantics).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import kafka.errors as Errors
from kafka.protocol.admin import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    IncrementalAlterConfigsRequest,
)

from provisioning import names, retry
from provisioning.kafka.batching import TopicRequest
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.codes import config_rows, error_name, topic_id_text, topic_id_uuid
from provisioning.kafka.compat import forget_controller, send_to_controller, throttle_delay_ms

log = logging.getLogger(__name__)

# How long a request may wait for a throttled connection to reopen before it fails.
THROTTLE_PAUSE_LIMIT_S = 300.0
_THROTTLED = Errors.ThrottlingQuotaExceededError.errno

T = TypeVar("T")
R = TypeVar("R")
Answers = Iterable[tuple[str, dict[str, Any]]]


def create_topics(admin: ClusterAdmin, requests: Sequence[TopicRequest], validate_only: bool,
                  timeout_ms: int | None = None) -> list[dict[str, Any]]:
    """One CreateTopics request (more when throttled); a result per topic, in order."""
    # The KIP-4 timeout bounds the wait for creations to complete; a validateOnly request
    # completes nothing, so only the client's request timeout applies to it.
    timeout = timeout_ms or (admin.kafka.request_timeout_ms if validate_only
                             else admin.kafka.operation_timeout_ms)

    resent: list[BaseException] = []

    def send(pending: list[TopicRequest]) -> Any:
        request = CreateTopicsRequest(topics=[_creatable(r) for r in pending],
                                      timeout_ms=timeout, validate_only=validate_only)
        return _to_controller(admin, request, lambda resp: (t.error_code for t in resp.topics),
                              resent)

    def answers(response: Any) -> Answers:
        return ((topic.name, _create_result(topic)) for topic in response.topics)

    results = _retry_throttled(admin, requests, lambda r: r.name, send, answers)
    return [_mark_resent(results[r.name], resent) for r in requests]


def _mark_resent(result: dict[str, Any], resent: Sequence[BaseException]) -> dict[str, Any]:
    """`resent_after`: the first lost answer before a resend (popped by the caller, which
    reads TOPIC_ALREADY_EXISTS / UNKNOWN_TOPIC_ID as the lost request's doing)."""
    if resent:
        result["resent_after"] = str(resent[0]) or type(resent[0]).__name__
    return result


def _creatable(r: TopicRequest) -> Any:
    topic_cls = CreateTopicsRequest.CreatableTopic
    assignment_cls = topic_cls.CreatableReplicaAssignment
    config_cls = topic_cls.CreatableTopicConfig
    return topic_cls(
        name=r.name,
        num_partitions=-1 if r.replica_assignment or r.partitions is None else r.partitions,
        replication_factor=-1 if r.replica_assignment or r.replication_factor is None
        else r.replication_factor,
        assignments=[assignment_cls(partition_index=int(p), broker_ids=list(b))
                     for p, b in sorted((r.replica_assignment or {}).items())],
        configs=[config_cls(name=k, value=v) for k, v in sorted(r.configs.items())],
    )


def delete_topics(admin: ClusterAdmin, topics: Sequence[tuple[str, str | None]],
                  timeout_ms: int | None = None) -> list[dict[str, Any]]:
    """Delete (name, topic_id) pairs; by id when known, so a recreated name is safe."""
    state_cls = DeleteTopicsRequest.DeleteTopicState
    by_id = {tid: name for name, tid in topics if tid}

    resent: list[BaseException] = []

    def send(pending: list[tuple[str, str | None]]) -> Any:
        request = DeleteTopicsRequest(
            topics=[state_cls(topic_id=topic_id_uuid(tid)) if tid else state_cls(name=name)
                    for name, tid in pending],
            timeout_ms=timeout_ms or admin.kafka.operation_timeout_ms,
        )
        return _to_controller(admin, request,
                              lambda resp: (r.error_code for r in resp.responses), resent)

    def answers(response: Any) -> Answers:
        for r in response.responses:
            name = r.name or by_id.get(topic_id_text(r.topic_id) or "", "")
            code = int(r.error_code)
            yield name, {"topic": name, "topic_id": topic_id_text(r.topic_id),
                         "error_code": code, "error_name": error_name(code),
                         "error_message": getattr(r, "error_message", None)}

    results = _retry_throttled(admin, topics, lambda t: t[0], send, answers)
    return [_mark_resent(results[name], resent) for name, _ in topics]


# ConfigResource type of a topic (DescribeConfigs, AlterConfigs).
_TOPIC_RESOURCE = 2


def alter_configs(admin: ClusterAdmin,
                  topics: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
                  validate_only: bool) -> list[dict[str, Any]]:
    """One IncrementalAlterConfigs request for (topic, [CONFIG_OP]) pairs; a result per
    topic, in order. A topic's operations are applied together or not at all."""
    resource_cls = IncrementalAlterConfigsRequest.AlterConfigsResource
    config_cls = resource_cls.AlterableConfig

    def send(pending: list[tuple[str, Sequence[Mapping[str, Any]]]]) -> Any:
        request = IncrementalAlterConfigsRequest(
            resources=[resource_cls(
                resource_type=_TOPIC_RESOURCE, resource_name=topic,
                configs=[config_cls(name=o["name"], config_operation=names.CONFIG_OPS[o["op"]],
                                    value=o["value"]) for o in ops])
                for topic, ops in pending],
            validate_only=validate_only)
        return _to_controller(admin, request,
                              lambda resp: (r.error_code for r in resp.responses))

    def answers(response: Any) -> Answers:
        for r in response.responses:
            code = int(r.error_code)
            yield r.resource_name, {"topic": r.resource_name, "error_code": code,
                                    "error_name": error_name(code),
                                    "error_message": r.error_message}

    results = _retry_throttled(admin, topics, lambda t: t[0], send, answers)
    return [results[topic] for topic, _ in topics]


def create_partitions(admin: ClusterAdmin,
                      topics: Sequence[tuple[str, int, Sequence[Sequence[int]] | None]],
                      validate_only: bool) -> list[dict[str, Any]]:
    """One CreatePartitions request for (topic, new total count, replicas of each new
    partition or None); a result per topic, in order."""
    topic_cls = CreatePartitionsRequest.CreatePartitionsTopic
    assignment_cls = topic_cls.CreatePartitionsAssignment
    timeout = (admin.kafka.request_timeout_ms if validate_only
               else admin.kafka.operation_timeout_ms)

    def send(pending: list[tuple[str, int, Sequence[Sequence[int]] | None]]) -> Any:
        request = CreatePartitionsRequest(
            topics=[topic_cls(name=topic, count=count,
                              assignments=None if assignment is None else [
                                  assignment_cls(broker_ids=list(b)) for b in assignment])
                    for topic, count, assignment in pending],
            timeout_ms=timeout, validate_only=validate_only)
        return _to_controller(admin, request, lambda resp: (r.error_code for r in resp.results))

    def answers(response: Any) -> Answers:
        for r in response.results:
            code = int(r.error_code)
            yield r.name, {"topic": r.name, "error_code": code, "error_name": error_name(code),
                           "error_message": r.error_message}

    results = _retry_throttled(admin, topics, lambda t: t[0], send, answers)
    return [results[topic] for topic, _, _ in topics]


def _retry_throttled(admin: ClusterAdmin, items: Sequence[T], key: Callable[[T], str],
                     send: Callable[[list[T]], Any], answers: Callable[[Any], Answers]
                     ) -> dict[str, dict[str, Any]]:
    """Send `items`, then again the ones the broker throttled (THROTTLING_QUOTA_EXCEEDED)
    after its throttle time, up to `kafka.throttle_retries` times (`retry.wait_out_throttle`);
    a result per key.

    A key the broker did not answer for gets a result saying so: it never vanishes.
    """
    pending = list(items)
    results: dict[str, dict[str, Any]] = {}

    def send_pending(attempts: int) -> retry.Throttled | None:
        nonlocal pending
        response = send(pending)
        throttled = set()
        answered = set()
        for name, row in answers(response):
            row["attempts"] = attempts
            results[name] = row
            answered.add(name)
            if row["error_code"] == _THROTTLED:
                throttled.add(name)
        for item in pending:
            if key(item) not in answered:
                results[key(item)] = _missing_result(key(item), attempts)
        pending = [item for item in pending if key(item) in throttled]
        return throttled_in(response, len(pending)) if pending else None

    if pending:
        wait_out_throttle(admin, send_pending, "topic(s)")
    return results


def throttled(admin: ClusterAdmin) -> bool:
    """Whether a broker's throttle keeps the admin's connections paused (KIP-219): a
    NodeNotReadyError meanwhile is the throttle's (wait it out, up to
    THROTTLE_PAUSE_LIMIT_S), not a lost connection's."""
    return throttle_delay_ms(admin.client) > 0


def throttled_in(response: Any, items: int) -> retry.Throttled:
    """What the broker throttled of one answer: `items`, and the throttle time it asked for
    (KIP-599)."""
    return retry.Throttled(items, int(getattr(response, "throttle_time_ms", 0) or 0))


def wait_out_throttle(admin: ClusterAdmin, send: Callable[[int], retry.Throttled | None],
                      what: str) -> None:
    """`send(attempt)` again while the broker throttles some of its items (`what`:
    "topic(s)", ...), after the throttle time it asked for, up to `kafka.throttle_retries`
    times (`retry.wait_out_throttle`)."""

    def announce(throttled: retry.Throttled) -> None:
        log.info("cluster %s: %d %s throttled, retrying in %d ms", admin.cluster.name,
                 throttled.items, what, throttled.wait_ms)

    retry.wait_out_throttle(send, admin.kafka.throttle_retries, announce)


def _to_controller(admin: ClusterAdmin, request: Any, codes: Callable[[Any], Iterable[int]],
                   resent: list[BaseException] | None = None) -> Any:
    """Send `request` to the controller; on a lost controller, ask the cluster again and
    resend, for up to `kafka.request_timeout_ms` from the first loss (`retry.resend`).

    A request never sent (the node was not ready) is always resent. One that may have
    reached the broker (the connection broke before its answer) is resent only when
    `resent` is given, i.e. when the caller settles a second answer for a change the first
    request made (TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_ID); the error is appended to it.
    """
    # After a response carrying a throttle time, kafka-python pauses the connection and
    # refuses sends with NodeNotReadyError until the throttle ends (KIP-219): `throttled`.
    throttle_deadline = retry.deadline_in(THROTTLE_PAUSE_LIMIT_S)

    def send() -> Any:
        response = send_to_controller(admin.client, request, codes)
        admin.lost_deadline = None
        return response

    def verdict(exc: BaseException, at: float) -> retry.Resend | None:
        if isinstance(exc, Errors.NodeNotReadyError) and throttled(admin):
            return retry.Resend(throttle_deadline)
        if isinstance(exc, Errors.NodeNotReadyError):
            return _lost_controller(admin, exc, at)
        if isinstance(exc, Errors.KafkaConnectionError) and resent is not None:
            return _lost_controller(admin, exc, at, resent)
        return None

    return retry.resend(send, verdict)


# The controller routing with its resends, for the other request modules of this package.
to_controller = _to_controller


def _lost_controller(admin: ClusterAdmin, exc: BaseException, at: float,
                    resent: list[BaseException] | None = None) -> retry.Resend:
    """The controller went away (at `at`): resend until the admin's lost deadline, set at
    its first loss, after forgetting the controller so the next send asks the cluster
    again; `exc` is appended to `resent` when given."""
    if admin.lost_deadline is None:
        admin.lost_deadline = at + admin.kafka.request_timeout_ms / 1000

    def before() -> None:
        log.warning("cluster %s: the controller connection was lost (%s); asking the cluster "
                    "for its controller and resending", admin.cluster.name, exc)
        forget_controller(admin.client)
        if resent is not None:
            resent.append(exc)

    return retry.Resend(admin.lost_deadline, before)


def _create_result(topic: Any) -> dict[str, Any]:
    code = int(topic.error_code)
    config_error = getattr(topic, "topic_config_error_code", None)
    # KIP-525: without DescribeConfigs the broker sends an empty list and an error
    # code; the configs are unknown, not "nothing set". A refused topic has none at all.
    configs = None if config_error or code else getattr(topic, "configs", None)
    partitions = getattr(topic, "num_partitions", -1)
    rf = getattr(topic, "replication_factor", -1)
    return {
        "topic": topic.name,
        "topic_id": topic_id_text(getattr(topic, "topic_id", None)),
        "error_code": code,
        "error_name": error_name(code),
        "error_message": getattr(topic, "error_message", None),
        "result_partitions": partitions if partitions is not None and partitions >= 0 else None,
        "result_replication_factor": rf if rf is not None and rf >= 0 else None,
        "result_configs": None if configs is None else config_rows(configs, False),
        "topic_config_error_code": int(config_error) if config_error else None,
    }


def _missing_result(name: str, attempts: int) -> dict[str, Any]:
    return {
        "topic": name,
        "topic_id": None,
        "error_code": -1,
        "error_name": "UNKNOWN_SERVER_ERROR",
        "error_message": "the broker's response did not mention this topic",
        "attempts": attempts,
    }


# Not sent (the node was not ready), or sent and its answer lost: worth sending again.
LOST: tuple[type[BaseException], ...] = (
    Errors.NodeNotReadyError, Errors.KafkaConnectionError, Errors.KafkaTimeoutError,
    Errors.RequestTimedOutError)


class Unanswered(Exception):
    """No answer within `kafka.request_timeout_ms` of the first loss: the last error, and
    how many sends may have reached a broker."""

    def __init__(self, cause: BaseException, sends: int) -> None:
        super().__init__(type(cause).__name__)
        self.cause, self.sends = cause, sends


def send_resending(admin: ClusterAdmin, send: Callable[[], R], what: str) -> tuple[R, int]:
    """`send()`'s answer, sent again while it could not be sent or its answer was lost
    (`LOST`), for up to `kafka.request_timeout_ms` from the first loss (`retry.resend`),
    each resend logged as `what` "was not answered"; (the answer, the sends that may have
    reached a broker). Only for requests that may be sent twice. Raises Unanswered."""
    deadline: float | None = None
    sends = 0

    def once() -> R:
        nonlocal sends
        try:
            return send()
        except LOST as exc:
            sends += 0 if isinstance(exc, Errors.NodeNotReadyError) else 1
            raise

    def verdict(exc: BaseException, at: float) -> retry.Resend | None:
        nonlocal deadline
        if not isinstance(exc, LOST):
            return None
        deadline = deadline or at + admin.kafka.request_timeout_ms / 1000
        return retry.Resend(deadline, lambda: log.warning(
            "cluster %s: %s was not answered (%s); resending", admin.cluster.name, what,
            type(exc).__name__))

    try:
        answer = retry.resend(once, verdict)
    except LOST as exc:
        raise Unanswered(exc, sends) from exc
    return answer, sends + 1
