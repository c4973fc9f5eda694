"""AWS MSK IAM: tokens signed with `aws-msk-iam-sasl-signer-python`, sent over OAUTHBEARER.

No broker here can verify an AWS signature (only AWS can), so what is proven is this:
- the token the job sends, with fixed test credentials, is a SigV4 presigned request for
  `kafka-cluster:Connect` in the conf's region, signed by the given access key (the test
  recomputes the signature with the fixed secret key), with an expiry;
- an executor gets a signed token, never the AWS credentials;
- the SASL exchange, through the job's CLI, with the session's OAuth broker whose IAM
  listener (SASL_SSL) checks the token's structure with a test-only Java validator
  (tests/java/provisioning/testing/MskIamTokenValidator.java) that takes the principal
  from the access key, under StandardAuthorizer with ACLs granted to that principal only.
The CLI runs through spark-submit.sh as a thin client of the session's Spark Connect server;
topics are on the prefix `msk.`.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import pickle
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from provisioning.conf import ClusterConf
from provisioning.errors import ClusterUnreachable
from provisioning.kafka.tokens import MskIamTokens, token_sources
from tests.helpers import Completed, audit_rows, broker_state_as, grant, write_conf
from tests.helpers import write_manifest_table as write_manifest
from tests.support.secured import IAM_LISTENER, MSK_REGION, OAuthBroker

pytestmark = pytest.mark.integration

CLUSTER = "msk"
# Fixed test credentials in AWS's shapes (nothing of AWS accepts them).
ACCESS_KEY = "AKIAPROVISIONINGTEST"
SECRET_KEY = "provisioning/Test+Secret/Key/0123456789abcdefgh"
PROFILE_KEY, PROFILE_SECRET = "AKIAPROFILEPROVTEST1", "profile/secret/key/0123456789abcdefghij"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
JOB_ACLS = [("TOPIC", "msk.", "PREFIXED", ["CREATE", "DESCRIBE", "DESCRIBE_CONFIGS"]),
            ("GROUP", "*", "LITERAL", ["DESCRIBE"])]


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The fixed credentials in the environment (the default chain's first source); no
    instance metadata lookup, no config file of this machine."""
    env = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
           "AWS_EC2_METADATA_DISABLED": "true",
           "AWS_CONFIG_FILE": str(tmp_path / "aws-config"),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws-credentials")}
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield env


def _cluster(bootstrap: str = "127.0.0.1:9098", **keys: Any) -> ClusterConf:
    return ClusterConf(CLUSTER, bootstrap, "SASL_SSL", "AWS_MSK_IAM",
                       aws_region=keys.pop("aws_region", MSK_REGION), **keys)


def _source(cluster: ClusterConf) -> MskIamTokens:
    source = token_sources({}, {CLUSTER: cluster})[CLUSTER].tokens
    assert isinstance(source, MskIamTokens)
    return source


