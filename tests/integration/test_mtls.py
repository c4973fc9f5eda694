"""Client certificates (mTLS), through the job's CLI, against the session's broker whose TLS
listener requires a certificate of its own CA (`ssl.client.auth=required`), with
StandardAuthorizer and ACLs granted to the job's certificate principal only.

The job's certificate is made here by the broker's CA, its key encrypted and the key's
password read from a file; every table is this module's own and every topic is on its
prefix (`mtls.`). The CLI runs in this process on the tests' SparkSession: `plan`, then
`apply` (a create, an alter, an ACL grant), then `check`; a certificate of another CA with
the same subject exits 3 naming the refusal, and a missing or unloadable key exits 2 naming
the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from dev.devkafka import TlsFiles
from provisioning.conf import ClusterConf, Credentials, KafkaConf, Secret
from provisioning.kafka.client import ClusterAdmin
from provisioning.kinds.acls.requests import describe_acls
from provisioning.kinds.acls.schema import ACL_MANIFEST
from schemas import column_names
from tests.helpers import (
    Completed,
    audit_rows,
    broker_state_as,
    grant,
    run_cli_in_process,
    write_conf,
    write_manifest_table,
)
from tests.support.secured import ClientCertificate, MtlsBroker

pytestmark = pytest.mark.integration

CLUSTER = "mtls"
SUBJECT = "/O=platform/CN=provisioning-job"
PRINCIPAL = "User:CN=provisioning-job,O=platform"
KEY_PASSWORD = "mtls-key-pw-5b1e"
READER = "User:CN=orders-reader,O=platform"
JOB_ACLS = [
    ("TOPIC", "mtls.", "PREFIXED",
     ["CREATE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "ALTER"]),
    ("GROUP", "*", "LITERAL", ["DESCRIBE"]),
    # DescribeAcls and check's DescribeLogDirs; ALTER for CreateAcls (the ACL grant)
    ("CLUSTER", "kafka-cluster", "LITERAL", ["DESCRIBE", "ALTER"]),
]
HOUR, TWO_HOURS = "3600000", "7200000"
MANIFEST = [
    {"topic": "mtls.orders", "partitions": 3, "replication_factor": 1,
     "configs": {"retention.ms": TWO_HOURS}, "owner": "orders"},
    {"topic": "mtls.ledger", "partitions": 1, "replication_factor": 1,
     "configs": {"retention.ms": TWO_HOURS}, "owner": "ledger"},
]
ACLS = [{"cluster": CLUSTER, "principal": READER, "resource_type": "TOPIC",
         "resource_name": "mtls.orders", "operations": ["READ"]}]


@dataclass(frozen=True)
class Setup:
    work: Path
    warehouse: Path
    conf: Path
    before: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Ran:
    run: Completed
    state: dict[str, dict[str, Any]]
    acls: list[tuple[str, ...]]


def _conf(work: Path, name: str, broker: MtlsBroker, cert: ClientCertificate,
          policies: dict[str, Any] | None = None, timeout_ms: int = 15000,
          **cluster: Any) -> Path:
    password_file = work / "key-password"
    password_file.write_text(KEY_PASSWORD + "\n")
    warehouse = work / "wh"
    path = write_conf(work / f"{name}.yaml", broker.bootstrap_servers, warehouse,
                      cluster=CLUSTER, cluster_extra={
                          "security_protocol": "SSL", "ssl_cafile": str(broker.tls.ca_file),
                          "ssl_certfile": str(cert.certificate), "ssl_keyfile": str(cert.key),
                          "ssl_key_password_file": str(password_file),
                          "principal": PRINCIPAL, **cluster},
                      extra={"checks": {"usage": False}, "policies": policies or {},
                             "kafka": {"request_timeout_ms": timeout_ms,
                                       "operation_timeout_ms": 15000}})
    data = yaml.safe_load(path.read_text())
    data["tables"]["acl_manifests"] = [str(warehouse / "acls")]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _acls(broker: MtlsBroker) -> list[tuple[str, ...]]:
    """The bindings on this module's prefix and principals, as the super user reads them."""
    conf = ClusterConf(CLUSTER, broker.cluster.bootstrap_servers, "SASL_PLAINTEXT", "PLAIN")
    admin_password = broker.cluster.client_settings()["sasl_plain_password"]
    with ClusterAdmin(conf, Credentials(Secret("admin"), Secret(admin_password)),
                      KafkaConf()) as admin:
        found = describe_acls(admin) or []
    return sorted((b["principal"], b["resource_type"], b["resource_name"], b["pattern_type"],
                   b["operation"], b["permission"]) for b in found
                  if b["principal"] in (PRINCIPAL, READER))


