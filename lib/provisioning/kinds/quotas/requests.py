"""The client-quota admin requests (KIP-546): DescribeClientQuotas and AlterClientQuotas, and
the audit outcome of each quota result.

kafka-python 3.0.12 has the protocol classes but no admin method for them, so they are built
here and sent to any broker (`compat.send_to_node`; a KRaft broker forwards AlterClientQuotas
to the controller), as the other per-item admin requests are: one result per entity, never
an exception in the middle of a batch.

An entity is a mapping of entity type (`user`, `client-id`, `ip`) to a name, None naming the
type's default entity (what `kafka-configs.sh --entity-default` sets). The product's tables
spell that default `<default>`: `kinds.quotas.names.protocol_name` and `table_name` are the one
place the two spellings meet.

What a Kafka 4.3 broker does with these requests is pinned by
tests/integration/test_quotas_kafka.py; the facts this module relies on:
- the entries of an AlterClientQuotas answer come in any order: they are matched by entity;
- an entity that appears twice in one request gets one answer, INVALID_REQUEST "Ignoring
  duplicate entity", although its first entry was applied: no request here carries an
  entity twice;
- NaN is accepted and stored as a quota value: it is never sent;
- removing a key the entity does not have is answered NONE, so a resent request is the
  same change made again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import kafka.errors as Errors

from provisioning import names, retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.codes import error_name
from provisioning.kafka.compat import send_to_node
from provisioning.kafka.reads import Unreadable, each_cluster
from provisioning.kafka.requests import (
    THROTTLE_PAUSE_LIMIT_S,
    throttled,
    throttled_in,
    wait_out_throttle,
)
from provisioning.kinds.quotas.entities import (
    Entity,
    QuotaEntry,
    alter_request,
    batches,
    describe_request,
    entity_of,
    entry_problems,
)
from provisioning.kinds.quotas.names import (
    REMOVED,
    SET,
)

log = logging.getLogger(__name__)

# Errors that mean "Kafka refused the entity as asked": no retry helps. A 4.3 broker answers
# every refusal of a key, value, name or entity combination with INVALID_REQUEST; the others
# are the authorizer's, an old broker's, a policy's and this module's own refusal.
REJECTIONS = frozenset({
    "INVALID_REQUEST",
    "INVALID_CONFIG",
    "CLUSTER_AUTHORIZATION_FAILED",
    "UNSUPPORTED_VERSION",
    "POLICY_VIOLATION",
    names.INVALID_MANIFEST_ROW,
})
# Errors after which a request that was sent may or may not have changed the quotas: a
# broker's, or the connection lost after the send (kafka-python's exception names).
UNCERTAIN = frozenset({
    "REQUEST_TIMED_OUT",
    "NOT_CONTROLLER",
    "NETWORK_EXCEPTION",
    "UNKNOWN_SERVER_ERROR",
    "KafkaConnectionError",
    "KafkaTimeoutError",
})

# Up to this many entities are read back with one exact filter each; more, with one
# request for every entity of the cluster (a filter names one entity at most).
EXACT_READS = 20

_THROTTLED = Errors.ThrottlingQuotaExceededError.errno
# What kafka-python 3.0.12 raises when a request may have reached the broker but no answer
# came: the connection broke (KafkaConnectionError), or the request timed out on the client
# (RequestTimedOutError, Kafka's code 7, which also closes the connection; KafkaTimeoutError
# from the connection manager's own wait).
_LOST_AFTER_SEND: tuple[type[BaseException], ...] = (
    Errors.KafkaConnectionError, Errors.KafkaTimeoutError, Errors.RequestTimedOutError)
# ... and what it raises when no broker takes the request at all.
_UNREACHABLE = (*_LOST_AFTER_SEND, Errors.NodeNotReadyError)
_USE = "DescribeClientQuotas and AlterClientQuotas (kafka-python has no admin method for them)"


class QuotasUnreadable(Unreadable):
    """DescribeClientQuotas failed as a whole: the cluster's quotas are unknown (never "none").

    error_code / error_name: Kafka's (CLUSTER_AUTHORIZATION_FAILED: the principal lacks
    DESCRIBE_CONFIGS on the cluster; UNSUPPORTED_VERSION: a broker older than 2.6), or -1 and
    kafka-python's exception name when no answer came.
    """

    def __init__(self, cluster: str, error_code: int, error_name: str,
                 error_message: str | None) -> None:
        self.cluster, self.error_code, self.error_message = cluster, error_code, error_message
        super().__init__(cluster, "DescribeClientQuotas", error_name, error_message)


def quota_outcome(error: str, attempts: int, validate_only: bool, removes_only: bool) -> str:
    """The audit outcome of one entity's AlterClientQuotas result.

    error: the result's error_name; attempts: the requests that carried the entity (0: never
    sent, so nothing can have changed); removes_only: the entry's ops all remove a key.
    """
    if error == "NONE":
        if validate_only:
            return names.VALIDATED
        return REMOVED if removes_only else SET
    if error in REJECTIONS:
        return names.REJECTED
    if error in UNCERTAIN and attempts > 0 and not validate_only:
        return names.UNKNOWN
    return names.FAILED


# -- sending ---------------------------------------------------------------------------


class _Unanswered(Exception):
    """A request got no answer: `cause` is what the client raised (after a send that may have
    reached a broker, the first such loss), `sends` how many times it may have reached one
    (0: never sent)."""

    def __init__(self, cause: BaseException, sends: int) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.sends = sends


def _send(admin: ClusterAdmin, build: Callable[[], Any]) -> tuple[Any, int]:
    """Send a request made by `build` (afresh each time: a request keeps the version of its
    first send) to any broker, resending while it was not sent or its answer was lost, until
    the admin's lost deadline (`kafka.request_timeout_ms` from the first loss, shared by the
    admin's requests so a cluster that stays away costs it once); (the response, the sends
    that may have reached a broker). Raises _Unanswered.

    Both requests are safe to resend: DescribeClientQuotas reads, and AlterClientQuotas sets
    each key to a value or removes it (a removal finds nothing the second time, answered NONE).
    """
    throttle_deadline = retry.deadline_in(THROTTLE_PAUSE_LIMIT_S)
    sends = 0
    # The first loss after a send: what the caller reports, whatever failed after it (a
    # node backing off is no less uncertain about the request already sent).
    lost: BaseException | None = None

    def send() -> Any:
        nonlocal sends, lost
        try:
            response = send_to_node(admin.client, None, build(), use=_USE)
        except _LOST_AFTER_SEND as exc:
            sends += 1
            lost = lost or exc
            raise
        admin.lost_deadline = None
        return response

    def verdict(exc: BaseException, at: float) -> retry.Resend | None:
        # Never sent. A connection paused by a throttle (KIP-219) refuses sends until the
        # throttle ends; any other node is backing off after a lost connection.
        if isinstance(exc, Errors.NodeNotReadyError) and throttled(admin):
            return retry.Resend(throttle_deadline)
        if not isinstance(exc, _UNREACHABLE):
            return None
        if admin.lost_deadline is None:
            admin.lost_deadline = at + admin.kafka.request_timeout_ms / 1000
        cause = lost or exc
        return retry.Resend(admin.lost_deadline, lambda: log.warning(
            "cluster %s: a client-quota request was not answered (%s); resending",
            admin.cluster.name, type(cause).__name__))

    try:
        response = retry.resend(send, verdict)
    except (Errors.KafkaError, OSError) as exc:
        # Unanswered until the deadline, or refused before the send
        # (IncompatibleBrokerVersion: the broker lacks the API; UnknownBrokerIdError: no
        # broker known).
        raise _Unanswered(lost or exc, sends) from exc
    return response, sends + 1


def _code_of(exc: BaseException) -> tuple[int, str]:
    """Kafka's code and name of what the client raised (REQUEST_TIMED_OUT: no answer in
    `request_timeout_ms`; UNSUPPORTED_VERSION: the broker lacks the API), else -1 and the
    exception's name."""
    if isinstance(exc, Errors.BrokerResponseError) and isinstance(exc.errno, int) \
            and exc.errno > 0:
        return exc.errno, error_name(exc.errno)
    return -1, type(exc).__name__


