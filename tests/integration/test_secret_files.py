"""Secrets from files (Kubernetes and Vault agent mounts): a SCRAM user and password and an
OAuth client id and secret, each read from a file the conf names, never written anywhere.

The job runs through spark-submit.sh as a thin client of the session's Spark Connect server
(whose executors have nothing of this project: the job ships its code, and the admin tasks
get the credentials in memory with their tasks), against the session's OAuth broker: one
cluster over its SCRAM listener, one over its OAUTHBEARER listener, each principal granted
its own prefix only. `plan --out` and `apply`, with `--verbose`; then every place a secret
could leak is searched for every secret: both runs' stdout and stderr, the Connect
server's log, the saved plan and every table the runs wrote, including the tokens the
endpoint issued to the job.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import (
    Completed,
    audit_rows,
    broker_state_as,
    grant,
    run_cli,
    table_json,
    write_conf,
    write_manifest_table,
)
from tests.support.secured import (
    ADMIN_PASSWORD,
    OAUTH_LISTENER,
    SCRAM_PASSWORD,
    SCRAM_USER,
    OAuthBroker,
)

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

CLIENT, SUBJECT = "files-job", "files-job"
CLIENT_SECRET = "files-client-secret-0d9e4c"
TOPICS = {"files.scram.a": "scram", "files.oauth.a": "oauth"}


def _conf(work: Path, broker: OAuthBroker) -> Path:
    secrets = work / "secrets"
    secrets.mkdir()
    for name, value in (("user", SCRAM_USER), ("password", SCRAM_PASSWORD),
                        ("client-id", CLIENT), ("client-secret", CLIENT_SECRET)):
        (secrets / name).write_text(value + "\n")
    path = write_conf(work / "conf.yaml", broker.bootstrap("SASL"), work / "wh",
                      cluster="scram", cluster_extra={
                          "security_protocol": "SASL_PLAINTEXT",
                          "sasl_mechanism": "SCRAM-SHA-512",
                          "sasl_username_file": str(secrets / "user"),
                          "sasl_password_file": str(secrets / "password")})
    data = yaml.safe_load(path.read_text())
    data["clusters"]["oauth"] = {
        "bootstrap_servers": broker.bootstrap(OAUTH_LISTENER),
        "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER",
        "sasl_oauthbearer_token_endpoint_url": broker.issuer.token_url,
        "sasl_oauthbearer_client_id_file": str(secrets / "client-id"),
        "sasl_oauthbearer_client_secret_file": str(secrets / "client-secret")}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@dataclass(frozen=True)
class Setup:
    warehouse: Path
    conf: Path
    plan_file: Path


@pytest.fixture(scope="module")
def setup(oauth_kafka: OAuthBroker, spark: Any, tmp_path_factory: pytest.TempPathFactory
          ) -> Setup:
    oauth_kafka.issuer.add_client(CLIENT, CLIENT_SECRET, SUBJECT)
    acls = [("GROUP", "*", "LITERAL", ["DESCRIBE"])]
    ops = ["CREATE", "DESCRIBE", "DESCRIBE_CONFIGS"]
    grant(oauth_kafka.admin_settings(), f"User:{SCRAM_USER}",
          [("TOPIC", "files.scram.", "PREFIXED", ops), *acls])
    grant(oauth_kafka.admin_settings(), f"User:{SUBJECT}",
          [("TOPIC", "files.oauth.", "PREFIXED", ops), *acls])
    work = tmp_path_factory.mktemp("secret-files")
    warehouse = work / "wh"
    write_manifest_table(spark, warehouse / "desired_topics", [
        {"cluster": cluster, "topic": topic, "partitions": 1, "replication_factor": 1}
        for topic, cluster in TOPICS.items()])
    return Setup(warehouse, _conf(work, oauth_kafka), work / "plan.json")


# Each run is its own fixture, in order: each test's time covers only its own run.
@pytest.fixture(scope="module")
def planned(setup: Setup, connect_server: Any) -> Completed:
    return run_cli(["plan", "--conf", str(setup.conf), "--json", "--verbose", "--out",
                    str(setup.plan_file)], remote=connect_server.address)


@pytest.fixture(scope="module")
def applied(setup: Setup, planned: Completed, connect_server: Any) -> Completed:
    return run_cli(["apply", "--conf", str(setup.conf), "--json", "--verbose"],
                   remote=connect_server.address)


def test_plan_reads_both_clusters_with_secrets_from_files(setup: Setup, planned: Completed,
                                                          spark: Any) -> None:
    assert planned.returncode == 0, planned.output[-4000:]
    assert audit_rows(spark, setup.warehouse, planned.json()["run_id"]) == sorted(
        (cluster, topic, "CREATE", phase, outcome) for topic, cluster in TOPICS.items()
        for phase, outcome in (("plan", "planned"), ("validate", "validated")))


def test_apply_creates_on_both_clusters_with_secrets_from_files(
        setup: Setup, applied: Completed, oauth_kafka: OAuthBroker, spark: Any) -> None:
    assert applied.returncode == 0, applied.output[-4000:]
    state = broker_state_as(oauth_kafka.admin_settings())
    assert {n: (s["partitions"], s["replication_factor"]) for n, s in state.items()
            if n.startswith("files.")} == {topic: (1, 1) for topic in TOPICS}
    assert audit_rows(spark, setup.warehouse, applied.json()["run_id"]) == sorted(
        (cluster, topic, "CREATE", phase, outcome) for topic, cluster in TOPICS.items()
        for phase, outcome in (("plan", "planned"), ("validate", "validated"),
                               ("apply", "created"), ("verify", "created")))


def test_secrets_read_from_files_are_written_nowhere(
        setup: Setup, planned: Completed, applied: Completed, oauth_kafka: OAuthBroker,
        connect_server: Any, spark: Any) -> None:
    tokens = [i.token for i in oauth_kafka.issuer.issued_to(CLIENT)]
    assert tokens  # the job asked the endpoint for tokens: they are secrets too
    texts = {f"{name} {stream}": getattr(run, stream)
             for name, run in (("plan", planned), ("apply", applied))
             for stream in ("stdout", "stderr")}
    texts["plan --out"] = setup.plan_file.read_text()
    texts["connect server log"] = Path(connect_server.log_file).read_text(errors="replace")
    for table in ("desired_topics", "topic_audit", "provision_runs", "topic_snapshots"):
        texts[f"table {table}"] = "\n".join(table_json(spark, setup.warehouse / table))
    # the texts searched are the real ones
    assert " INFO provisioning." in texts["apply stdout"] + texts["apply stderr"]
    assert "files.oauth.a" in texts["plan --out"] and json.loads(texts["plan --out"])
    assert applied.json()["run_id"] in texts["table provision_runs"]
    secrets = {"scram password": SCRAM_PASSWORD, "client secret": CLIENT_SECRET,
               "admin password": ADMIN_PASSWORD,
               **{f"token {i}": token for i, token in enumerate(tokens)}}
    leaks = {(where, what) for where, text in texts.items()
             for what, secret in secrets.items() if secret in text}
    assert leaks == set()
