"""A corpus of bad input where secrets go: every auth key of a cluster, and every way a user
manifest row may name its password.

Each auth key case runs the job's own command line in this process (`plan --json`, as an
operator would): it exits 2 naming the key, with the exact problem, and the secret of the
case is in no output (stdout, stderr, log records). Each row case is judged as the run
judges it: at plan, the row's source against `users.password_sources`
(`transforms.users.plan.with_source_errors`, before any request); at validate, the
password read on the driver (`conf.users.read_password`): a rejected row, with the exact
reason, and never the secret.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from pyspark.sql import SparkSession

from provisioning.cli import run
from provisioning.conf import ClusterConf, Conf, Credentials, Secret, TablesConf
from provisioning.kinds.users.conf import PasswordSources, read_password, source_rules
from provisioning.kinds.users.plan import with_source_errors
from provisioning.kinds.users.schema import USER_DESIRED

# The secret each case hides, and the same as a valid environment variable's name.
SECRET = "Zq9-hunter2-secret-7731"
SECRET_NAME = "Zq9hunter2secret7731"
NOT_REPEATED = "its value is not repeated here, in case it is a secret written in this key"
TABLES = {"manifests": ["wh/desired_topics"], "audit": "wh/topic_audit",
          "runs": "wh/provision_runs", "snapshots": "wh/topic_snapshots"}
PLAIN = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
         "sasl_username_env": "CORPUS_USER", "sasl_password_env": "CORPUS_PASSWORD"}
OAUTH = {"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER",
         "sasl_oauthbearer_token_endpoint_url": "https://idp.example/token",
         "sasl_oauthbearer_client_id_env": "CORPUS_CLIENT",
         "sasl_oauthbearer_client_secret_env": "CORPUS_CLIENT_SECRET"}
ENV = {"CORPUS_USER": "job", "CORPUS_PASSWORD": "job-password",
       "CORPUS_CLIENT": "job-client", "CORPUS_CLIENT_SECRET": "job-client-secret"}


def _without(settings: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in settings.items() if k not in keys}


def _not_set(key: str) -> str:
    return (f"clusters.prod.{key}: the environment variable it names is not set "
            f"({NOT_REPEATED})")


def _no_file(key: str) -> str:
    return (f"clusters.prod.{key}: names no file ({NOT_REPEATED}; relative paths are taken "
            "from the directory the job runs in)")


@pytest.fixture(scope="module")
def pem(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A self-signed certificate and its key encrypted with a password, made with openssl."""
    d = tmp_path_factory.mktemp("pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    "key.pem", "-out", "cert.pem", "-days", "1", "-subj", "/CN=job"],
                   cwd=d, check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", "key.pem", "-aes256", "-passout",
                    "pass:keypw-123", "-out", "encrypted.pem"], cwd=d, check=True,
                   capture_output=True)
    os.chmod(d / "encrypted.pem", 0o600)
    return {name: str(d / f"{name}.pem") for name in ("cert", "key", "encrypted")}


def _fifo(d: Path) -> str:
    os.mkfifo(d / "fifo")
    return str(d / "fifo")


def _big(d: Path) -> str:
    (d / "big").write_text(SECRET * 4000)
    return str(d / "big")


def _not_pem(d: Path) -> str:
    (d / "ca.txt").write_text(f"not a certificate {SECRET}\n")
    return str(d / "ca.txt")