# -- DescribeClientQuotas --------------------------------------------------------------


def describe_client_quotas(admin: ClusterAdmin, entities: Sequence[Entity] | None = None
                           ) -> dict[Entity, dict[str, float]]:
    """The quotas the cluster holds: entity -> {key: value}.

    entities: None for every entity of the cluster (an entity without a quota is not one);
      else exactly these entities, {} for one that holds none (read back after an alter:
      one exact request each up to EXACT_READS entities, else one request for all).
    Raises QuotasUnreadable when the request fails as a whole.
    """
    if entities is None:
        return _described(admin, None)
    if len(entities) <= EXACT_READS:
        found: dict[Entity, dict[str, float]] = {}
        for entity in entities:
            found[entity] = _described(admin, entity).get(entity, {})
        return found
    every = _described(admin, None)
    return {entity: every.get(entity, {}) for entity in entities}


def _described(admin: ClusterAdmin, entity: Entity | None) -> dict[Entity, dict[str, float]]:
    try:
        response, _ = _send(admin, lambda: describe_request(entity))
    except _Unanswered as lost:
        code, name = _code_of(lost.cause)
        raise QuotasUnreadable(admin.cluster.name, code, name,
                               str(lost.cause) or type(lost.cause).__name__) from lost.cause
    code = int(response.error_code)
    if code:
        raise QuotasUnreadable(admin.cluster.name, code, error_name(code),
                               response.error_message or None)
    return {entity_of(e.entity): {v.key: float(v.value) for v in e.values}
            for e in response.entries or []}


