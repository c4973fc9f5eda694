"""The ACL requests (`provisioning.kinds.acls.requests`) against the session's SASL broker (the
StandardAuthorizer; emptied for this module) and against its plain broker.

Users: `admin` (the super user), `limited` (DESCRIBE and IDEMPOTENT_WRITE on the cluster,
no ALTER) and `nobody` (no ACL at all). Every test that changes the bindings takes them back
to the fixture's own, and reads the broker's whole state.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from dev.devkafka import KafkaCluster
from provisioning.conf import ClusterConf, Credentials, KafkaConf, Secret
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.tasks.common import Row, Sent, for_each_cluster
from provisioning.kinds.acls.requests import (
    acl_authority,
    authorized_operations,
    create_acls,
    delete_acls,
    describe_acls,
)
from provisioning.kinds.acls.schema import ACL_RESULT
from provisioning.kinds.acls.tasks import (
    AUTHORITY,
    BINDINGS,
    GRANT,
    REVOKE,
    VERIFY,
    acl_result,
    acl_results,
    binding_key,
)
from schemas import column_names
from tests.helpers import grant
from tests.support.brokers import ADMIN_PASSWORD, USER_PASSWORD, reset

pytestmark = pytest.mark.integration

CLUSTER = "acl"
KAFKA = KafkaConf(request_timeout_ms=10000)
CLUSTER_OPERATIONS = {"ALTER", "ALTER_CONFIGS", "CLUSTER_ACTION", "CREATE", "DESCRIBE",
                      "DESCRIBE_CONFIGS", "IDEMPOTENT_WRITE"}


def b(principal: str, resource_type: str, resource_name: str, operation: str,
      pattern_type: str = "LITERAL", permission: str = "ALLOW", host: str = "*"
      ) -> dict[str, Any]:
    return {"principal": principal, "host": host, "resource_type": resource_type,
            "resource_name": resource_name, "pattern_type": pattern_type,
            "operation": operation, "permission": permission}


# What the fixture grants `limited`: the only bindings of the cluster between tests.
BASELINE = [b("User:limited", "CLUSTER", "kafka-cluster", "DESCRIBE"),
            b("User:limited", "CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE")]


def key(binding: dict[str, Any]) -> tuple[str, ...]:
    return tuple(binding[k] for k in ("principal", "host", "resource_type", "resource_name",
                                      "pattern_type", "operation", "permission"))


def state(admin: ClusterAdmin) -> list[tuple[str, ...]]:
    """Every binding of the cluster, sorted."""
    found = describe_acls(admin)
    assert found is not None
    return sorted(key(x) for x in found)


def assert_state(admin: ClusterAdmin, expected: list[tuple[str, ...]]) -> None:
    """The cluster's bindings are `expected`, once the broker's view caught up: CreateAcls
    and DeleteAcls are answered once the controller committed them, and the broker's own
    DescribeAcls follows the metadata log a moment later."""
    deadline = time.monotonic() + 15
    while state(admin) != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    assert state(admin) == expected


def ok(attempts: int = 1, **extra: Any) -> dict[str, Any]:
    return {"error_code": 0, "error_name": "NONE", "error_message": None,
            "attempts": attempts, **extra}


@pytest.fixture(scope="module")
def secured(sasl_kafka: KafkaCluster) -> Iterator[KafkaCluster]:
    reset(sasl_kafka)
    grant(sasl_kafka.client_settings(), "User:limited",
          [("CLUSTER", "kafka-cluster", "LITERAL", ["DESCRIBE", "IDEMPOTENT_WRITE"])])
    yield sasl_kafka
    reset(sasl_kafka)


def _admin(cluster: KafkaCluster, user: str, password: str) -> ClusterAdmin:
    conf = ClusterConf(CLUSTER, cluster.bootstrap_servers, "SASL_PLAINTEXT", "PLAIN")
    return ClusterAdmin(conf, Credentials(Secret(user), Secret(password)), KAFKA)


@pytest.fixture
def admin(secured: KafkaCluster) -> Iterator[ClusterAdmin]:
    """The super user's admin; the bindings a test leaves are taken back to BASELINE."""
    with _admin(secured, "admin", ADMIN_PASSWORD) as connected:
        yield connected
        left = [x for x in describe_acls(connected) or [] if key(x) not in
                {key(y) for y in BASELINE}]
        if left:
            delete_acls(connected, left, 100)
        assert_state(connected, sorted(key(x) for x in BASELINE))


