"""The test session's shared Kafka clusters, and the means to leave one as it started.

One of each for the whole session (tests/conftest.py starts them on first use):

- the plain broker (`kafka`): PLAINTEXT, plus a second listener, PROXIED, that advertises
  the port of the session's loopback proxy (`kafka_proxy`), and the broker-side policies of
  tests/java, each scoped to a prefix no other module uses (`reserved.`, `capped.`);
- the SASL broker (`sasl_kafka`): the StandardAuthorizer, the union of the users every
  module logs in as (SASL_USERS), a SASL_SSL listener serving the session's test CA, and a
  PROXIED listener behind a proxy of its own (`sasl_proxy`);
- the three-node cluster with one rack per node (`racked_kafka`).

Each module keeps to its own topic, group and principal prefix. A module that judges a
whole cluster (`check`, the unmanaged counts, every topic the broker holds) starts from
`reset`: no topic but the internal ones, no consumer group, no client quota, no ACL
binding, and the SCRAM users the cluster was formatted with, as they were.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dev.devkafka import KafkaCluster, ListenerSpec, SaslUsers, TlsFiles, free_ports
from tests.support.tcpproxy import KafkaProxy

# One password per user for the whole session: known, unguessable values, so a module can
# search every output of its runs for them.
ADMIN_PASSWORD = f"adminpw{secrets.token_hex(8)}"
PLAIN_PASSWORD = f"plainpw{secrets.token_hex(8)}"
SCRAM_PASSWORD = f"scrampw{secrets.token_hex(8)}"
# Every user but `job` logs in with PLAIN and this password.
USER_PASSWORD = f"userpw{secrets.token_hex(8)}"
SASL_USERS = SaslUsers(
    admin_password=ADMIN_PASSWORD,
    # job: the security module's job principal; limited, nobody: the ACL modules';
    # reader, alterer (and nobody): the quota module's.
    plain={"job": PLAIN_PASSWORD, "limited": USER_PASSWORD, "nobody": USER_PASSWORD,
           "reader": USER_PASSWORD, "alterer": USER_PASSWORD},
    scram={"job": SCRAM_PASSWORD, "nogroups": SCRAM_PASSWORD},
)
SASL_PASSWORDS = (ADMIN_PASSWORD, PLAIN_PASSWORD, SCRAM_PASSWORD, USER_PASSWORD)
SASL_TLS_LISTENER = "SASLSSL"
PROXIED = "PROXIED"

# The broker-side policies of tests/java on the plain broker, each under a prefix of its own.
RESERVED_PREFIX = "reserved."
CAPPED_PREFIX = "capped."
MAX_CAPPED_RETENTION_MS = 86_400_000


def policy_properties() -> dict[str, str]:
    """The plain broker's CreateTopicPolicy (KIP-108) and AlterConfigPolicy (KIP-133)."""
    return {
        "create.topic.policy.class.name": "provisioning.testing.RejectReservedPrefix",
        "provisioning.testing.reserved.prefix": RESERVED_PREFIX,
        "alter.config.policy.class.name": "provisioning.testing.CapRetention",
        "provisioning.testing.capped.prefix": CAPPED_PREFIX,
        "provisioning.testing.max.retention.ms": str(MAX_CAPPED_RETENTION_MS),
    }


def plain_broker(base: Path, policy_jar: Path) -> tuple[KafkaCluster, KafkaProxy]:
    """The plain broker (not started) and the proxy its PROXIED listener advertises."""
    (port,) = free_ports(1)
    cluster = KafkaCluster(base, nodes=1, broker_properties=policy_properties(),
                           extra_classpath=[policy_jar], listeners=(
                               ListenerSpec("PLAINTEXT", "PLAINTEXT"),
                               ListenerSpec(PROXIED, "PLAINTEXT", advertised_port=port)))
    return cluster, KafkaProxy(port)


def sasl_broker(base: Path, tls: TlsFiles) -> tuple[KafkaCluster, KafkaProxy]:
    """The SASL broker (not started) and the proxy its PROXIED listener advertises."""
    (port,) = free_ports(1)
    cluster = KafkaCluster(base, nodes=1, sasl=SASL_USERS, heap_mb=384, listeners=(
        ListenerSpec("SASL", "SASL_PLAINTEXT"),
        ListenerSpec(SASL_TLS_LISTENER, "SASL_SSL", config=tls.listener_config()),
        ListenerSpec(PROXIED, "SASL_PLAINTEXT", advertised_port=port)))
    return cluster, KafkaProxy(port)


