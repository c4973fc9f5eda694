"""OIDC token sources (kafka.tokens) against a loopback endpoint of this module: one fetch per
process and client, renewal at 80% of a token's lifetime, refusals and unreachable
endpoints named without the secret; and the client settings each mechanism gets."""

from __future__ import annotations

import json
import pickle
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from provisioning.conf import ClusterConf, Credentials, KafkaConf, OAuthClient, Secret
from provisioning.errors import ClusterUnreachable
from provisioning.kafka import tokens
from provisioning.kafka.client import client_settings
from provisioning.kafka.tokens import MskIamTokens, OidcTokens, token_sources

SECRET = "unit-client-secret-42"


class Endpoint:
    """Answers POST /token with the next of `answers` (status, JSON body); records the
    requests' Authorization headers and forms."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, dict[str, Any]]] = []
        self.requests: list[tuple[str | None, str]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                endpoint.requests.append((self.headers.get("Authorization"),
                                          self.rfile.read(length).decode()))
                status, body = endpoint.answers.pop(0)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/token"


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    served = Endpoint()
    yield served
    served.server.shutdown()
    served.server.server_close()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1_800_000_000.0]
    monkeypatch.setattr(tokens.time, "time", lambda: now[0])
    monkeypatch.setattr(tokens.time, "sleep", lambda _: None)
    monkeypatch.setattr(tokens, "_HELD", {})
    return now


def _source(url: str, secret: str = SECRET, **kwargs: Any) -> OidcTokens:
    return OidcTokens("idp", url, OAuthClient(Secret("the-client"), Secret(secret)),
                      **kwargs)


def test_a_token_is_fetched_once_and_renewed_at_80_percent_of_its_life(
        endpoint: Endpoint, clock: list[float]) -> None:
    endpoint.answers = [(200, {"access_token": "first", "expires_in": 100}),
                        (200, {"access_token": "second", "expires_in": 100})]
    source = _source(endpoint.url, scope="kafka")
    assert [source.token(), _source(endpoint.url, scope="kafka").token()] == ["first"] * 2
    clock[0] += 79
    assert source.token() == "first"
    clock[0] += 2
    assert source.token() == "second"
    assert endpoint.requests == [
        ("Basic dGhlLWNsaWVudDp1bml0LWNsaWVudC1zZWNyZXQtNDI=",
         "grant_type=client_credentials&scope=kafka")] * 2
    # what travels to an executor is the client, and each process keeps its own tokens
    copy = pickle.loads(pickle.dumps(source))
    assert (copy.endpoint, copy.client, copy.scope) == (source.endpoint, source.client, "kafka")


def test_a_jwt_expiring_before_expires_in_is_renewed_by_its_exp(
        endpoint: Endpoint, clock: list[float]) -> None:
    import base64

    claims = base64.urlsafe_b64encode(json.dumps(
        {"sub": "job", "exp": int(clock[0]) + 10}).encode()).decode().rstrip("=")
    jwt = f"e30.{claims}.sig"
    endpoint.answers = [(200, {"access_token": jwt, "expires_in": 3600}),
                        (200, {"access_token": "later", "expires_in": 3600})]
    source = _source(endpoint.url, extensions={"logicalCluster": "lkc-1"})
    assert (source.token(), source.subject(), source.extensions()) == (
        jwt, "job", {"logicalCluster": "lkc-1"})
    clock[0] += 9
    assert source.token() == "later"


def test_a_refused_client_names_the_endpoint_and_its_error_never_the_secret(
        endpoint: Endpoint, clock: list[float]) -> None:
    endpoint.answers = [(401, {"error": "invalid_client",
                               "error_description": f"bad secret {SECRET}"})]
    with pytest.raises(ClusterUnreachable) as refused:
        _source(endpoint.url).token()
    assert str(refused.value) == (
        f"cluster idp: the token endpoint {endpoint.url} refused the client credentials "
        "(HTTP 401: invalid_client: bad secret ***)")
    assert len(endpoint.requests) == 1  # a refusal is not retried


def test_an_unreachable_endpoint_is_asked_three_times_then_named(clock: list[float]) -> None:
    from dev.devkafka import free_ports

    (port,) = free_ports(1)
    url = f"http://127.0.0.1:{port}/token"
    with pytest.raises(ClusterUnreachable) as unreachable:
        _source(url).token()
    assert str(unreachable.value) == (
        f"cluster idp: the token endpoint {url} is unreachable (ConnectionRefusedError: "
        "[Errno 111] Connection refused)")


def test_an_answer_without_a_token_is_named(endpoint: Endpoint, clock: list[float]) -> None:
    endpoint.answers = [(200, {"token_type": "Bearer"})]
    with pytest.raises(ClusterUnreachable, match="answered without an access_token"):
        _source(endpoint.url).token()


def test_each_mechanism_gets_its_client_settings() -> None:
    oauth = ClusterConf("o", "127.0.0.1:9093", "SASL_PLAINTEXT", "OAUTHBEARER",
                        sasl_oauthbearer_token_endpoint_url="http://127.0.0.1:1/token")
    msk = ClusterConf("m", "127.0.0.1:9098", "SASL_SSL", "AWS_MSK_IAM", aws_region="eu-west-1")
    creds = token_sources({"o": Credentials(oauth=OAuthClient(Secret("i"), Secret(SECRET)))},
                          {"o": oauth, "m": msk})
    assert isinstance(creds["m"].tokens, MskIamTokens)
    for cluster in (oauth, msk):
        settings = client_settings(cluster, creds[cluster.name], KafkaConf())
        assert (settings["sasl_mechanism"], settings["sasl_oauth_token_provider"]) == (
            "OAUTHBEARER", creds[cluster.name].tokens)
        assert "sasl_plain_password" not in settings
    assert SECRET not in repr(creds)
    with pytest.raises(ClusterUnreachable, match="no OAUTHBEARER token source"):
        client_settings(oauth, Credentials(), KafkaConf())