def _state(broker: MtlsBroker) -> dict[str, dict[str, Any]]:
    return {name: state for name, state in broker_state_as(broker.admin_settings()).items()
            if name.startswith("mtls.")}


@pytest.fixture(scope="module")
def job_certificate(mtls_kafka: MtlsBroker, tmp_path_factory: pytest.TempPathFactory
                    ) -> ClientCertificate:
    return ClientCertificate.create(mtls_kafka.tls, tmp_path_factory.mktemp("mtls-job"),
                                    "job", SUBJECT, key_password=KEY_PASSWORD)


@pytest.fixture(scope="module")
def setup(mtls_kafka: MtlsBroker, job_certificate: ClientCertificate, spark: Any,
          tmp_path_factory: pytest.TempPathFactory) -> Setup:
    assert job_certificate.principal == PRINCIPAL
    work = tmp_path_factory.mktemp("mtls-flows")
    warehouse = work / "wh"
    admin = KafkaAdminClient(**mtls_kafka.admin_settings())
    try:
        admin.create_topics([NewTopic("mtls.ledger", 1, 1,
                                      topic_configs={"retention.ms": HOUR})])
    finally:
        admin.close()
    grant(mtls_kafka.admin_settings(), PRINCIPAL, JOB_ACLS)
    write_manifest_table(spark, warehouse / "desired_topics",
                         [{"cluster": CLUSTER, **row} for row in MANIFEST])
    cols = column_names(ACL_MANIFEST)
    (spark.createDataFrame([tuple(r.get(c) for c in cols) for r in ACLS], ACL_MANIFEST)
     .write.format("delta").mode("overwrite").save(str(warehouse / "acls")))
    return Setup(work, warehouse, _conf(work, "job", mtls_kafka, job_certificate),
                 _state(mtls_kafka))


# Each run is its own fixture, in order: each test's time covers only its own run.
def _run(mtls_kafka: MtlsBroker, *args: str) -> Ran:
    run = run_cli_in_process([*args, "--json"])
    return Ran(run, _state(mtls_kafka), _acls(mtls_kafka))


@pytest.fixture(scope="module")
def planned(setup: Setup, mtls_kafka: MtlsBroker) -> Ran:
    return _run(mtls_kafka, "plan", "--conf", str(setup.conf))


@pytest.fixture(scope="module")
def applied(setup: Setup, planned: Ran, mtls_kafka: MtlsBroker) -> Ran:
    return _run(mtls_kafka, "apply", "--conf", str(setup.conf), "--allow-alter")


@pytest.fixture(scope="module")
def checked(setup: Setup, applied: Ran, mtls_kafka: MtlsBroker,
            job_certificate: ClientCertificate) -> Ran:
    # a policy the live mtls.orders breaks: check must have read it over mTLS
    conf = _conf(setup.work, "check", mtls_kafka, job_certificate,
                 policies={"create": [{"name": "partitions_range", "max": 2}]})
    return _run(mtls_kafka, "check", "--conf", str(conf))


def test_plan_over_mtls_changes_nothing_and_plans_every_change(
        setup: Setup, planned: Ran, spark: Any) -> None:
    assert planned.run.returncode == 0, planned.run.output[-4000:]
    assert planned.state == setup.before
    assert {n: s["configs"] for n, s in setup.before.items()} == {
        "mtls.ledger": {"retention.ms": HOUR}}
    assert planned.acls == sorted((PRINCIPAL, kind, name, pattern, op, "ALLOW")
                                  for kind, name, pattern, ops in JOB_ACLS for op in ops)
    assert audit_rows(spark, setup.warehouse, planned.run.json()["run_id"]) == sorted([
        (CLUSTER, "mtls.orders", "CREATE", "plan", "planned"),
        (CLUSTER, "mtls.orders", "CREATE", "validate", "validated"),
        (CLUSTER, "mtls.ledger", "ALTER", "plan", "planned"),
        (CLUSTER, "mtls.ledger", "ALTER", "validate", "validated"),
        # the ACL grant's rows (topic null)
        (CLUSTER, "", "GRANT", "plan", "planned"),
        (CLUSTER, "", "GRANT", "validate", "validated"),
    ])