BATCH = [
    b("User:orders-app", "TOPIC", "orders", "WRITE"),
    b("User:orders-app", "TOPIC", "orders", "DESCRIBE"),
    b("User:readers", "TOPIC", "orders.", "READ", pattern_type="PREFIXED"),
    b("User:readers", "GROUP", "readers-", "READ", pattern_type="PREFIXED"),
    b("User:readers", "GROUP", "*", "DESCRIBE"),
    b("User:intruder", "TOPIC", "orders", "READ", permission="DENY", host="10.0.0.7"),
    b("User:tx-app", "TRANSACTIONAL_ID", "tx-", "WRITE", pattern_type="PREFIXED"),
    b("User:platform", "CLUSTER", "kafka-cluster", "ALTER"),
]


def test_a_batch_is_created_in_requests_of_batch_size_and_read_back_exactly(
        admin: ClusterAdmin) -> None:
    assert create_acls(admin, BATCH, batch_size=3) == [ok()] * len(BATCH)
    assert_state(admin, sorted(key(x) for x in BASELINE + BATCH))


def test_creating_a_binding_that_exists_succeeds_and_changes_nothing(
        admin: ClusterAdmin) -> None:
    assert create_acls(admin, BATCH[:2], 10) == [ok()] * 2
    assert create_acls(admin, BATCH[:2] + BATCH[:1], 10) == [ok()] * 3
    assert_state(admin, sorted(key(x) for x in BASELINE + BATCH[:2]))


def test_deletes_match_exactly_one_binding_each_or_none(admin: ClusterAdmin) -> None:
    create_acls(admin, BATCH, 100)
    # the LITERAL filter on "orders" must not take the PREFIXED "orders." binding, nor DENY
    # the ALLOW; READ must not take ALL
    gone = [BATCH[0], BATCH[2], BATCH[5], BATCH[7]]
    never = [b("User:orders-app", "TOPIC", "orders", "ALL"),
             b("User:readers", "TOPIC", "orders.", "READ"),
             b("User:intruder", "TOPIC", "orders", "READ", host="10.0.0.7")]
    results = delete_acls(admin, [*gone, *never], batch_size=2)
    assert results == [ok(deleted=1, resent=False)] * 4 + [ok(deleted=0, resent=False)] * 3
    assert_state(admin, sorted(key(x) for x in BASELINE + BATCH if x not in gone))


def test_an_invalid_binding_fails_alone_in_its_batch(admin: ClusterAdmin) -> None:
    good = [BATCH[0], BATCH[3]]
    no_colon = b("orders-app", "TOPIC", "orders", "READ")
    empty_name = b("User:orders-app", "TOPIC", "", "READ")
    results = create_acls(admin, [good[0], no_colon, good[1], empty_name], 10)
    assert [(r["error_name"], r["attempts"]) for r in results] == [
        ("NONE", 1), ("INVALID_REQUEST", 1), ("NONE", 1), ("INVALID_REQUEST", 1)]
    assert results[1]["error_message"] == (
        "Could not parse principal from `orders-app` (no colon is present separating the "
        "principal type from the principal name)")
    assert results[3]["error_message"] == "Invalid empty resource name"
    assert_state(admin, sorted(key(x) for x in BASELINE + good))


def test_without_alter_on_the_cluster_every_binding_is_refused(
        secured: KafkaCluster, admin: ClusterAdmin) -> None:
    create_acls(admin, BATCH[:1], 10)
    with _admin(secured, "limited", USER_PASSWORD) as limited:
        created = create_acls(limited, BATCH[1:4], 2)
        deleted = delete_acls(limited, BATCH[:2], 10)
        authority = acl_authority(limited)
    refused = {"error_code": 31, "error_name": "CLUSTER_AUTHORIZATION_FAILED", "attempts": 1}
    assert [{k: r[k] for k in refused} for r in created + deleted] == [refused] * 5
    assert [r["deleted"] for r in deleted] == [0, 0]
    assert authority == (
        "CLUSTER_AUTHORIZATION_FAILED",
        "User:limited may not change ACLs on cluster acl: CreateAcls and DeleteAcls need "
        "ALTER on the cluster resource (kafka-cluster), and it holds DESCRIBE, "
        "IDEMPOTENT_WRITE; grant it ALTER on the cluster, or leave this cluster's ACLs to "
        "another principal")
    assert_state(admin, sorted(key(x) for x in BASELINE + BATCH[:1]))