def _presigned(token: str) -> tuple[str, dict[str, str]]:
    url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    return url, dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def _signature(url: str, secret_key: str, region: str) -> str:
    """SigV4 of a presigned GET, recomputed: the canonical request of its signed query
    (the signer adds User-Agent after signing) and the empty payload's hash."""
    parts = urlsplit(url)
    pairs = [p for p in parts.query.split("&")
             if p.split("=", 1)[0] not in ("X-Amz-Signature", "User-Agent")]
    query = dict(parse_qsl(parts.query))
    date = query["X-Amz-Date"]
    canonical = "\n".join(["GET", parts.path or "/", "&".join(sorted(pairs)),
                           f"host:{parts.netloc}\n", "host", EMPTY_SHA256])
    scope = f"{date[:8]}/{region}/kafka-cluster/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{secret_key}".encode()
    for part in (date[:8], region, "kafka-cluster", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def test_the_token_is_a_connect_request_signed_by_the_access_key(
        aws_env: dict[str, str]) -> None:
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    token = _source(_cluster()).token()
    url, query = _presigned(token)
    signed_at = dt.datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(
        tzinfo=dt.UTC)
    assert urlsplit(url)[:3] == ("https", f"kafka.{MSK_REGION}.amazonaws.com", "/")
    assert {k: v for k, v in query.items() if k not in ("X-Amz-Date", "X-Amz-Signature",
                                                        "User-Agent")} == {
        "Action": "kafka-cluster:Connect",
        "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
        "X-Amz-Credential": f"{ACCESS_KEY}/{signed_at:%Y%m%d}/{MSK_REGION}/kafka-cluster/"
                            "aws4_request",
        "X-Amz-Expires": "900",
        "X-Amz-SignedHeaders": "host",
    }
    assert query["User-Agent"] == "aws-msk-iam-sasl-signer-python/1.0.2"
    assert before <= signed_at <= dt.datetime.now(dt.UTC)
    assert query["X-Amz-Signature"] == _signature(url, SECRET_KEY, MSK_REGION)
    assert query["X-Amz-Signature"] != _signature(url, SECRET_KEY + "x", MSK_REGION)
    assert SECRET_KEY not in url


def test_a_profile_signs_with_its_own_key(aws_env: dict[str, str]) -> None:
    Path(aws_env["AWS_SHARED_CREDENTIALS_FILE"]).write_text(
        f"[ops]\naws_access_key_id = {PROFILE_KEY}\n"
        f"aws_secret_access_key = {PROFILE_SECRET}\n")
    url, query = _presigned(_source(_cluster(aws_profile="ops")).token())
    assert query["X-Amz-Credential"].split("/")[0] == PROFILE_KEY
    assert query["X-Amz-Signature"] == _signature(url, PROFILE_SECRET, MSK_REGION)


def test_an_executor_gets_a_signed_token_never_the_credentials(
        aws_env: dict[str, str]) -> None:
    credentials = token_sources({}, {CLUSTER: _cluster()})
    shipped = pickle.dumps(credentials)
    for secret in (SECRET_KEY.encode(), b"aws_secret_access_key", b"botocore"):
        assert secret not in shipped
    copy = pickle.loads(shipped)[CLUSTER].tokens
    token = copy.token()
    url, query = _presigned(token)
    assert query["X-Amz-Signature"] == _signature(url, SECRET_KEY, MSK_REGION)
    # the copy cannot sign: the same token until it expires, then a clear refusal
    assert copy.token() == token
    copy._held = type(copy._held)(copy._held.token, time.time() - 900, time.time() - 1)
    with pytest.raises(ClusterUnreachable) as expired:
        copy.token()
    assert str(expired.value) == (
        f"cluster {CLUSTER}: the MSK IAM token the driver signed for this task has expired "
        "(tokens live 15 minutes; a task this long needs a shorter kafka.batch_size)")


def _conf(work: Path, broker: OAuthBroker, region: str = MSK_REGION,
          timeout_ms: int = 15000) -> Path:
    return write_conf(work / f"msk-{region}.yaml", broker.bootstrap(IAM_LISTENER), work / "wh",
                      cluster=CLUSTER, cluster_extra={
                          "security_protocol": "SASL_SSL", "sasl_mechanism": "AWS_MSK_IAM",
                          "ssl_cafile": str(broker.tls.ca_file), "aws_region": region,
                          "principal": f"User:{ACCESS_KEY}"},
                      extra={"kafka": {"request_timeout_ms": timeout_ms,
                                       "operation_timeout_ms": 15000}})


def _state(broker: OAuthBroker) -> dict[str, tuple[int, int]]:
    return {n: (s["partitions"], s["replication_factor"])
            for n, s in broker_state_as(broker.admin_settings()).items()
            if n.startswith("msk.")}


def test_plan_and_apply_over_msk_iam_as_the_access_key(
        oauth_kafka: OAuthBroker, aws_env: dict[str, str], spark: Any,
        cli: Callable[..., Completed], tmp_path: Path) -> None:
    grant(oauth_kafka.admin_settings(), f"User:{ACCESS_KEY}", JOB_ACLS)
    write_manifest(spark, tmp_path / "wh" / "desired_topics", [
        {"cluster": CLUSTER, "topic": "msk.orders", "partitions": 2, "replication_factor": 1},
        {"cluster": CLUSTER, "topic": "msk.clicks", "partitions": 1, "replication_factor": 1}])
    conf = _conf(tmp_path, oauth_kafka)

    plan = cli(["plan", "--conf", str(conf), "--json"], env=aws_env)
    assert plan.returncode == 0, plan.output[-4000:]
    assert _state(oauth_kafka) == {}
    apply = cli(["apply", "--conf", str(conf), "--json"], env=aws_env)
    assert apply.returncode == 0, apply.output[-4000:]
    assert _state(oauth_kafka) == {"msk.orders": (2, 1), "msk.clicks": (1, 1)}
    assert audit_rows(spark, tmp_path / "wh", apply.json()["run_id"]) == sorted(
        (CLUSTER, topic, "CREATE", phase, outcome) for topic in ("msk.orders", "msk.clicks")
        for phase, outcome in (("plan", "planned"), ("validate", "validated"),
                               ("apply", "created"), ("verify", "created")))
    assert SECRET_KEY not in plan.output + apply.output

    # A token for another region is refused by the broker's validator: exit 3, unchanged
    # (kafka-python retries a refused login until its bootstrap times out: 5 s here).
    other = _conf(tmp_path, oauth_kafka, "us-east-1", timeout_ms=5000)
    refused = cli(["plan", "--conf", str(other), "--json"], env=aws_env)
    assert refused.returncode == 3, refused.output[-4000:]
    assert refused.json()["error"].startswith(
        f"cluster {CLUSTER}: authentication failed (SASL_AUTHENTICATION_FAILED: ")
    assert _state(oauth_kafka) == {"msk.orders": (2, 1), "msk.clicks": (1, 1)}


def test_debug_logging_anywhere_never_shows_a_token_or_the_secret_key(
        aws_env: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    import logging

    caplog.set_level(logging.DEBUG)
    for name in ("botocore", "botocore.auth", "boto3", "aws_msk_iam_sasl_signer"):
        caplog.set_level(logging.DEBUG, logger=name)
    token = _source(_cluster()).token()
    _, query = _presigned(token)
    messages = "\n".join(r.getMessage() for r in caplog.records)
    # the capture saw botocore's own records (the credentials chain, at INFO)
    assert any(r.name.startswith("botocore") for r in caplog.records), messages
    assert [s for s in (token, query["X-Amz-Signature"], SECRET_KEY) if s in messages] == []