def test_apply_over_mtls_creates_alters_and_grants_as_the_certificate_principal(
        setup: Setup, applied: Ran, spark: Any) -> None:
    assert applied.run.returncode == 0, applied.run.output[-4000:]
    after = {n: {k: v for k, v in s.items() if k != "topic_id"}
             for n, s in applied.state.items()}
    assert after == {
        "mtls.orders": {"partitions": 3, "replication_factor": 1,
                        "configs": {"retention.ms": TWO_HOURS}},
        "mtls.ledger": {"partitions": 1, "replication_factor": 1,
                        "configs": {"retention.ms": TWO_HOURS}},
    }
    assert applied.state["mtls.ledger"]["topic_id"] == setup.before["mtls.ledger"]["topic_id"]
    assert applied.acls == sorted(
        [(READER, "TOPIC", "mtls.orders", "LITERAL", "READ", "ALLOW")]
        + [(PRINCIPAL, kind, name, pattern, op, "ALLOW")
           for kind, name, pattern, ops in JOB_ACLS for op in ops])
    steps = (("plan", "planned"), ("validate", "validated"))
    assert audit_rows(spark, setup.warehouse, applied.run.json()["run_id"]) == sorted(
        [(CLUSTER, "mtls.orders", "CREATE", p, o)
         for p, o in (*steps, ("apply", "created"), ("verify", "created"))]
        + [(CLUSTER, "mtls.ledger", "ALTER", p, o)
           for p, o in (*steps, ("apply", "altered"), ("verify", "altered"))]
        + [(CLUSTER, "", "GRANT", p, o)
           for p, o in (*steps, ("apply", "granted"), ("verify", "granted"))])


def test_check_over_mtls_judges_the_topics_the_certificate_may_see(checked: Ran,
                                                                   applied: Ran) -> None:
    assert checked.run.returncode == 1, checked.run.output[-4000:]
    assert checked.state == applied.state
    doc = checked.run.json()
    assert (doc["command"], doc["exit_code"], doc["clusters"]) == ("check", 1, [CLUSTER])
    assert [(v["cluster"], v["topic"], v["rule"], v["severity"])
            for v in doc["violations"]] == [(CLUSTER, "mtls.orders", "partitions_range",
                                             "error")]


def test_a_certificate_of_another_ca_exits_3_naming_the_refusal(
        setup: Setup, mtls_kafka: MtlsBroker, tmp_path: Path) -> None:
    stranger_ca = TlsFiles.create(tmp_path / "stranger-ca")
    stranger = ClientCertificate.create(stranger_ca, tmp_path / "stranger", "job", SUBJECT,
                                        key_password=KEY_PASSWORD)
    # kafka-python retries a refused handshake until its bootstrap times out
    conf = _conf(setup.work, "stranger", mtls_kafka, stranger, timeout_ms=5000)
    before = _state(mtls_kafka)
    refused = run_cli_in_process(["plan", "--conf", str(conf), "--json"])
    assert refused.returncode == 3, refused.output[-4000:]
    assert refused.json()["error"] == (
        f"cluster {CLUSTER}: authentication failed (the broker refused the client "
        "certificate ssl_certfile (SSLV3_ALERT_CERTIFICATE_UNKNOWN): is it signed by a CA "
        "its listener trusts?)")
    assert _state(mtls_kafka) == before


def test_a_missing_or_unloadable_key_exits_2_naming_the_key(
        setup: Setup, mtls_kafka: MtlsBroker, job_certificate: ClientCertificate,
        tmp_path: Path) -> None:
    missing = tmp_path / "gone.key"
    conf = _conf(setup.work, "missing", mtls_kafka, job_certificate,
                 ssl_keyfile=str(missing))
    gone = run_cli_in_process(["plan", "--conf", str(conf), "--json"])
    assert gone.returncode == 2, gone.output[-4000:]
    assert f"clusters.{CLUSTER}.ssl_keyfile: no such file: {missing}" in gone.json()["error"]

    other = tmp_path / "other.key"
    other.write_text(Path(job_certificate.key).read_text().replace("A", "B", 40))
    conf = _conf(setup.work, "garbled", mtls_kafka, job_certificate, ssl_keyfile=str(other))
    garbled = run_cli_in_process(["plan", "--conf", str(conf), "--json"])
    assert garbled.returncode == 2, garbled.output[-4000:]
    error = garbled.json()["error"]
    assert (f"clusters.{CLUSTER}.ssl_keyfile: {other} is not the PEM private key of "
            f"ssl_certfile {job_certificate.certificate}, or its password is wrong (") in error
    assert KEY_PASSWORD not in garbled.output