def test_authorized_operations_of_the_super_user_and_of_limited_users(
        secured: KafkaCluster, admin: ClusterAdmin) -> None:
    assert authorized_operations(admin) == CLUSTER_OPERATIONS
    assert acl_authority(admin) is None
    with _admin(secured, "limited", USER_PASSWORD) as limited:
        assert authorized_operations(limited) == {"DESCRIBE", "IDEMPOTENT_WRITE"}
    with _admin(secured, "nobody", USER_PASSWORD) as nobody:
        assert authorized_operations(nobody) == set()


def test_describe_acls_needs_describe_on_the_cluster(secured: KafkaCluster) -> None:
    from kafka.errors import ClusterAuthorizationFailedError

    with _admin(secured, "nobody", USER_PASSWORD) as nobody, \
            pytest.raises(ClusterAuthorizationFailedError):
        describe_acls(nobody)


def test_a_cluster_without_an_authorizer_says_security_disabled(kafka: KafkaCluster) -> None:
    conf = ClusterConf("plain", kafka.bootstrap_servers)
    with ClusterAdmin(conf, None, KAFKA) as plain:
        assert describe_acls(plain) is None
        assert acl_authority(plain) == (
            "SECURITY_DISABLED", "cluster plain has no authorizer (authorizer.class.name is "
            "not set), so it has no ACL to grant or revoke")
        created = create_acls(plain, BATCH[:1], 10)
    assert [(r["error_code"], r["error_name"]) for r in created] == [
        (54, "SECURITY_DISABLED")]


# --- the tasks: rows in, ACL_RESULT rows out ---------------------------------------------


def _conf(cluster: KafkaCluster, name: str = CLUSTER) -> ClusterConf:
    return ClusterConf(name, cluster.bootstrap_servers, "SASL_PLAINTEXT", "PLAIN")


ADMIN = Credentials(Secret("admin"), Secret(ADMIN_PASSWORD))
LIMITED = Credentials(Secret("limited"), Secret(USER_PASSWORD))


def _rows(*bindings: dict[str, Any], cluster: str = CLUSTER, **cols: Any
          ) -> list[dict[str, Any]]:
    return [{"cluster": cluster, **x, **cols} for x in bindings]


def _done(rows: list[dict[str, Any]], phase: str, outcome: str, attempts: int = 1
          ) -> list[tuple[Any, ...]]:
    return [acl_result(r, phase, outcome, error_code=0, error_name="NONE", attempts=attempts)
            for r in rows]


