"""The SCRAM credential admin requests (KIP-554): DescribeUserScramCredentials and
AlterUserScramCredentials, and the audit outcome of each credential's answer.

kafka-python 3.0's admin methods for them answer a user with an error message and no code,
so the requests are built from its protocol classes and sent to any broker
(`compat.send_to_node`; a KRaft broker forwards the alteration to the controller). The
salted password is derived here (PBKDF2, kafka-python's `UserScramCredentialUpsertion`,
with a random salt) from the password the driver read, in memory; nothing here logs or
raises a password, a salt or a salted password.

What a Kafka 4.x controller does (ScramControlManager): a request naming a user twice is
refused for that user (DUPLICATE_RESOURCE), so no request here names a user twice (its two
mechanisms go in two requests); iterations outside 4096..16384 are UNACCEPTABLE_CREDENTIAL;
deleting a credential that does not exist is RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kafka.errors as Errors
from kafka.admin import UserScramCredentialUpsertion
from kafka.protocol.admin import (
    AlterUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequest,
)

from provisioning import names
from provisioning.conf import ClusterConf, Credentials, KafkaConf, Secret
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.codes import error_name
from provisioning.kafka.compat import send_to_node
from provisioning.kafka.reads import Unreadable, each_cluster
from provisioning.kafka.requests import Unanswered, send_resending
from provisioning.kinds.users.names import DELETED, MECHANISM_CODES, UPSERTED

log = logging.getLogger(__name__)

_NAMES = {code: name for name, code in MECHANISM_CODES.items()}
_USE = "DescribeUserScramCredentials and AlterUserScramCredentials with per-user codes"
_NOT_FOUND = Errors.ResourceNotFoundError.errno
# The broker refused the credential as asked: no retry helps.
REJECTIONS = frozenset({"UNACCEPTABLE_CREDENTIAL", "UNSUPPORTED_SASL_MECHANISM",
                        "DUPLICATE_RESOURCE", "CLUSTER_AUTHORIZATION_FAILED",
                        "UNSUPPORTED_VERSION", "INVALID_REQUEST", "POLICY_VIOLATION"})
# A request that may or may not have changed the credential.
UNCERTAIN = frozenset({"REQUEST_TIMED_OUT", "NOT_CONTROLLER", "NETWORK_EXCEPTION",
                       "UNKNOWN_SERVER_ERROR", "KafkaConnectionError", "KafkaTimeoutError"})


@dataclass(frozen=True)
class Change:
    """One credential to set (`password` given) or delete (None)."""

    user: str
    mechanism: str
    iterations: int | None = None
    password: Secret | None = None



def _send(admin: ClusterAdmin, request: Any) -> tuple[Any, int]:
    """`request` sent to any broker, again after a lost answer (`send_resending`).
    Resending is safe: the same salted password set again is the same credential, and a
    deletion found done is answered RESOURCE_NOT_FOUND. Raises Unanswered."""
    return send_resending(admin, lambda: send_to_node(admin.client, None, request, use=_USE),
                          "a SCRAM credential request")


def describe_credentials(admin: ClusterAdmin, users: Sequence[str] | None = None
                         ) -> dict[str, dict[str, int]]:
    """user -> {mechanism: iterations} of the cluster's credentials (None: every user; else
    exactly `users`, {} for one without any). Raises `Unreadable` when the request fails
    as a whole (CLUSTER_AUTHORIZATION_FAILED: the principal lacks DESCRIBE on the cluster)."""
    request = DescribeUserScramCredentialsRequest(users=None if users is None else [
        DescribeUserScramCredentialsRequest.UserName(name=u) for u in users])
    def unreadable(error: str, message: str | None) -> Unreadable:
        return Unreadable(admin.cluster.name, "DescribeUserScramCredentials", error, message)

    try:
        response, _ = _send(admin, request)
    except (Unanswered, Errors.KafkaError) as exc:
        cause = exc.cause if isinstance(exc, Unanswered) else exc
        raise unreadable(type(cause).__name__, str(cause)) from exc
    if int(response.error_code):
        raise unreadable(error_name(int(response.error_code)), response.error_message)
    found: dict[str, dict[str, int]] = {u: {} for u in users or ()}
    for result in response.results:
        code = int(result.error_code)
        if code and code != _NOT_FOUND:
            raise unreadable(error_name(code), result.error_message)
        found[result.user] = {_NAMES.get(int(c.mechanism), str(c.mechanism)): int(c.iterations)
                              for c in (result.credential_infos or [])} if not code else {}
    return found


def rounds(changes: Sequence[Change], batch_size: int) -> Iterator[list[int]]:
    """Indexes of `changes` in requests of at most `batch_size`, none naming a user twice."""
    pending = list(range(len(changes)))
    while pending:
        first: dict[str, int] = {}
        for i in pending:
            first.setdefault(changes[i].user, i)
        once = sorted(first.values())
        pending = [i for i in pending if i not in set(once)]
        for start in range(0, len(once), batch_size):
            yield once[start:start + batch_size]


def _upsertion(change: Change) -> Any:
    assert change.password is not None and change.iterations is not None
    derived = UserScramCredentialUpsertion(change.user, change.mechanism,
                                           change.password.reveal(), change.iterations)
    return AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
        name=change.user, mechanism=MECHANISM_CODES[change.mechanism],
        iterations=change.iterations, salt=derived.salt,
        salted_password=derived.salted_password)


def alter_credentials(admin: ClusterAdmin, changes: Sequence[Change], batch_size: int,
                      sent: Callable[[Sequence[Change]], None] = lambda _: None
                      ) -> list[dict[str, Any]]:
    """AlterUserScramCredentials in requests of at most `batch_size` credentials; a result
    per change, in order: error_code, error_name, error_message, attempts (0: never sent),
    `resent` (sent again after a lost answer). Never raises for the broker's or the
    network's doing. `sent` is told of each request's changes just before it goes."""
    results: list[dict[str, Any]] = [{}] * len(changes)
    gone: str | None = None
    for batch in rounds(changes, batch_size):
        if gone is not None:
            for i in batch:
                results[i] = {"error_code": -1, "error_name": names.NOT_SENT, "attempts": 0,
                              "error_message": f"not sent: an earlier request went "
                                               f"unanswered ({gone})"}
            continue
        request = AlterUserScramCredentialsRequest(
            deletions=[AlterUserScramCredentialsRequest.ScramCredentialDeletion(
                name=changes[i].user, mechanism=MECHANISM_CODES[changes[i].mechanism])
                for i in batch if changes[i].password is None],
            upsertions=[_upsertion(changes[i]) for i in batch
                        if changes[i].password is not None])
        sent([changes[i] for i in batch])
        try:
            response, sends = _send(admin, request)
        except Unanswered as lost:
            gone = type(lost.cause).__name__
            for i in batch:
                results[i] = {"error_code": -1, "error_name": gone, "attempts": lost.sends,
                              "error_message": f"no answer within kafka.request_timeout_ms "
                                               f"({gone})", "resent": lost.sends > 1}
            continue
        answers = {r.user: r for r in response.results}
        for i in batch:
            answer = answers.get(changes[i].user)
            code = -1 if answer is None else int(answer.error_code)
            results[i] = {"error_code": code, "attempts": sends, "resent": sends > 1,
                          "error_name": "UNKNOWN_SERVER_ERROR" if answer is None
                          else error_name(code),
                          "error_message": "the broker's response did not answer this user"
                          if answer is None else answer.error_message or None}
    return results


def outcome(change: Change, result: Mapping[str, Any]) -> str:
    """The audit outcome of one credential's AlterUserScramCredentials result. A deletion
    the broker found done (RESOURCE_NOT_FOUND) is `deleted`: the credential is gone."""
    error = result["error_name"]
    if error == "NONE" or (error == "RESOURCE_NOT_FOUND" and change.password is None):
        return UPSERTED if change.password is not None else DELETED
    if error in REJECTIONS or error == "RESOURCE_NOT_FOUND":
        return names.REJECTED
    if error in UNCERTAIN and result["attempts"] > 0:
        return names.UNKNOWN
    return names.FAILED


@dataclass(frozen=True)
class ClusterUsers:
    """A cluster's live credentials (user -> {mechanism: iterations}), or why they could not
    be read (error name, message): unknown then, never "none"."""

    users: Mapping[str, Mapping[str, int]]
    problem: tuple[str, str] | None = None


def user_states(clusters: Sequence[ClusterConf], credentials: Mapping[str, Credentials],
                kafka: KafkaConf) -> dict[str, ClusterUsers]:
    """Every cluster's live credentials (one DescribeUserScramCredentials each, from the
    driver); a cluster whose credentials cannot be read has its problem instead."""
    return each_cluster(clusters, credentials, kafka, lambda admin: ClusterUsers(
        describe_credentials(admin)), lambda problem: ClusterUsers({}, problem))