# name -> (the cluster's settings, given the case's folder and the PEM files; the extra
# environment; the exact problems)
Case = tuple[Callable[[Path, dict[str, str]], dict[str, Any]], dict[str, str], list[str]]
AUTH_KEYS: dict[str, Case] = {
    "sasl_username_env holds the secret": (
        lambda d, p: {**PLAIN, "sasl_username_env": SECRET_NAME}, {},
        [_not_set("sasl_username_env")]),
    "sasl_password_env holds the secret": (
        lambda d, p: {**PLAIN, "sasl_password_env": SECRET_NAME}, {},
        [_not_set("sasl_password_env")]),
    "sasl_password_env holds a secret that is no name": (
        lambda d, p: {**PLAIN, "sasl_password_env": SECRET}, {},
        ["clusters.prod.sasl_password_env: must be the NAME of an environment variable "
         "(letters, digits, _), not the secret itself"]),
    "sasl_password_env names an empty variable": (
        lambda d, p: PLAIN, {"CORPUS_PASSWORD": ""},
        ["clusters.prod.sasl_password_env: the environment variable it names is empty"]),
    "the password written in the conf": (
        lambda d, p: {**_without(PLAIN, "sasl_password_env"), "sasl_password": SECRET}, {},
        ["clusters.prod.sasl_password: secrets must not be written in the conf; name the "
         "environment variable or the file that holds it (sasl_username_env / "
         "sasl_password_env, or their *_file keys)",
         "clusters.prod.sasl_password_env: required when security_protocol is "
         "SASL_PLAINTEXT (or sasl_password_file)"]),
    "sasl_username_file holds the secret": (
        lambda d, p: {**_without(PLAIN, "sasl_username_env"), "sasl_username_file": SECRET},
        {}, [_no_file("sasl_username_file")]),
    "sasl_password_file holds the secret": (
        lambda d, p: {**_without(PLAIN, "sasl_password_env"), "sasl_password_file": SECRET},
        {}, [_no_file("sasl_password_file")]),
    "sasl_password_file is a FIFO": (
        lambda d, p: {**_without(PLAIN, "sasl_password_env"), "sasl_password_file": _fifo(d)},
        {}, [_no_file("sasl_password_file")]),
    "sasl_password_file is a device": (
        lambda d, p: {**_without(PLAIN, "sasl_password_env"),
                      "sasl_password_file": "/dev/zero"},
        {}, [_no_file("sasl_password_file")]),
    "sasl_password_file is a folder": (
        lambda d, p: {**_without(PLAIN, "sasl_password_env"), "sasl_password_file": str(d)},
        {}, [_no_file("sasl_password_file")]),
    "sasl_password_file is too large to be a secret": (
        lambda d, p: {**_without(PLAIN, "sasl_password_env"), "sasl_password_file": _big(d)},
        {}, ["clusters.prod.sasl_password_file: the file it names cannot be read (larger "
             f"than 65536 bytes; {NOT_REPEATED})"]),
    "sasl_oauthbearer_client_id_env holds the secret": (
        lambda d, p: {**OAUTH, "sasl_oauthbearer_client_id_env": SECRET_NAME}, {},
        [_not_set("sasl_oauthbearer_client_id_env")]),
    "sasl_oauthbearer_client_secret_env holds the secret": (
        lambda d, p: {**OAUTH, "sasl_oauthbearer_client_secret_env": SECRET_NAME}, {},
        [_not_set("sasl_oauthbearer_client_secret_env")]),
    "sasl_oauthbearer_client_id_file holds the secret": (
        lambda d, p: {**_without(OAUTH, "sasl_oauthbearer_client_id_env"),
                      "sasl_oauthbearer_client_id_file": SECRET}, {},
        [_no_file("sasl_oauthbearer_client_id_file")]),
    "sasl_oauthbearer_client_secret_file holds the secret": (
        lambda d, p: {**_without(OAUTH, "sasl_oauthbearer_client_secret_env"),
                      "sasl_oauthbearer_client_secret_file": SECRET}, {},
        [_no_file("sasl_oauthbearer_client_secret_file")]),
    "the client secret written in the conf": (
        lambda d, p: {**OAUTH, "sasl_oauthbearer_client_secret": SECRET}, {},
        ["clusters.prod.sasl_oauthbearer_client_secret: secrets must not be written in the "
         "conf; name the environment variable or the file that holds it "
         "(sasl_oauthbearer_client_secret_env / sasl_oauthbearer_client_secret_file)"]),
    "a token endpoint with the secret in it": (
        lambda d, p: {**OAUTH, "sasl_oauthbearer_token_endpoint_url":
                      f"https://job-client:{SECRET}@idp.example/token"}, {},
        ["clusters.prod.sasl_oauthbearer_token_endpoint_url: a URL with a user or password "
         "in it would put a secret in the conf; name the client's *_env or *_file keys "
         "instead"]),
    "a token endpoint on plain http": (
        lambda d, p: {**OAUTH, "sasl_oauthbearer_token_endpoint_url":
                      "http://idp.example/token"}, {},
        ["clusters.prod.sasl_oauthbearer_token_endpoint_url: the client secret is sent to it: "
         "https:// is required (http:// only for a loopback host: 127.0.0.1, ::1, "
         "localhost); an identity provider with a CA of its own: sasl_oauthbearer_ca_file"]),
    "a CA for a plain http token endpoint": (
        lambda d, p: {**OAUTH, "sasl_oauthbearer_token_endpoint_url":
                      "http://127.0.0.1:1/token", "sasl_oauthbearer_ca_file": p["cert"]}, {},
        ["clusters.prod.sasl_oauthbearer_ca_file: only used with an https:// "
         "sasl_oauthbearer_token_endpoint_url"]),
    "a token endpoint CA file that holds no certificate": (
        lambda d, p: {**OAUTH, "sasl_oauthbearer_ca_file": _not_pem(d)}, {},
        ["clusters.prod.sasl_oauthbearer_ca_file: {dir}/ca.txt holds no PEM certificate"]),
    "an extension that smuggles a control character": (
        lambda d, p: {**OAUTH, "sasl_oauthbearer_extensions": {"pool": f"{SECRET}\x01"}},
        {}, ["clusters.prod.sasl_oauthbearer_extensions.pool: an extension's value is "
             "printable ASCII, blanks allowed (RFC 7628)"]),
    "ssl_key_password_env holds the secret": (
        lambda d, p: {"security_protocol": "SSL", "ssl_certfile": p["cert"],
                      "ssl_keyfile": p["encrypted"], "ssl_key_password_env": SECRET_NAME},
        {}, [_not_set("ssl_key_password_env")]),
    "ssl_key_password_file holds the secret": (
        lambda d, p: {"security_protocol": "SSL", "ssl_certfile": p["cert"],
                      "ssl_keyfile": p["encrypted"], "ssl_key_password_file": SECRET},
        {}, [_no_file("ssl_key_password_file")]),
    "a key password longer than OpenSSL takes": (
        lambda d, p: {"security_protocol": "SSL", "ssl_certfile": p["cert"],
                      "ssl_keyfile": p["encrypted"], "ssl_key_password_env": "CORPUS_KEY_PW"},
        {"CORPUS_KEY_PW": SECRET * 50},
        ["clusters.prod.ssl_key_password_env: the key's password is longer than the 1024 "
         "bytes OpenSSL takes"]),
    "a wrong key password": (
        lambda d, p: {"security_protocol": "SSL", "ssl_certfile": p["cert"],
                      "ssl_keyfile": p["encrypted"], "ssl_key_password_env": "CORPUS_KEY_PW"},
        {"CORPUS_KEY_PW": SECRET},
        ["clusters.prod.ssl_keyfile: {encrypted} is not the PEM private key of ssl_certfile "
         "{cert}, or its password is wrong (SSLError)"]),
    "the AWS secret key written in the conf": (
        lambda d, p: {"security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM",
                      "aws_region": "eu-west-1", "aws_secret_access_key": SECRET}, {},
        ["clusters.prod.aws_secret_access_key: secrets must not be written in the conf; name "
         "the environment variable or the file that holds it (the AWS credentials chain: "
         "aws_profile, aws_role_arn or the AWS_* environment variables)"]),
    "a role that is the secret": (
        lambda d, p: {"security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM",
                      "aws_region": "eu-west-1", "aws_role_arn": SECRET}, {},
        ["clusters.prod.aws_role_arn: expected an IAM role's ARN, "
         "arn:aws:iam::ACCOUNT:role/NAME"]),
}


