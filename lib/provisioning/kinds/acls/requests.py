"""The ACL admin requests: DescribeAcls, CreateAcls and DeleteAcls (KIP-4's ACL requests as
Kafka has them today), and the operations the job's principal may perform on the cluster
(DescribeCluster with its authorized operations, KIP-430).

Built from kafka-python's protocol classes and sent to any broker (`compat.send_to_node`),
a result per binding: kafka-python's own helpers say no binding a CreateAcls error belongs
to, drop DeleteAcls' per-binding error codes and leave the authorized operations as bits.

A binding is a mapping of principal, host, resource_type, resource_name, pattern_type,
operation and permission, by Kafka's names (kinds.acls.schema.ACL_BINDING without the cluster).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kafka.errors as Errors
from kafka.admin import ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourceType
from kafka.protocol.admin import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeClusterRequest,
)

from provisioning import names, retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.codes import error_name
from provisioning.kafka.compat import send_to_node
from provisioning.kafka.reads import each_cluster
from provisioning.kafka.requests import (
    THROTTLE_PAUSE_LIMIT_S,
    throttled,
    throttled_in,
    wait_out_throttle,
)
from provisioning.kinds.acls import names as acl_names

log = logging.getLogger(__name__)

Binding = Mapping[str, Any]

# Kafka's codes by name. kafka-python 3.0.12's ACLOperation lacks TWO_PHASE_COMMIT (KIP-939).
RESOURCE_TYPE_CODES = {m.name: int(m) for m in ResourceType}
OPERATION_CODES = {**{m.name: int(m) for m in ACLOperation}, "TWO_PHASE_COMMIT": 15}
PATTERN_TYPE_CODES = {m.name: int(m) for m in ACLResourcePatternType}
PERMISSION_CODES = {m.name: int(m) for m in ACLPermissionType}
_ANY = 1

# v1 brought the pattern type (PREFIXED): an older broker would read every binding LITERAL.
_MIN_VERSION = 1
_SECURITY_DISABLED = Errors.SecurityDisabledError.errno
_THROTTLED = Errors.ThrottlingQuotaExceededError.errno


# What a binding may name: Kafka's concrete values, never a filter's UNKNOWN, ANY or MATCH.
_CONCRETE = {
    "resource_type": RESOURCE_TYPE_CODES,
    "pattern_type": PATTERN_TYPE_CODES,
    "operation": OPERATION_CODES,
    "permission": PERMISSION_CODES,
}
_FILTER_ONLY = ("UNKNOWN", "ANY", "MATCH")


def binding_problem(b: Binding) -> str | None:
    """Why binding `b` cannot go into a CreateAcls or DeleteAcls request (a name Kafka has no
    concrete code for), or None. Row validation refuses these first; this keeps a row that
    got past it from sinking the request of the others."""
    for column, codes in _CONCRETE.items():
        value = b.get(column)
        if value not in codes or value in _FILTER_ONLY:
            known = ", ".join(n for n in codes if n not in _FILTER_ONLY)
            return f"{column}: {value!r} is not one of Kafka's {known}"
    for column in ("principal", "host", "resource_name"):
        if not isinstance(b.get(column), str):
            return f"{column}: is missing"
    return None


def _name_of(codes: Mapping[str, int], code: int) -> str:
    for name, value in codes.items():
        if value == code:
            return name
    return f"UNKNOWN({code})"


def _binding(resource: Any, acl: Any) -> dict[str, Any]:
    return {
        "principal": acl.principal,
        "host": acl.host,
        "resource_type": _name_of(RESOURCE_TYPE_CODES, int(resource.resource_type)),
        "resource_name": resource.resource_name,
        "pattern_type": _name_of(PATTERN_TYPE_CODES, int(resource.pattern_type)),
        "operation": _name_of(OPERATION_CODES, int(acl.operation)),
        "permission": _name_of(PERMISSION_CODES, int(acl.permission_type)),
    }


def _send(admin: ClusterAdmin, build: Callable[[], Any]) -> tuple[Any, bool]:
    """Send a request made by `build` (afresh each time: a request keeps the version of its
    first send) to any broker, resending while it could not be sent or its answer was lost,
    for up to `kafka.request_timeout_ms` from the first loss (`retry.resend`); (the
    response, whether it was resent after a lost answer).

    ACL requests are safe to resend: a binding created twice is created once, and a delete
    finds nothing the second time (the caller reads that knowing it was resent).
    """
    throttle_deadline = retry.deadline_in(THROTTLE_PAUSE_LIMIT_S)
    lost_deadline: float | None = None
    resent = False

    def verdict(exc: BaseException, at: float) -> retry.Resend | None:
        nonlocal lost_deadline
        # Never sent. A connection paused by a throttle (KIP-219) refuses sends until the
        # throttle ends; any other node is backing off after a lost connection.
        if isinstance(exc, Errors.NodeNotReadyError) and throttled(admin):
            return retry.Resend(throttle_deadline)
        if not isinstance(exc, (Errors.NodeNotReadyError, Errors.KafkaConnectionError,
                                Errors.KafkaTimeoutError)):
            return None
        if lost_deadline is None:
            lost_deadline = at + admin.kafka.request_timeout_ms / 1000

        def before() -> None:
            nonlocal resent
            log.warning("cluster %s: an ACL request was not answered (%s); resending",
                        admin.cluster.name, type(exc).__name__)
            resent = resent or not isinstance(exc, Errors.NodeNotReadyError)

        return retry.Resend(lost_deadline, before)

    response = retry.resend(lambda: send_to_node(admin.client, None, build()), verdict)
    return response, resent


def describe_acls(admin: ClusterAdmin) -> list[dict[str, Any]] | None:
    """Every binding of the cluster (DescribeAcls with a filter that matches all); None when
    the cluster has no authorizer (SECURITY_DISABLED: it has no ACL to manage).

    Any other error of the request is raised as the KafkaError of its code (for example
    ClusterAuthorizationFailedError: DescribeAcls needs DESCRIBE on the cluster).
    """

    def build() -> Any:
        return DescribeAclsRequest(
            min_version=_MIN_VERSION, resource_type_filter=_ANY, resource_name_filter=None,
            pattern_type_filter=_ANY, principal_filter=None, host_filter=None,
            operation=_ANY, permission_type=_ANY)

    response, _ = _send(admin, build)
    code = int(response.error_code)
    if code == _SECURITY_DISABLED:
        return None
    if code:
        raise Errors.for_code(code)(response.error_message or error_name(code))
    return [_binding(resource, acl) for resource in response.resources for acl in resource.acls]


def _batches(items: Sequence[Binding], size: int) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield list(range(start, min(start + size, len(items))))


def _result(code: int, message: str | None, attempts: int, **extra: Any) -> dict[str, Any]:
    # An unset nullable string decodes as "": no message is None, as elsewhere in the audit.
    return {"error_code": code, "error_name": error_name(code),
            "error_message": message or None, "attempts": attempts, **extra}


def _unanswered(attempts: int) -> dict[str, Any]:
    return {"error_code": -1, "error_name": "UNKNOWN_SERVER_ERROR",
            "error_message": "the broker's response did not answer this binding",
            "attempts": attempts}


def _throttled_batches(admin: ClusterAdmin, bindings: Sequence[Binding], batch_size: int,
                       send: Callable[[list[Binding]], tuple[Any, bool, list[Any]]],
                       answer: Callable[[Any, int, bool], dict[str, Any]]
                       ) -> list[dict[str, Any]]:
    """Send `bindings` in batches of `batch_size` and again, after the throttle time, the
    ones the broker throttled (THROTTLING_QUOTA_EXCEEDED), up to `kafka.throttle_retries`
    times; a result per binding, in order.

    send: a batch -> (the response, whether it was resent, its per-binding items in the
      batch's order).
    answer: (item, attempts, resent) -> result; a binding the response leaves out gets a
      result saying so.
    """
    results: list[dict[str, Any] | None] = [None] * len(bindings)

    def send_batch(batch: list[int]) -> None:
        pending = batch

        def send_pending(attempts: int) -> retry.Throttled | None:
            nonlocal pending
            response, resent, items = send([bindings[i] for i in pending])
            throttled = []
            for position, index in enumerate(pending):
                if position >= len(items):
                    results[index] = _unanswered(attempts)
                    continue
                result = results[index] = answer(items[position], attempts, resent)
                if result["error_code"] == _THROTTLED:
                    throttled.append(index)
            pending = throttled
            return throttled_in(response, len(throttled)) if throttled else None

        wait_out_throttle(admin, send_pending, "ACL binding(s)")

    for batch in _batches(bindings, batch_size):
        send_batch(batch)
    return [r if r is not None else _unanswered(0) for r in results]


def _creation(b: Binding) -> Any:
    return CreateAclsRequest.AclCreation(
        resource_type=RESOURCE_TYPE_CODES[b["resource_type"]],
        resource_name=b["resource_name"],
        resource_pattern_type=PATTERN_TYPE_CODES[b["pattern_type"]],
        principal=b["principal"],
        host=b["host"],
        operation=OPERATION_CODES[b["operation"]],
        permission_type=PERMISSION_CODES[b["permission"]],
    )


def create_acls(admin: ClusterAdmin, bindings: Sequence[Binding], batch_size: int
                ) -> list[dict[str, Any]]:
    """CreateAcls in batches of `batch_size` bindings; a result per binding, in order:
    error_code (0: the binding exists now), error_name, error_message, attempts.

    Kafka answers each creation at its position in the request; a binding that already
    exists is created again without an error.
    """

    def send(batch: list[Binding]) -> tuple[Any, bool, list[Any]]:
        def build() -> Any:
            return CreateAclsRequest(min_version=_MIN_VERSION,
                                     creations=[_creation(b) for b in batch])

        response, resent = _send(admin, build)
        return response, resent, list(response.results)

    def answer(item: Any, attempts: int, resent: bool) -> dict[str, Any]:
        return _result(int(item.error_code), item.error_message, attempts)

    return _throttled_batches(admin, bindings, batch_size, send, answer)


def _exact_filter(b: Binding) -> Any:
    return DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=RESOURCE_TYPE_CODES[b["resource_type"]],
        resource_name_filter=b["resource_name"],
        pattern_type_filter=PATTERN_TYPE_CODES[b["pattern_type"]],
        principal_filter=b["principal"],
        host_filter=b["host"],
        operation=OPERATION_CODES[b["operation"]],
        permission_type=PERMISSION_CODES[b["permission"]],
    )


def delete_acls(admin: ClusterAdmin, bindings: Sequence[Binding], batch_size: int
                ) -> list[dict[str, Any]]:
    """DeleteAcls in batches of `batch_size` bindings, one exact-match filter each (a LITERAL
    filter never matches the `*` binding nor a PREFIXED one; READ never matches ALL); a
    result per binding, in order: error_code, error_name, error_message, attempts,
    `deleted` (the bindings the filter matched and removed: 0 when it was already absent)
    and `resent` (the request was sent again after an answer was lost: an earlier send may
    have deleted what this one found absent).
    """

    def send(batch: list[Binding]) -> tuple[Any, bool, list[Any]]:
        def build() -> Any:
            return DeleteAclsRequest(min_version=_MIN_VERSION,
                                     filters=[_exact_filter(b) for b in batch])

        response, resent = _send(admin, build)
        return response, resent, list(response.filter_results)

    def answer(item: Any, attempts: int, resent: bool) -> dict[str, Any]:
        code = int(item.error_code)
        if code:
            return _result(code, item.error_message, attempts, deleted=0, resent=resent)
        failed = [m for m in item.matching_acls if int(m.error_code)]
        if failed:
            first = failed[0]
            return _result(int(first.error_code), first.error_message, attempts,
                           deleted=len(item.matching_acls) - len(failed), resent=resent)
        return _result(0, None, attempts, deleted=len(item.matching_acls), resent=resent)

    return _throttled_batches(admin, bindings, batch_size, send, answer)


def authorized_operations(admin: ClusterAdmin) -> set[str] | None:
    """The operations the job's principal may perform on the cluster resource (DescribeCluster
    with include_cluster_authorized_operations, KIP-430), by Kafka's names; None when the
    broker did not say."""

    def build() -> Any:
        return DescribeClusterRequest(include_cluster_authorized_operations=True)

    response, _ = _send(admin, build)
    code = int(response.error_code)
    if code:
        raise Errors.for_code(code)(response.error_message or error_name(code))
    bits = response.authorized_operations
    if bits is None:
        return None
    return {_name_of(OPERATION_CODES, int(b)) for b in bits} - {"UNKNOWN", "ANY"}


def acl_authority(admin: ClusterAdmin) -> tuple[str, str] | None:
    """Why the job may not change this cluster's ACLs, as (error name, message), or None when
    it may: SECURITY_DISABLED (no authorizer), or CLUSTER_AUTHORIZATION_FAILED (no ALTER on
    the cluster, which CreateAcls and DeleteAcls need, or no DESCRIBE to read them), naming
    the principal. When the broker does not say which operations the principal has, the
    requests themselves will."""
    return acl_state(admin).problem


@dataclass(frozen=True)
class ClusterAcls:
    """One cluster's ACLs as the run sees them before planning.

    bindings: every live binding (empty when the cluster has no authorizer or the job may
      not describe its ACLs).
    problem: why the job may not change the cluster's ACLs, as (error name, message), or
      None when it may (see `acl_authority`).
    """

    bindings: list[dict[str, Any]]
    problem: tuple[str, str] | None


def acl_state(admin: ClusterAdmin) -> ClusterAcls:
    """The cluster's live bindings (DescribeAcls) and whether the job may change them
    (`acl_authority`'s answer, from the same DescribeAcls and DescribeCluster's authorized
    operations)."""
    cluster = admin.cluster.name
    who = admin.principal or "the job's principal"
    try:
        live = describe_acls(admin)
    except Errors.ClusterAuthorizationFailedError:
        return ClusterAcls([], (names.CLUSTER_AUTHORIZATION_FAILED,
                             f"{who} may not describe ACLs on cluster {cluster} (DescribeAcls "
                             "needs DESCRIBE on the cluster resource), so its ACLs can be "
                             "neither compared nor changed"))
    if live is None:
        return ClusterAcls([], (acl_names.SECURITY_DISABLED,
                             f"cluster {cluster} has no authorizer (authorizer.class.name is "
                             "not set), so it has no ACL to grant or revoke"))
    operations = authorized_operations(admin)
    if operations is not None and "ALTER" not in operations:
        held = ", ".join(sorted(operations)) or "none"
        return ClusterAcls(live, (
            names.CLUSTER_AUTHORIZATION_FAILED,
            f"{who} may not change ACLs on cluster {cluster}: CreateAcls and DeleteAcls need "
            f"ALTER on the cluster resource (kafka-cluster), and it holds {held}; grant it "
            "ALTER on the cluster, or leave this cluster's ACLs to another principal"))
    return ClusterAcls(live, None)


def acl_states(clusters: Sequence[ClusterConf], credentials: Mapping[str, Credentials],
               kafka: KafkaConf) -> dict[str, ClusterAcls]:
    """Every cluster's `acl_state`, asked from the driver (one DescribeAcls and one
    DescribeCluster per cluster)."""
    return each_cluster(clusters, credentials, kafka, acl_state,
                        lambda problem: ClusterAcls([], problem))
