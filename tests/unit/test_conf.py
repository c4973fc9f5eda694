"""Conf loading: typed values, defaults, and every bad key named at once."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from provisioning.conf import (
    ClusterConf,
    KafkaConf,
    Secret,
    TablesConf,
    resolve_credentials,
    select_clusters,
)
from provisioning.errors import ConfError, UsageError
from provisioning.kinds.acls.conf import AclsConf
from provisioning.kinds.topics.conf import DEFAULT_PROTECTED_TOPICS, TopicsConf
from tests.helpers import load_conf, parse_conf

REPO = Path(__file__).resolve().parents[2]

MINIMAL = {
    "clusters": {"local": {"bootstrap_servers": "127.0.0.1:9092"}},
    "tables": {
        "manifests": ["warehouse/desired_topics"],
        "audit": "warehouse/topic_audit",
        "runs": "warehouse/provision_runs",
        "snapshots": "warehouse/topic_snapshots",
    },
}


def _problems(data: object) -> list[str]:
    with pytest.raises(ConfError) as err:
        parse_conf(data, "test.yaml")
    return err.value.problems


def test_minimal_conf_gets_defaults() -> None:
    conf = parse_conf(MINIMAL, "test.yaml")
    assert conf.clusters == {
        "local": ClusterConf(name="local", bootstrap_servers="127.0.0.1:9092")
    }
    assert conf.tables == TablesConf(
        manifests=("warehouse/desired_topics",),
        audit="warehouse/topic_audit",
        runs="warehouse/provision_runs",
        snapshots="warehouse/topic_snapshots",
        locks="warehouse/provision_runs_locks",
        violations="warehouse/provision_runs_violations",
        inventory="warehouse/provision_runs_inventory",
        disks="warehouse/provision_runs_disks",
    )
    assert conf.section(AclsConf).snapshots == "warehouse/topic_snapshots_acls"
    assert conf.run.lock_ttl_seconds == 600
    assert conf.kafka == KafkaConf()
    deletes = conf.section(TopicsConf).deletes
    assert deletes.protected == DEFAULT_PROTECTED_TOPICS
    assert deletes.max_per_cluster == 10
    assert deletes.prune is False


def test_embedded_local_conf_loads(tmp_path: Path) -> None:
    conf = load_conf(REPO / "conf" / "local.yaml", {"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:4242"})
    assert conf.clusters["local"].bootstrap_servers == "127.0.0.1:4242"
    assert conf.clusters["local"].security_protocol == "PLAINTEXT"
    assert len(conf.digest) == 64


def test_bootstrap_reference_falls_back_to_its_default() -> None:
    data = {**MINIMAL, "clusters": {"local": {"bootstrap_servers": "${NOPE:-127.0.0.1:9}"}}}
    assert parse_conf(data, "t").clusters["local"].bootstrap_servers == "127.0.0.1:9"


def test_every_bad_key_is_reported_at_once() -> None:
    data = {
        "clusters": {
            "local": {
                "bootstrap_servers": "127.0.0.1",
                "security_protocol": "TLS",
                "bootstrap": "typo",
            }
        },
        "tables": {"manifests": [], "audit": 3, "runs": "r", "snapshots": "s"},
        "kafka": {"batch_size": 0, "request_timeout_ms": "30s",
                  "max_partitions_per_request": 20000},
        "deletes": {"max_per_cluster": -1},
        "extra": 1,
    }
    assert _problems(data) == [
        "extra: unknown key (allowed: clusters, tables, kafka, spark, policies, run, "
        "maintenance, checks, deletes, alters, acls, reassign, quotas, users, groups, "
        "offsets)",
        "clusters.local.bootstrap: unknown key (allowed: bootstrap_servers, security_protocol, "
        "sasl_mechanism, sasl_username_env, sasl_password_env, ssl_cafile, cluster_id, "
        "client_id, sasl_username_file, sasl_password_file, ssl_certfile, ssl_keyfile, "
        "ssl_key_password_env, ssl_key_password_file, ssl_check_hostname, "
        "sasl_oauthbearer_token_endpoint_url, sasl_oauthbearer_ca_file, "
        "sasl_oauthbearer_client_id_env, "
        "sasl_oauthbearer_client_id_file, sasl_oauthbearer_client_secret_env, "
        "sasl_oauthbearer_client_secret_file, sasl_oauthbearer_scope, "
        "sasl_oauthbearer_extensions, aws_region, aws_role_arn, aws_profile, principal)",
        "clusters.local.bootstrap_servers: expected host:port[,host:port...], "
        "bad entries: ['127.0.0.1']",
        "clusters.local.security_protocol: 'TLS' is not one of PLAINTEXT, SASL_PLAINTEXT, "
        "SASL_SSL, SSL",
        "tables.manifests: expected a table path or name, or a non-empty list of them",
        "tables.audit: expected a string, got an integer",
        "kafka.request_timeout_ms: expected an integer, got a string",
        "kafka.batch_size: must be > 0, got 0",
        "kafka.max_partitions_per_request: the broker rejects more than 10000 per request",
        "deletes.max_per_cluster: must be >= 0, got -1",
    ]


def test_missing_sections_are_named() -> None:
    assert _problems({}) == [
        "clusters: required key is missing",
        "tables: required key is missing",
    ]


def test_inline_secret_is_refused_and_not_echoed() -> None:
    data = {**MINIMAL, "clusters": {"prod": {
        "bootstrap_servers": "127.0.0.1:9093",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username_env": "PROD_USER",
        "sasl_password": "hunter2",
        "sasl_password_env": "hunter2!",
    }}}
    problems = _problems(data)
    assert problems == [
        "clusters.prod.sasl_password: secrets must not be written in the conf; name the "
        "environment variable or the file that holds it (sasl_username_env / "
        "sasl_password_env, or their *_file keys)",
        "clusters.prod.sasl_password_env: must be the NAME of an environment variable "
        "(letters, digits, _), not the secret itself",
    ]
    assert not any("hunter2" in p for p in problems)


def test_sasl_requires_mechanism_and_env_names() -> None:
    data = {**MINIMAL, "clusters": {"prod": {
        "bootstrap_servers": "127.0.0.1:9093", "security_protocol": "SASL_PLAINTEXT"}}}
    assert _problems(data) == [
        "clusters.prod.sasl_mechanism: required when security_protocol is SASL_PLAINTEXT",
        "clusters.prod.sasl_username_env: required when security_protocol is SASL_PLAINTEXT "
        "(or sasl_username_file)",
        "clusters.prod.sasl_password_env: required when security_protocol is SASL_PLAINTEXT "
        "(or sasl_password_file)",
    ]


def test_credentials_come_from_the_named_variables() -> None:
    data = {**MINIMAL, "clusters": {"prod": {
        "bootstrap_servers": "127.0.0.1:9093", "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN", "sasl_username_env": "U", "sasl_password_env": "P"}}}
    conf = parse_conf(data, "t")
    creds = resolve_credentials(conf, {"U": "job", "P": "s3cret"})
    assert creds["prod"].username.reveal() == "job"
    assert creds["prod"].password == Secret("s3cret")
    assert "s3cret" not in repr(creds)
    with pytest.raises(ConfError) as err:
        resolve_credentials(conf, {"U": "job"})
    assert err.value.problems == [
        "clusters.prod.sasl_password_env: the environment variable it names is not set (its "
        "value is not repeated here, in case it is a secret written in this key)"
    ]


def test_unknown_policy_is_named() -> None:
    data = {**MINIMAL, "policies": {"create": [{"name": "no_such_policy"}, {"max": 3}]}}
    problems = _problems(data)
    assert problems[0].startswith(
        "policies.create[0].name: unknown create policy 'no_such_policy' (known: ")
    assert problems[1] == (
        "policies.create[1]: expected a mapping with a `name` and the policy's parameters")


def test_unreadable_and_invalid_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfError, match="cannot read the file"):
        load_conf(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("clusters: [unclosed\n")
    with pytest.raises(ConfError, match="not valid YAML"):
        load_conf(bad)


def test_select_clusters_names_unknown_ones() -> None:
    conf = parse_conf(MINIMAL, "t")
    assert [c.name for c in select_clusters(conf, ())] == ["local"]
    with pytest.raises(UsageError, match=r"unknown cluster.*nope.*defines local"):
        select_clusters(conf, ("nope",))


def test_yaml_round_trip_of_local_conf_has_no_secret_keys() -> None:
    raw = yaml.safe_load((REPO / "conf" / "local.yaml").read_text())
    cluster = raw["clusters"]["local"]
    assert cluster["sasl_username_env"] is None and cluster["sasl_password_env"] is None


# --- TLS and SASL settings (issue 5) ----------------------------------------------------------


def _with_cluster(**settings: object) -> dict[str, object]:
    return {**MINIMAL, "clusters": {"prod": {"bootstrap_servers": "127.0.0.1:9093", **settings}}}


def test_missing_ssl_cafile_is_a_conf_error_naming_the_key(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "ca.pem"
    assert _problems(_with_cluster(security_protocol="SSL", ssl_cafile=str(missing))) == [
        f"clusters.prod.ssl_cafile: no such file: {missing} (relative paths are taken from "
        "the directory the job runs in)"]


def test_ssl_cafile_reaches_the_kafka_client_settings(tmp_path: Path) -> None:
    from provisioning.conf import Credentials
    from provisioning.kafka.client import client_settings

    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    conf = parse_conf(_with_cluster(
        security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", ssl_cafile=str(ca),
        sasl_username_env="U", sasl_password_env="P"), "test.yaml")
    creds = Credentials(Secret("job"), Secret("s3cret-pw"))

    settings = client_settings(conf.clusters["prod"], creds, KafkaConf())

    assert {k: settings[k] for k in ("security_protocol", "sasl_mechanism", "ssl_cafile",
                                     "sasl_plain_username", "sasl_plain_password")} == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
        "ssl_cafile": str(ca), "sasl_plain_username": "job", "sasl_plain_password": "s3cret-pw"}
    # the settings hold the password for kafka-python, but never show it
    assert "s3cret-pw" not in repr(settings) and "s3cret-pw" not in str(settings)
    assert "s3cret-pw" not in repr(creds)


def test_tls_and_sasl_keys_that_the_protocol_ignores_are_errors(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    assert _problems(_with_cluster(
        security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username_env="U",
        sasl_password_env="P", ssl_cafile=str(ca))) == [
        "clusters.prod.ssl_cafile: only used when security_protocol is SSL or SASL_SSL, not "
        "SASL_PLAINTEXT"]
    assert _problems(_with_cluster(sasl_mechanism="PLAIN", sasl_password_env="P")) == [
        "clusters.prod.sasl_mechanism: only used when security_protocol is SASL_PLAINTEXT or "
        "SASL_SSL, not PLAINTEXT",
        "clusters.prod.sasl_password_env: only used when security_protocol is SASL_PLAINTEXT "
        "or SASL_SSL, not PLAINTEXT"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_every_sasl_mechanism_is_accepted(mechanism: str) -> None:
    conf = parse_conf(_with_cluster(
        security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
        sasl_username_env="U", sasl_password_env="P"), "test.yaml")
    assert conf.clusters["prod"].sasl_mechanism == mechanism


def test_the_keys_of_idle_topics_disks_and_writes_default_and_are_bounded() -> None:
    conf = parse_conf(MINIMAL, "test.yaml")
    assert (conf.checks.idle_days, conf.checks.disk_used_ratio, conf.checks.disk_days,
            conf.section(TopicsConf).deletes.in_use_days,
            conf.tables.inventory, conf.tables.disks) == (
        30, 0.85, 14, 7, "warehouse/provision_runs_inventory", "warehouse/provision_runs_disks")
    data = {**MINIMAL, "checks": {"idle_days": 0, "disk_used_ratio": 1.5, "disk_days": True},
            "deletes": {"in_use_days": -1},
            "tables": {**MINIMAL["tables"], "inventory": "cat.db.inv", "disks": 3}}
    assert _problems(data) == [
        "tables.disks: expected a string, got an integer",
        "checks.idle_days: must be > 0, got 0",
        "checks.disk_used_ratio: must be <= 1, got 1.5",
        "checks.disk_days: expected an integer, got a boolean",
        "deletes.in_use_days: must be >= 0, got -1",
    ]
    conf = parse_conf({**MINIMAL, "checks": {"disk_used_ratio": 1}, "deletes": {
        "in_use_days": 0}}, "test.yaml")
    assert (conf.checks.disk_used_ratio, conf.section(TopicsConf).deletes.in_use_days) == (1, 0)