@contextmanager
def running_behind(cluster: KafkaCluster, proxy: KafkaProxy
                   ) -> Iterator[tuple[KafkaCluster, KafkaProxy]]:
    """`cluster` started, then the proxy in front of its PROXIED listener; both stopped
    when the block ends (also when the start failed part way)."""
    try:
        cluster.start()
        proxy.upstream_port = int(cluster.bootstrap_servers_for(PROXIED).split(":")[1])
        proxy.start()
        yield cluster, proxy
    finally:
        proxy.stop()
        cluster.stop()


def reset(cluster: KafkaCluster, timeout_s: float = 60) -> None:
    """Leave `cluster` as it started: every non-internal topic deleted, every consumer group
    deleted, every client quota removed, every ACL binding deleted (where an authorizer
    runs) and the SCRAM users it was formatted with as they were (others deleted)."""
    from kafka import KafkaAdminClient
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePatternFilter,
        ResourceType,
    )

    settings = cluster.client_settings()
    admin = KafkaAdminClient(**settings)
    try:
        topics = [t for t in admin.list_topics() if not t.startswith("__")]
        if topics:
            admin.delete_topics(topics, raise_errors=False)
        groups = [g["group_id"] for g in admin.list_groups()]
        if groups:
            admin.delete_groups(groups)
        _clear_quotas(cluster)
        if cluster.sasl is not None:
            everything = ACLFilter(
                principal=None, host=None, operation=ACLOperation.ANY,
                permission_type=ACLPermissionType.ANY,
                resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                       ACLResourcePatternType.ANY))
            admin.delete_acls([everything])
            _restore_scram(admin, cluster.sasl)
        deadline = time.monotonic() + timeout_s
        while [t for t in admin.list_topics() if not t.startswith("__")]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"topics still listed after {timeout_s} s: "
                                   f"{sorted(admin.list_topics())[:20]}")
            time.sleep(0.1)
    finally:
        admin.close()


def _clear_quotas(cluster: KafkaCluster) -> None:
    from provisioning.conf import ClusterConf, Credentials, KafkaConf, Secret
    from provisioning.kafka.client import ClusterAdmin
    from provisioning.kinds.quotas.requests import (
        QuotaEntry,
        alter_client_quotas,
        describe_client_quotas,
    )

    credentials = None
    conf = ClusterConf("shared", cluster.bootstrap_servers)
    if cluster.sasl is not None:
        conf = ClusterConf("shared", cluster.bootstrap_servers, "SASL_PLAINTEXT", "PLAIN")
        credentials = Credentials(Secret(cluster.sasl.admin),
                                  Secret(cluster.sasl.admin_password))
    with ClusterAdmin(conf, credentials, KafkaConf(request_timeout_ms=10000)) as admin:
        found: Mapping[Any, Mapping[str, float]] = describe_client_quotas(admin)
        if found:
            results = alter_client_quotas(
                admin, [QuotaEntry(e, dict.fromkeys(q)) for e, q in found.items()], False, 100)
            failed = [r for r in results if r["error_name"] != "NONE"]
            if failed:
                raise RuntimeError(f"removing the client quotas failed: {failed}")


def _restore_scram(admin: Any, users: SaslUsers) -> None:
    from kafka.admin import UserScramCredentialDeletion, UserScramCredentialUpsertion

    # The broker refuses a request that names a user twice: one request per mechanism.
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        described = admin.describe_user_scram_credentials()
        changes: list[Any] = [
            UserScramCredentialDeletion(user, info["mechanism"])
            for user, found in described.items() if user not in users.scram
            for info in found["credential_infos"]
            if info["mechanism"].name == mechanism.replace("-", "_")]
        changes += [UserScramCredentialUpsertion(user, mechanism, password)
                    for user, password in users.scram.items()]
        errors = {u: e for u, e in admin.alter_user_scram_credentials(changes).items() if e}
        if errors:
            raise RuntimeError(f"restoring the SCRAM users ({mechanism}) failed: {errors}")
