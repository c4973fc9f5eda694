"""OIDC token sources (kafka.tokens) against a loopback endpoint of this module: one fetch per
process and client, renewal at 80% of a token's lifetime, refusals and unreachable
endpoints named without the secret; and the client settings each mechanism gets."""

from __future__ import annotations

import base64
import json
import pickle
import socket
import ssl
import threading
import urllib.parse
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
    """Answers POST /token with the next of `answers` (status, JSON body or raw bytes, and
    headers); records the requests' Authorization headers and forms. With `tls`, serves
    https with its certificate."""

    def __init__(self, tls: Any = None) -> None:
        self.answers: list[tuple[int, Any] | tuple[int, Any, dict[str, str]]] = []
        self.requests: list[tuple[str | None, str]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                authorization = self.headers.get("Authorization")
                endpoint.requests.append((authorization, self.rfile.read(length).decode()))
                status, body, *more = endpoint.answers.pop(0)
                if callable(body):
                    body = body(authorization)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                for name, value in (more[0] if more else {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            # A redirected POST may arrive as a GET: recorded alike.
            do_GET = do_POST

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.scheme = "http"
        if tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(tls.keystore_file)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server.server_address[1]}/token"


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
    monkeypatch.setattr(tokens, "_RETRY_AT", {}, raising=False)
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
        "(HTTP 401: invalid_client)")
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


def test_a_redirect_is_never_followed_and_the_secret_goes_nowhere_else(
        endpoint: Endpoint, clock: list[float]) -> None:
    elsewhere = Endpoint()
    try:
        endpoint.answers = [(302, b"", {"Location": elsewhere.url})]
        elsewhere.answers = [(200, {"access_token": "stolen", "expires_in": 100})]
        with pytest.raises(ClusterUnreachable) as redirected:
            _source(endpoint.url).token()
        assert str(redirected.value) == (
            f"cluster idp: the token endpoint {endpoint.url} answered a redirect (HTTP 302), "
            "which the job never follows: the client secret would go with it. Name the "
            "endpoint itself in sasl_oauthbearer_token_endpoint_url")
        assert (len(endpoint.requests), elsewhere.requests) == (1, [])
    finally:
        elsewhere.server.shutdown()
        elsewhere.server.server_close()


def _encodings(secret: str) -> list[str]:
    """The secret as the request sent it and as an endpoint may echo it back."""
    pair = f"the-client:{secret}".encode()
    return [secret, base64.b64encode(pair).decode(), base64.b64encode(secret.encode()).decode(),
            urllib.parse.quote(secret), secret.encode().hex(), secret[::-1]]


@pytest.mark.parametrize(("body", "shown"), [
    (lambda auth: {"error": "invalid_client", "error_description": f"you sent {auth}"},
     "HTTP 401: invalid_client"),
    (lambda auth: {"error": auth, "error_description": "bad"}, "HTTP 401"),
    (lambda auth: f"<html>denied: {auth} {auth.encode().hex()}</html>".encode(), "HTTP 401"),
], ids=["description", "error field", "html"])
def test_an_endpoint_that_echoes_the_request_never_puts_the_secret_in_the_error(
        endpoint: Endpoint, clock: list[float], body: Any, shown: str) -> None:
    endpoint.answers = [(401, body)]
    with pytest.raises(ClusterUnreachable) as refused:
        _source(endpoint.url).token()
    message = str(refused.value)
    assert message == (f"cluster idp: the token endpoint {endpoint.url} refused the client "
                       f"credentials ({shown})")
    assert [e for e in _encodings(SECRET) if e in message] == []


def test_an_answer_that_is_not_http_is_exit_3_naming_the_cluster(clock: list[float]) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer_garbage() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(f"NOT-HTTP {SECRET}\r\n\r\n".encode())

    threading.Thread(target=answer_garbage, daemon=True).start()
    url = f"http://127.0.0.1:{port}/token"
    try:
        with pytest.raises(ClusterUnreachable) as garbled:
            _source(url).token()
    finally:
        listener.close()
    assert str(garbled.value) == (f"cluster idp: the token endpoint {url} answered with "
                                  "something that is not HTTP (BadStatusLine)")
    assert garbled.value.exit_code == 3


def test_a_failed_renewal_keeps_the_held_token_until_it_expires(
        endpoint: Endpoint, clock: list[float], caplog: pytest.LogCaptureFixture) -> None:
    endpoint.answers = [(200, {"access_token": "first", "expires_in": 100}),
                        (503, {"error": "temporarily_unavailable"}),
                        (503, {"error": "temporarily_unavailable"}),
                        (503, {"error": "temporarily_unavailable"}),
                        (503, {"error": "temporarily_unavailable"}),
                        (503, {"error": "temporarily_unavailable"}),
                        (503, {"error": "temporarily_unavailable"})]
    source = _source(endpoint.url)
    assert source.token() == "first"
    clock[0] += 81
    with caplog.at_level("WARNING", logger="provisioning.kafka.tokens"):
        assert source.token() == "first"
        # Asked again only once the pause after a failed renewal is over.
        clock[0] += 10
        assert source.token() == "first"
    assert len(endpoint.requests) == 4
    assert caplog.messages == [
        f"cluster idp: the token endpoint {endpoint.url} refused the client credentials "
        "(HTTP 503: temporarily_unavailable); the token held is used until it expires, in "
        "19 s"]
    clock[0] += 10  # expired: no token to fall back on
    with pytest.raises(ClusterUnreachable, match=r"\(HTTP 503: temporarily_unavailable\)"):
        source.token()


def test_a_renewal_ends_within_its_bound_and_the_held_token_stands_in(
        clock: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    """An endpoint that takes connections and never answers: the renewal gives up within
    RENEW_TIMEOUT_S (here shortened), whatever the client's own timeout."""
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/token"
    source = _source(url, timeout_s=30.0)
    tokens._HELD[source._key] = tokens._Held(Secret("held"), clock[0] - 90, clock[0] + 10)
    monkeypatch.setattr(tokens, "RENEW_TIMEOUT_S", 0.3, raising=False)
    try:
        assert source.token() == "held"
    finally:
        listener.close()


def test_an_https_endpoint_is_checked_against_the_given_ca(
        tmp_path: Any, clock: list[float]) -> None:
    from dev.devkafka import TlsFiles

    tls = TlsFiles.create(tmp_path / "idp")
    served = Endpoint(tls)
    try:
        served.answers = [(200, {"access_token": "over-tls", "expires_in": 100})]
        client = OAuthClient(Secret("the-client"), Secret(SECRET), tls.ca_file.read_text())
        assert OidcTokens("idp", served.url, client).token() == "over-tls"
        # Without the CA, the endpoint's certificate is refused, and nothing is sent.
        with pytest.raises(ClusterUnreachable) as untrusted:
            OidcTokens("idp", served.url, OAuthClient(Secret("other"), Secret(SECRET))).token()
        assert str(untrusted.value).startswith(
            f"cluster idp: the token endpoint {served.url} is unreachable "
            "(SSLCertVerificationError: ")
        assert len(served.requests) == 1
    finally:
        served.server.shutdown()
        served.server.server_close()
