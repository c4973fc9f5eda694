"""SASL/OAUTHBEARER with tokens from an OIDC client-credentials endpoint (KIP-768), through
the job's CLI, against the session's broker that validates them with Kafka's own
`OAuthBearerValidatorCallbackHandler` (the JWKS file of the test's token endpoint, its
issuer and audience, no clock skew, sessions re-authenticated every few seconds), with
StandardAuthorizer and ACLs granted to the token's subject only.

The token endpoint (tests/support/secured.py) runs on loopback and signs RS256 JWTs that
live a few seconds, so the apply run outlives its first token: the job renews it in every
process that talks to Kafka. A wrong client secret and an unreachable endpoint exit 3,
naming the cluster and the endpoint. The CLI runs through spark-submit.sh as a thin client
of the session's Spark Connect server; topics are on this module's prefix (`oauth.`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dev.devkafka import free_ports
from tests.helpers import (
    Completed,
    audit_rows,
    broker_state_as,
    grant,
    runs_rows,
    write_conf,
    write_manifest_table,
)
from tests.support.secured import OAUTH_LISTENER, OAuthBroker

pytestmark = pytest.mark.integration

CLUSTER = "oauth"
CLIENT, SUBJECT = "provisioning-job", "provisioning-job"
CLIENT_SECRET = "oauth-client-secret-7f3a"
TOKEN_LIFETIME_S = 4
ID_ENV = "OAUTH_TEST_CLIENT_ID"
JOB_ACLS = [("TOPIC", "oauth.", "PREFIXED", ["CREATE", "DESCRIBE", "DESCRIBE_CONFIGS"]),
            ("GROUP", "*", "LITERAL", ["DESCRIBE"])]
TOPICS = {f"oauth.t{i}": i + 1 for i in range(4)}


@dataclass(frozen=True)
class Flows:
    work: Path
    warehouse: Path
    plan: Completed
    after_plan: dict[str, dict[str, Any]]
    apply: Completed
    after_apply: dict[str, dict[str, Any]]


def _conf(work: Path, name: str, endpoint: str, broker: OAuthBroker,
          secret: str = CLIENT_SECRET) -> Path:
    secret_file = work / f"{name}-client-secret"
    secret_file.write_text(secret + "\n")
    return write_conf(work / f"{name}.yaml", broker.bootstrap(OAUTH_LISTENER), work / "wh",
                      cluster=CLUSTER, cluster_extra={
                          "security_protocol": "SASL_PLAINTEXT",
                          "sasl_mechanism": "OAUTHBEARER",
                          "sasl_oauthbearer_token_endpoint_url": endpoint,
                          "sasl_oauthbearer_client_id_env": ID_ENV,
                          "sasl_oauthbearer_client_secret_file": str(secret_file),
                          "sasl_oauthbearer_scope": "kafka",
                          # as Confluent Cloud wants them; Kafka's validator takes them
                          "sasl_oauthbearer_extensions": {"logicalCluster": "lkc-test",
                                                          "identityPoolId": "pool-test"}})


def _state(broker: OAuthBroker) -> dict[str, dict[str, Any]]:
    return {n: s for n, s in broker_state_as(broker.admin_settings()).items()
            if n.startswith("oauth.")}


@pytest.fixture(scope="module")
def flows(oauth_kafka: OAuthBroker, spark: Any, cli: Callable[..., Completed],
          tmp_path_factory: pytest.TempPathFactory) -> Flows:
    oauth_kafka.issuer.add_client(CLIENT, CLIENT_SECRET, SUBJECT,
                                  lifetime_s=TOKEN_LIFETIME_S)
    grant(oauth_kafka.admin_settings(), f"User:{SUBJECT}", JOB_ACLS)
    work = tmp_path_factory.mktemp("oauth-flows")
    warehouse = work / "wh"
    write_manifest_table(spark, warehouse / "desired_topics", [
        {"cluster": CLUSTER, "topic": name, "partitions": n, "replication_factor": 1}
        for name, n in TOPICS.items()])
    conf = _conf(work, "job", oauth_kafka.issuer.token_url, oauth_kafka)
    env = {ID_ENV: CLIENT}
    plan = cli(["plan", "--conf", str(conf), "--json"], env=env)
    after_plan = _state(oauth_kafka)
    apply = cli(["apply", "--conf", str(conf), "--json"], env=env)
    return Flows(work, warehouse, plan, after_plan, apply, _state(oauth_kafka))


def test_plan_with_oidc_tokens_plans_every_create(flows: Flows, spark: Any) -> None:
    assert flows.plan.returncode == 0, flows.plan.output[-4000:]
    assert flows.after_plan == {}
    assert audit_rows(spark, flows.warehouse, flows.plan.json()["run_id"]) == sorted(
        (CLUSTER, name, "CREATE", phase, outcome) for name in TOPICS
        for phase, outcome in (("plan", "planned"), ("validate", "validated")))


def test_apply_with_oidc_tokens_creates_as_the_token_subject(flows: Flows,
                                                             spark: Any) -> None:
    assert flows.apply.returncode == 0, flows.apply.output[-4000:]
    assert {n: (s["partitions"], s["replication_factor"]) for n, s in
            flows.after_apply.items()} == {n: (p, 1) for n, p in TOPICS.items()}
    assert audit_rows(spark, flows.warehouse, flows.apply.json()["run_id"]) == sorted(
        (CLUSTER, name, "CREATE", phase, outcome) for name in TOPICS
        for phase, outcome in (("plan", "planned"), ("validate", "validated"),
                               ("apply", "created"), ("verify", "created")))


def test_a_run_longer_than_a_token_renews_it(flows: Flows, oauth_kafka: OAuthBroker,
                                             spark: Any) -> None:
    run = runs_rows(spark, flows.warehouse)[flows.apply.json()["run_id"]]
    started, finished = run["started_at"].timestamp(), run["finished_at"].timestamp()
    issued = [i for i in oauth_kafka.issuer.issued_to(CLIENT)
              if started - TOKEN_LIFETIME_S <= i.issued_at <= finished]
    # The run outlived a token it used: one expired before the run ended, and the job
    # asked for new ones (the broker allows no clock skew and re-authenticates sessions).
    assert min(i.expires_at for i in issued) < finished, (started, finished, issued)
    assert len([i for i in issued if i.issued_at >= started]) >= 2
    assert run["status"] == "succeeded" and flows.apply.returncode == 0


def test_a_wrong_client_secret_exits_3_with_the_endpoints_error(
        flows: Flows, oauth_kafka: OAuthBroker, cli: Callable[..., Completed]) -> None:
    wrong_secret = "not-the-client-secret-91c2"
    conf = _conf(flows.work, "wrong", oauth_kafka.issuer.token_url, oauth_kafka, wrong_secret)
    refused = cli(["plan", "--conf", str(conf), "--json"], env={ID_ENV: CLIENT})
    assert refused.returncode == 3, refused.output[-4000:]
    # The status and the OAuth error code only: the endpoint's own words may echo the
    # request, secret and all.
    assert refused.json()["error"] == (
        f"cluster {CLUSTER}: the token endpoint {oauth_kafka.issuer.token_url} refused the "
        "client credentials (HTTP 401: invalid_client)")
    assert wrong_secret not in refused.output and CLIENT_SECRET not in refused.output
    assert _state(oauth_kafka) == flows.after_apply


def test_an_unreachable_token_endpoint_exits_3_naming_it(
        flows: Flows, oauth_kafka: OAuthBroker, cli: Callable[..., Completed]) -> None:
    (port,) = free_ports(1)
    endpoint = f"http://127.0.0.1:{port}/token"
    conf = _conf(flows.work, "unreachable", endpoint, oauth_kafka)
    refused = cli(["plan", "--conf", str(conf), "--json"], env={ID_ENV: CLIENT})
    assert refused.returncode == 3, refused.output[-4000:]
    assert refused.json()["error"] == (
        f"cluster {CLUSTER}: the token endpoint {endpoint} is unreachable "
        "(ConnectionRefusedError: [Errno 111] Connection refused)")
    assert CLIENT_SECRET not in refused.output