def _without_attempts(results: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    at = column_names(ACL_RESULT).index("attempts")
    assert all(r[at] >= 1 for r in results)
    return [r[:at] + r[at + 1:] for r in results]


def test_grant_verify_revoke_verify_give_one_result_per_binding(
        secured: KafkaCluster, admin: ClusterAdmin) -> None:
    clusters, creds = {CLUSTER: _conf(secured)}, {CLUSTER: ADMIN}
    good = _rows(*BATCH[:3])
    invalid = _rows(b("orders-app", "TOPIC", "orders", "READ"))
    unsendable = _rows(b("User:x", "TOPIC", "orders", "ANY"))

    granted = list(acl_results(good + invalid + unsendable, clusters, creds, KAFKA, GRANT,
                               batch_size=2))
    assert granted == [
        *_done(good, "apply", "granted"),
        acl_result(invalid[0], "apply", "rejected", error_code=42,
                   error_name="INVALID_REQUEST", attempts=1, error_message=(
                       "Could not parse principal from `orders-app` (no colon is present "
                       "separating the principal type from the principal name)")),
        acl_result(unsendable[0], "apply", "rejected", error_code=-1,
                   error_name="INVALID_MANIFEST_ROW", attempts=0, error_message=(
                       "not sent: operation: 'ANY' is not one of Kafka's ALL, READ, WRITE, "
                       "CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, "
                       "ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS, "
                       "TWO_PHASE_COMMIT")),
    ]
    shown = list(acl_results([{**r, "action": "GRANT"} for r in good], clusters, creds, KAFKA,
                             VERIFY))
    assert _without_attempts(shown) == _without_attempts(_done(good, "verify", "granted"))

    never = _rows(b("User:never", "TOPIC", "orders", "READ"))
    revoked = list(acl_results(good[:2] + never, clusters, creds, KAFKA, REVOKE))
    assert revoked == [*_done(good[:2], "apply", "revoked"),
                       *_done(never, "apply", "already_absent")]
    gone = list(acl_results([{**r, "action": "REVOKE"} for r in good[:2]], clusters, creds,
                            KAFKA, VERIFY))
    assert _without_attempts(gone) == _without_attempts(_done(good[:2], "verify", "revoked"))
    assert_state(admin, sorted(key(x) for x in BASELINE + BATCH[2:3]))


def test_verify_fails_a_binding_that_never_shows_once_its_time_is_up(
        secured: KafkaCluster, admin: ClusterAdmin) -> None:
    rows = [{**r, "action": "GRANT"} for r in _rows(BATCH[0])]
    quick = KafkaConf(request_timeout_ms=10000, verify_timeout_ms=500)
    results = list(acl_results(rows, {CLUSTER: _conf(secured)}, {CLUSTER: ADMIN}, quick,
                               VERIFY))
    assert _without_attempts(results) == _without_attempts([acl_result(
        rows[0], "verify", "failed", error_code=-1, error_name="VERIFY_TIMEOUT", attempts=1,
        error_message="the binding is still missing after its grant")])


def test_the_authority_check_rejects_each_cluster_the_job_may_not_change(
        secured: KafkaCluster, kafka: KafkaCluster) -> None:
    clusters = {CLUSTER: _conf(secured), "acl-limited": _conf(secured, "acl-limited"),
                "plain": ClusterConf("plain", kafka.bootstrap_servers)}
    creds = {CLUSTER: ADMIN, "acl-limited": LIMITED}
    rows = (_rows(*BATCH[:2]) + _rows(*BATCH[:2], cluster="acl-limited")
            + _rows(BATCH[0], cluster="plain"))
    results = list(acl_results(rows, clusters, creds, KAFKA, AUTHORITY, batch_size=1))
    assert results == [
        *_done(rows[:2], "validate", "validated"),
        *[acl_result(r, "validate", "rejected", error_code=31,
                     error_name="CLUSTER_AUTHORIZATION_FAILED", attempts=1, error_message=(
                         "User:limited may not change ACLs on cluster acl-limited: CreateAcls "
                         "and DeleteAcls need ALTER on the cluster resource (kafka-cluster), "
                         "and it holds DESCRIBE, IDEMPOTENT_WRITE; grant it ALTER on the "
                         "cluster, or leave this cluster's ACLs to another principal"))
          for r in rows[2:4]],
        acl_result(rows[4], "validate", "rejected", error_code=54,
                   error_name="SECURITY_DISABLED", attempts=1, error_message=(
                       "cluster plain has no authorizer (authorizer.class.name is not set), "
                       "so it has no ACL to grant or revoke")),
    ]


def test_an_unreachable_cluster_fails_its_bindings_as_not_sent() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    rows = _rows(*BATCH[:2], cluster="down")
    results = list(acl_results(rows, {"down": ClusterConf("down", f"127.0.0.1:{port}")}, {},
                               KafkaConf(request_timeout_ms=2000), GRANT))
    message = (f"not sent: cluster down at 127.0.0.1:{port} is unreachable "
               "(KafkaTimeoutError)")
    assert results == [acl_result(r, "apply", "failed", error_code=-1,
                                  error_name="ClusterUnreachable", error_message=message,
                                  attempts=0) for r in rows]


def test_a_binding_whose_request_may_have_been_sent_is_unknown_on_an_error(
        secured: KafkaCluster) -> None:
    rows = _rows(*BATCH[:2])

    def work(admin: ClusterAdmin, part: list[Row], sent: Sent) -> Iterator[tuple[Any, ...]]:
        sent.mark([binding_key(part[0])])
        raise ConnectionResetError("the connection broke mid-request")
        yield  # a generator, as the real work is

    results = list(for_each_cluster(rows, {CLUSTER: _conf(secured)}, {CLUSTER: ADMIN}, KAFKA,
                                    work, "apply", True, 10, BINDINGS))
    assert results == [
        acl_result(rows[0], "apply", "unknown", error_code=-1,
                   error_name="ConnectionResetError", attempts=1,
                   error_message="the connection broke mid-request"),
        acl_result(rows[1], "apply", "failed", error_code=-1,
                   error_name="ConnectionResetError", attempts=0,
                   error_message="not sent: the connection broke mid-request"),
    ]