# -- AlterClientQuotas -----------------------------------------------------------------


def _result(code: int, message: str | None, attempts: int) -> dict[str, Any]:
    # An unset nullable string decodes as "": no message is None, as elsewhere in the audit.
    return {"error_code": code, "error_name": error_name(code),
            "error_message": message or None, "attempts": attempts}


def _exception_result(exc: BaseException, attempts: int) -> dict[str, Any]:
    code, name = _code_of(exc)
    message = str(exc)[:2000] or type(exc).__name__
    return {"error_code": code, "error_name": name,
            "error_message": message if attempts else f"not sent: {message}",
            "attempts": attempts}


def _unanswered(attempts: int) -> dict[str, Any]:
    return {"error_code": -1, "error_name": "UNKNOWN_SERVER_ERROR",
            "error_message": "the broker's response did not answer this entity",
            "attempts": attempts}


def alter_client_quotas(admin: ClusterAdmin, entries: Sequence[QuotaEntry],
                        validate_only: bool, batch_size: int) -> list[dict[str, Any]]:
    """AlterClientQuotas in requests of at most `batch_size` entities; a result per entry, in
    order: error_code (0: the change is made, or would be with validate_only), error_name,
    error_message, attempts (the requests that carried it; 0: never sent). Never raises for
    the broker's or the network's doing: map each result with `quota_outcome`.

    Each entity is answered on its own: the broker makes the good entries of a request and
    refuses the bad ones. An entry `entry_problems` names is never sent (INVALID_MANIFEST_ROW).
    An entity the broker throttled (THROTTLING_QUOTA_EXCEEDED) is sent again after the
    throttle time, up to `kafka.throttle_retries` times.

    A request whose answer was lost is sent again, unchanged, until the admin's lost deadline:
    the same change sent twice, which is idempotent (a key set to the same value again, a
    removal that finds the key gone answered NONE), so its second answer is the change's.
    A request that stays unanswered leaves its entities REQUEST_TIMED_OUT, KafkaConnectionError
    or KafkaTimeoutError with attempts > 0 (`unknown`: it may have been applied), and the
    batches after it are not sent (NOT_SENT, attempts 0: `failed`): the cluster did not
    answer for a whole request timeout, and each of them would wait as long again.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    results: list[dict[str, Any] | None] = [None] * len(entries)
    problems = entry_problems(entries)
    for i, problem in problems.items():
        results[i] = {"error_code": -1, "error_name": names.INVALID_MANIFEST_ROW,
                      "error_message": f"not sent: {problem}", "attempts": 0}
    sendable = [i for i in range(len(entries)) if i not in problems]
    gone: BaseException | None = None
    for batch in batches(sendable, batch_size):
        if gone is not None:
            for i in batch:
                results[i] = {"error_code": -1, "error_name": names.NOT_SENT, "attempts": 0,
                              "error_message": "not sent: an earlier request of this change "
                                               f"went unanswered ({gone})"[:2000]}
            continue
        answered, gone = _alter_batch(admin, [entries[i] for i in batch], validate_only)
        for i, answer in zip(batch, answered, strict=True):
            results[i] = answer
    return [r if r is not None else _unanswered(0) for r in results]


def _alter_batch(admin: ClusterAdmin, batch: list[QuotaEntry], validate_only: bool
                 ) -> tuple[list[dict[str, Any]], BaseException | None]:
    """One batch of distinct entities, again for the ones the broker throttled; its results,
    and what the client raised when the cluster did not answer it (else None)."""
    gone: BaseException | None = None
    results: list[dict[str, Any] | None] = [None] * len(batch)
    attempts = [0] * len(batch)
    pending = list(range(len(batch)))

    def send_pending(_rounds: int) -> retry.Throttled | None:
        nonlocal gone, pending
        sending = [batch[i] for i in pending]
        try:
            response, sends = _send(admin, partial(alter_request, sending, validate_only))
        except _Unanswered as lost:
            log.warning("cluster %s: AlterClientQuotas of %d entit(ies) unanswered: %s",
                        admin.cluster.name, len(pending), lost.cause)
            for i in pending:
                results[i] = _exception_result(lost.cause, attempts[i] + lost.sends)
            if isinstance(lost.cause, _UNREACHABLE):
                gone = lost.cause
            return None
        answers = {entity_of(item.entity): item for item in response.entries}
        throttled = []
        for i in pending:
            attempts[i] += sends
            item = answers.get(batch[i].entity)
            if item is None:
                results[i] = _unanswered(attempts[i])
                continue
            code = int(item.error_code)
            results[i] = _result(code, item.error_message, attempts[i])
            if code == _THROTTLED:
                throttled.append(i)
        pending = throttled
        return throttled_in(response, len(throttled)) if throttled else None

    wait_out_throttle(admin, send_pending, "client-quota entit(ies)")
    return [r if r is not None else _unanswered(0) for r in results], gone


# -- the run's view --------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterQuotas:
    """A cluster's live quotas (entity -> {key: value}), or why they could not be read
    (error name, message): its quotas are unknown then, never "none"."""

    quotas: Mapping[Entity, Mapping[str, float]]
    problem: tuple[str, str] | None = None


def quota_states(clusters: Sequence[ClusterConf], credentials: Mapping[str, Credentials],
                 kafka: KafkaConf) -> dict[str, ClusterQuotas]:
    """Every cluster's live quotas (one DescribeClientQuotas each, from the driver); a
    cluster whose quotas cannot be read (the principal lacks DESCRIBE_CONFIGS on it, a
    broker older than 2.6) has its problem instead, and the others are still read."""
    return each_cluster(clusters, credentials, kafka, lambda admin: ClusterQuotas(
        describe_client_quotas(admin)), lambda problem: ClusterQuotas({}, problem))