@pytest.mark.parametrize("case", sorted(AUTH_KEYS))
def test_each_bad_auth_key_exits_2_naming_it_and_never_shows_the_secret(
        case: str, tmp_path: Path, pem: dict[str, str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    settings, env, problems = AUTH_KEYS[case]
    monkeypatch.chdir(tmp_path)
    for name, value in {**ENV, **env}.items():
        monkeypatch.setenv(name, value)
    conf = tmp_path / "conf.yaml"
    conf.write_text(yaml.safe_dump({"clusters": {"prod": {
        "bootstrap_servers": "127.0.0.1:1", **settings(tmp_path, pem)}}, "tables": TABLES}))
    with caplog.at_level(logging.DEBUG):
        code = run(["plan", "--conf", str(conf), "--json"])
    out = capsys.readouterr()
    expected = [p.format(**pem, dir=tmp_path) for p in problems]
    assert (code, json.loads(out.out.strip().splitlines()[-1])["error"]) == (
        2, f"invalid conf {conf}: {len(expected)} problem(s)\n"
           + "\n".join(f"  - {p}" for p in expected))
    shown = out.out + out.err + caplog.text
    assert [s for s in (SECRET, SECRET_NAME) if s in shown] == []


# -- where a user manifest row may name its password ---------------------------------------

JOB_ENV = "KUP_JOB_PASSWORD"
PREFIX = "KUP_"
LONG_ENOUGH = "a-user-password-of-24ch"


@pytest.fixture
def sources(tmp_path: Path) -> dict[str, Any]:
    """A folder the conf allows, the job's own secret file inside it, and what is around."""
    allowed = tmp_path / "users"
    allowed.mkdir()
    (allowed / "app").write_text(LONG_ENOUGH + "\n")
    (allowed / "short").write_text("short\n")
    (allowed / "empty").write_text("")
    (allowed / "big").write_text("x" * 5000)
    (allowed / "folder").mkdir()
    (allowed / "job").write_text("job-password-that-is-long\n")
    os.mkfifo(allowed / "fifo")
    (allowed / "zero").symlink_to("/dev/zero")
    (allowed / "out").symlink_to("/etc/hostname")
    (tmp_path / "elsewhere").write_text(SECRET + "\n")
    job = ClusterConf("prod", "127.0.0.1:1", "SASL_PLAINTEXT", "PLAIN",
                      sasl_username_env="KUP_JOB_USER", sasl_password_env=JOB_ENV,
                      sasl_password_file=None)
    other = ClusterConf("other", "127.0.0.1:2", "SASL_PLAINTEXT", "PLAIN",
                        sasl_username_file=str(allowed / "job-user"),
                        sasl_password_file=str(allowed / "job"))
    conf = Conf("conf.yaml", "d", {"prod": job, "other": other},
                TablesConf(manifests=("m",), audit="a", runs="r", snapshots="s"))
    rules = source_rules(conf, PasswordSources(env_prefix=PREFIX, folders=(str(allowed),)))
    return {"folder": allowed, "rules": rules, "tmp": tmp_path,
            "credentials": {"prod": Credentials(Secret("job"), Secret("job-env-password"))}}


ENVIRON = {"PATH": "/usr/bin", JOB_ENV: "job-env-password", "KUP_APP": LONG_ENOUGH,
           "KUP_SHORT": "short", "KUP_EMPTY": "", "KUP_SAME": "job-env-password"}
UNREADABLE = ("password_file: the file it names gives no password (missing, unreadable, not "
              "a regular file, empty or over 4096 bytes)")
JOB_SECRET = ("password: the variable or file it names holds a secret the job itself uses for "
              "a cluster; a user's password never comes from there")
NOT_A_PREFIXED_VARIABLE = ("password_env: not a variable users.password_sources allows (a "
                           "name starting with KUP_)")


def _outside(folder: Path) -> str:
    return f"password_file: not in a folder users.password_sources allows ({folder})"


# name -> (password_env, password_file given the folder and tmp dir, the reason at plan
# (None: it passes the conf's rules), the reason the password cannot be read at validate)
ROWS: dict[str, tuple[str | None, Callable[[Path, Path], str] | None, Any, Any]] = {
    "a variable outside the prefix (PATH)": ("PATH", None, NOT_A_PREFIXED_VARIABLE, None),
    "the job's own password variable": (JOB_ENV, None, JOB_SECRET, None),
    "the prefix alone": ("KUP_", None, NOT_A_PREFIXED_VARIABLE, None),
    "the secret typed as the variable": (SECRET, None, NOT_A_PREFIXED_VARIABLE, None),
    "a variable not set": ("KUP_NOPE", None, None,
                           "password_env: the variable it names holds no password (not set, "
                           "or empty)"),
    "an empty variable": ("KUP_EMPTY", None, None,
                          "password_env: the variable it names holds no password (not set, "
                          "or empty)"),
    "a variable holding the job's own password": ("KUP_SAME", None, None, JOB_SECRET),
    "a password shorter than the policy": (
        "KUP_SHORT", None, None,
        "password_min_length: the password is shorter than the 16 characters "
        "users.password_min_length asks for"),
    "a system file (/etc/hostname)": (None, lambda f, t: "/etc/hostname", "outside", None),
    "a relative path": (None, lambda f, t: "users/app", "outside", None),
    "a path climbing out with ..": (None, lambda f, t: f"{f}/../elsewhere", "outside", None),
    "the secret typed as the file": (None, lambda f, t: SECRET, "outside", None),
    "the job's own secret file": (None, lambda f, t: f"{f}/job", JOB_SECRET, None),
    "a FIFO": (None, lambda f, t: f"{f}/fifo", None, UNREADABLE),
    "a link to a device (/dev/zero)": (None, lambda f, t: f"{f}/zero", None, "outside"),
    "a link out of the folder": (None, lambda f, t: f"{f}/out", None, "outside"),
    "a folder": (None, lambda f, t: f"{f}/folder", None, UNREADABLE),
    "a missing file": (None, lambda f, t: f"{f}/missing", None, UNREADABLE),
    "an empty file": (None, lambda f, t: f"{f}/empty", None, UNREADABLE),
    "a file too large to be a password": (None, lambda f, t: f"{f}/big", None, UNREADABLE),
}


@pytest.mark.parametrize("case", sorted(ROWS))
def test_each_bad_password_source_is_a_rejected_row_naming_it(
        case: str, sources: dict[str, Any], spark: SparkSession) -> None:
    env, file_of, at_plan, at_validate = ROWS[case]
    folder = sources["folder"]
    file = None if file_of is None else file_of(folder, sources["tmp"])

    def reason(expected: Any) -> Any:
        return _outside(folder) if expected == "outside" else expected

    row = {f.name: None for f in USER_DESIRED.fields}
    row.update(cluster="prod", user="app", mechanism="SCRAM-SHA-512", iterations=8192,
               password_env=env, password_file=file, row_errors=[], source_table="m",
               source_version=0)
    planned = spark.createDataFrame([tuple(row[f.name] for f in USER_DESIRED.fields)],
                                    USER_DESIRED).transform(with_source_errors(sources["rules"]))
    errors = planned.collect()[0]["row_errors"]
    assert errors == ([] if at_plan is None else [reason(at_plan)])
    if at_plan is None:
        read = read_password(env, file, ENVIRON, sources["rules"], 16, sources["credentials"])
        assert read == reason(at_validate)
        assert not isinstance(read, Secret)
        assert SECRET not in str(read)
    assert [e for e in errors if SECRET in e] == []


def test_a_password_from_an_allowed_source_is_read(sources: dict[str, Any]) -> None:
    rules, folder = sources["rules"], sources["folder"]
    assert read_password("KUP_APP", None, ENVIRON, rules, 16) == Secret(LONG_ENOUGH)
    assert read_password(None, f"{folder}/app", ENVIRON, rules, 16) == Secret(LONG_ENOUGH)


def test_no_source_is_allowed_unless_the_conf_says_so(sources: dict[str, Any]) -> None:
    rules = source_rules(Conf("c", "d", {}, TablesConf(manifests=("m",), audit="a", runs="r",
                                                         snapshots="s")), PasswordSources())
    assert [read_password("KUP_APP", None, ENVIRON, rules, 16),
            read_password(None, f"{sources['folder']}/app", ENVIRON, rules, 16)] == [
        "password_env: users.password_sources allows no environment variable (its env_prefix "
        "is not set)",
        "password_file: users.password_sources allows no file (its folders are not set)"]


def test_a_user_manifest_with_a_password_column_is_refused_before_any_row_is_read(
        spark: SparkSession, tmp_path: Path) -> None:
    from provisioning.delta.manifests import read_manifests
    from provisioning.errors import UsageError
    from provisioning.kinds.users.schema import USER_MANIFEST

    table = tmp_path / "users"
    spark.createDataFrame([("prod", "app", "SCRAM-SHA-512", "KUP_APP", SECRET)],
                          "cluster string, user string, mechanism string, "
                          "password_env string, Password string"
                          ).write.format("delta").save(str(table))
    with pytest.raises(UsageError) as refused:
        read_manifests(spark, [str(table)], USER_MANIFEST, USER_DESIRED,
                       ("cluster", "user", "mechanism"), "user manifest")
    assert str(refused.value) == (
        f"user manifest table {table} has a column that holds secrets (Password): a "
        "manifest names where a secret is (a user manifest: password_env or password_file), "
        "never the secret; drop the column, and rotate what it held (the table's history "
        "keeps it)")
    assert refused.value.exit_code == 2
