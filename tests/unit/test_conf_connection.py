"""The connection keys of issue 51: client certificates, OAUTHBEARER, MSK IAM and secrets
from files: which keys go together, and what the driver reads (conf.secrets)."""

from __future__ import annotations

import pickle
import subprocess
from pathlib import Path

import pytest

from provisioning.conf import Credentials, OAuthClient, Secret, resolve_credentials
from provisioning.errors import ConfError
from tests.helpers import parse_conf

MINIMAL = {
    "tables": {"manifests": ["wh/desired_topics"], "audit": "wh/topic_audit",
               "runs": "wh/provision_runs", "snapshots": "wh/topic_snapshots"},
}


def _conf(**cluster: object) -> dict[str, object]:
    return {**MINIMAL, "clusters": {"prod": {"bootstrap_servers": "127.0.0.1:9093",
                                             **cluster}}}


def _problems(**cluster: object) -> list[str]:
    with pytest.raises(ConfError) as err:
        parse_conf(_conf(**cluster), "test.yaml")
    return err.value.problems


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.fixture(scope="module")
def pem(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A self-signed certificate, its key in clear and encrypted, made with openssl."""
    d = tmp_path_factory.mktemp("pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    "key.pem", "-out", "cert.pem", "-days", "1", "-subj", "/CN=job"],
                   cwd=d, check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", "key.pem", "-aes256", "-passout",
                    "pass:keypw-123", "-out", "encrypted.pem"], cwd=d, check=True,
                   capture_output=True)
    return {name: str(d / f"{name}.pem") for name in ("cert", "key", "encrypted")}


def test_oauthbearer_needs_its_endpoint_and_client() -> None:
    assert _problems(security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER") == [
        "clusters.prod.sasl_oauthbearer_token_endpoint_url: required when sasl_mechanism is "
        "OAUTHBEARER",
        "clusters.prod.sasl_oauthbearer_client_id_env: required when sasl_mechanism is "
        "OAUTHBEARER (or sasl_oauthbearer_client_id_file)",
        "clusters.prod.sasl_oauthbearer_client_secret_env: required when sasl_mechanism is "
        "OAUTHBEARER (or sasl_oauthbearer_client_secret_file)",
    ]


def test_oauthbearer_refuses_a_user_and_password_and_aws_keys() -> None:
    assert _problems(
        security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER",
        sasl_oauthbearer_token_endpoint_url="https://idp.example/token",
        sasl_oauthbearer_client_id_env="ID", sasl_oauthbearer_client_secret_env="SECRET",
        sasl_username_env="U", aws_region="eu-west-1") == [
        "clusters.prod.sasl_username_env: only used when sasl_mechanism is PLAIN, "
        "SCRAM-SHA-256, SCRAM-SHA-512 or AWS_MSK_IAM, not OAUTHBEARER",
        "clusters.prod.aws_region: only used when sasl_mechanism is PLAIN, SCRAM-SHA-256, "
        "SCRAM-SHA-512 or AWS_MSK_IAM, not OAUTHBEARER",
    ]


def test_a_token_endpoint_is_an_https_url_without_credentials_in_it() -> None:
    base = {"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER",
            "sasl_oauthbearer_client_id_env": "ID",
            "sasl_oauthbearer_client_secret_env": "SECRET"}
    assert _problems(**base, sasl_oauthbearer_token_endpoint_url="file:///token") == [
        "clusters.prod.sasl_oauthbearer_token_endpoint_url: expected an https:// URL"]
    problems = _problems(**base, sasl_oauthbearer_token_endpoint_url="https://id:pw@idp/t")
    assert problems == [
        "clusters.prod.sasl_oauthbearer_token_endpoint_url: a URL with a user or password in "
        "it would put a secret in the conf; name the client's *_env or *_file keys instead"]


def test_msk_iam_needs_sasl_ssl_and_a_region_and_one_identity() -> None:
    assert _problems(security_protocol="SASL_PLAINTEXT", sasl_mechanism="AWS_MSK_IAM",
                     aws_role_arn="arn:aws:iam::123456789012:role/provisioner",
                     aws_profile="ops") == [
        "clusters.prod.security_protocol: AWS_MSK_IAM needs SASL_SSL (MSK's IAM listeners are "
        "TLS), not SASL_PLAINTEXT",
        "clusters.prod.aws_region: required when sasl_mechanism is AWS_MSK_IAM",
        "clusters.prod.aws_profile: give aws_role_arn or aws_profile, not both",
    ]
    assert _problems(security_protocol="SASL_SSL", sasl_mechanism="AWS_MSK_IAM",
                     aws_region="eu-west-1", aws_role_arn="provisioner") == [
        "clusters.prod.aws_role_arn: expected an IAM role's ARN, "
        "arn:aws:iam::ACCOUNT:role/NAME"]
    conf = parse_conf(_conf(security_protocol="SASL_SSL", sasl_mechanism="AWS_MSK_IAM",
                            aws_region="eu-west-1", principal="User:provisioner"), "t.yaml")
    cluster = conf.clusters["prod"]
    assert (cluster.sasl_mechanism, cluster.aws_region, cluster.principal) == (
        "AWS_MSK_IAM", "eu-west-1", "User:provisioner")
    # nothing to read on the driver but the AWS chain's own sources
    assert resolve_credentials(conf, {}) == {"prod": Credentials(tls=_no_tls())}


def _no_tls() -> object:
    from provisioning.conf import TlsKeys

    return TlsKeys()


def test_each_secret_comes_from_its_env_or_its_file_never_both(tmp_path: Path) -> None:
    user = _file(tmp_path, "user", "job\n")
    assert _problems(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                     sasl_username_env="U", sasl_username_file=user,
                     sasl_password_env="P") == [
        "clusters.prod.sasl_username_file: give sasl_username_env or sasl_username_file, "
        "not both"]


def test_secret_files_are_read_on_the_driver_without_their_newline(tmp_path: Path) -> None:
    conf = parse_conf(_conf(
        security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
        sasl_username_file=_file(tmp_path, "user", "job\n"),
        sasl_password_file=_file(tmp_path, "password", "s3cret-from-file\r\n")), "t.yaml")
    creds = resolve_credentials(conf, {})
    assert creds == {"prod": Credentials(Secret("job"), Secret("s3cret-from-file"))}
    assert "s3cret-from-file" not in repr(creds)


def test_an_empty_secret_file_is_named(tmp_path: Path) -> None:
    empty = _file(tmp_path, "empty", "\n")
    conf = parse_conf(_conf(
        security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
        sasl_oauthbearer_token_endpoint_url="http://127.0.0.1:1/token",
        sasl_oauthbearer_client_id_env="ID", sasl_oauthbearer_client_secret_file=empty),
        "t.yaml")
    with pytest.raises(ConfError) as err:
        resolve_credentials(conf, {})
    assert err.value.problems == [
        "clusters.prod.sasl_oauthbearer_client_id_env: the environment variable it names is "
        "not set (its value is not repeated here, in case it is a secret written in this key)",
        "clusters.prod.sasl_oauthbearer_client_secret_file: the file it names is empty"]


def test_the_oauth_client_is_read_and_travels_pickled_in_memory(tmp_path: Path) -> None:
    conf = parse_conf(_conf(
        security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
        sasl_oauthbearer_token_endpoint_url="http://127.0.0.1:1/token",
        sasl_oauthbearer_client_id_env="ID",
        sasl_oauthbearer_client_secret_file=_file(tmp_path, "secret", "client-s3cret\n")),
        "t.yaml")
    creds = resolve_credentials(conf, {"ID": "the-client"})
    assert creds == {"prod": Credentials(oauth=OAuthClient(Secret("the-client"),
                                                           Secret("client-s3cret")))}
    assert pickle.loads(pickle.dumps(creds)) == creds


def test_a_client_certificate_needs_its_key_and_both_are_read(tmp_path: Path,
                                                             pem: dict[str, str]) -> None:
    assert _problems(security_protocol="SSL", ssl_certfile=pem["cert"]) == [
        "clusters.prod.ssl_keyfile: required with ssl_certfile (the certificate's private "
        "key, PEM)"]
    assert _problems(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                     sasl_username_env="U", sasl_password_env="P",
                     ssl_certfile=pem["cert"], ssl_keyfile=pem["key"],
                     ssl_check_hostname=False) == [
        f"clusters.prod.{key}: only used when security_protocol is SSL or SASL_SSL, not "
        "SASL_PLAINTEXT" for key in ("ssl_certfile", "ssl_keyfile", "ssl_check_hostname")]
    conf = parse_conf(_conf(security_protocol="SSL", ssl_cafile=pem["cert"],
                            ssl_certfile=pem["cert"], ssl_keyfile=pem["key"]), "t.yaml")
    tls = resolve_credentials(conf, {})["prod"].tls
    assert tls is not None and tls.key is not None
    assert (tls.ca, tls.certificate, tls.key.reveal(), tls.key_password) == (
        Path(pem["cert"]).read_text(), Path(pem["cert"]).read_text(),
        Path(pem["key"]).read_text(), None)
    assert "PRIVATE KEY" not in repr(tls)
    assert conf.clusters["prod"].ssl_check_hostname is True


def test_a_missing_key_file_is_a_conf_error_naming_the_key(tmp_path: Path,
                                                           pem: dict[str, str]) -> None:
    missing = tmp_path / "job.key"
    assert _problems(security_protocol="SSL", ssl_certfile=pem["cert"],
                     ssl_keyfile=str(missing)) == [
        f"clusters.prod.ssl_keyfile: no such file: {missing} (relative paths are taken from "
        "the directory the job runs in)"]


def test_a_key_that_does_not_load_is_named_without_its_password(
        tmp_path: Path, pem: dict[str, str]) -> None:
    garbage = _file(tmp_path, "garbage.key", "-----BEGIN PRIVATE KEY-----\nnope\n")
    conf = parse_conf(_conf(security_protocol="SSL", ssl_certfile=pem["cert"],
                            ssl_keyfile=garbage), "t.yaml")
    with pytest.raises(ConfError) as err:
        resolve_credentials(conf, {})
    (problem,) = err.value.problems
    assert problem.startswith(
        f"clusters.prod.ssl_keyfile: {garbage} is not the PEM private key of ssl_certfile "
        f"{pem['cert']}, or its password is wrong (")

    encrypted = parse_conf(_conf(security_protocol="SSL", ssl_certfile=pem["cert"],
                                 ssl_keyfile=pem["encrypted"],
                                 ssl_key_password_env="KEY_PW"), "t.yaml")
    with pytest.raises(ConfError) as wrong:
        resolve_credentials(encrypted, {"KEY_PW": "not-the-pw-99"})
    assert [p.split(" (")[0] for p in wrong.value.problems] == [
        f"clusters.prod.ssl_keyfile: {pem['encrypted']} is not the PEM private key of "
        f"ssl_certfile {pem['cert']}, or its password is wrong"]
    assert "not-the-pw-99" not in str(wrong.value)
    tls = resolve_credentials(encrypted, {"KEY_PW": "keypw-123"})["prod"].tls
    assert tls is not None and tls.key_password == Secret("keypw-123")


def test_inline_secrets_name_the_keys_to_use_instead() -> None:
    assert _problems(security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER",
                     sasl_oauthbearer_token_endpoint_url="https://idp.example/token",
                     sasl_oauthbearer_client_id_env="ID",
                     sasl_oauthbearer_client_secret_env="SECRET",
                     client_secret="hunter2") == [
        "clusters.prod.client_secret: secrets must not be written in the conf; name the "
        "environment variable or the file that holds it (sasl_oauthbearer_client_secret_env "
        "/ sasl_oauthbearer_client_secret_file)"]


def test_a_principal_is_kafkas_type_and_name() -> None:
    assert _problems(principal="CN=job") == [
        "clusters.prod.principal: expected a principal as Kafka names it, TYPE:NAME "
        "(User:CN=job)"]


def test_each_weakening_is_said_once_per_cluster(tmp_path: Path, pem: dict[str, str],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """What makes a connection weaker than its conf looks is a warning, once per cluster
    (kafka-python's own are silenced with its logger)."""
    import os

    key = tmp_path / "world-readable.key"
    key.write_text(Path(pem["key"]).read_text())
    os.chmod(key, 0o644)
    password = _file(tmp_path, "password", "s3cret\n")
    os.chmod(password, 0o600)
    conf = parse_conf({**MINIMAL, "clusters": {
        "lax": {"bootstrap_servers": "127.0.0.1:9093", "security_protocol": "SSL",
                "ssl_cafile": pem["cert"], "ssl_certfile": pem["cert"],
                "ssl_keyfile": str(key), "ssl_check_hostname": False},
        "clear": {"bootstrap_servers": "127.0.0.1:9094", "security_protocol": "SASL_PLAINTEXT",
                  "sasl_mechanism": "PLAIN", "sasl_username_env": "U",
                  "sasl_password_file": password},
        "tight": {"bootstrap_servers": "127.0.0.1:9095", "security_protocol": "SASL_SSL",
                  "sasl_mechanism": "SCRAM-SHA-512", "sasl_username_env": "U",
                  "sasl_password_file": password}}}, "t.yaml")
    with caplog.at_level("WARNING", logger="provisioning.conf.secrets"):
        resolve_credentials(conf, {"U": "job"})
    assert caplog.messages == [
        "cluster lax: ssl_check_hostname is false: the brokers' certificates are not checked "
        "against the hosts the job connects to, so any certificate the CAs signed passes for "
        "this cluster's",
        "cluster lax: ssl_keyfile names a file every user of this machine may read (mode "
        "0644); make it readable by the job's user only",
        "cluster clear: SASL PLAIN over a plaintext listener (security_protocol "
        "SASL_PLAINTEXT): the password itself and every request after it cross the network "
        "unencrypted (use SASL_SSL)",
    ]
