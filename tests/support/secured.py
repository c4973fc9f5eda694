"""Secured brokers for the connection tests of issue 51, shared by the session: one whose
TLS listener requires client certificates (mTLS), and one whose OAUTHBEARER listeners check
OIDC tokens (Kafka's own JWT validator) and MSK IAM tokens (a test-only validator).

Every file is made here with openssl (CAs, certificates, the token issuer's RSA key), and
the tokens come from `TokenIssuer`, a small OIDC client-credentials endpoint on loopback
that signs RS256 JWTs with the key of the JWKS file the broker reads. Both brokers run
StandardAuthorizer with no ACL for anyone but their admin: each test grants its own
principal what it needs, on its own name prefix.
"""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from dev.devkafka import HOST, KafkaCluster, ListenerSpec, SaslUsers, TlsFiles

ADMIN_PASSWORD = f"admin-{secrets.token_hex(8)}"
# The SCRAM user of the OAuth broker's first listener (the tests of secrets from files).
SCRAM_USER = "filejob"
SCRAM_PASSWORD = f"scrampw-{secrets.token_hex(8)}"
OAUTH_LISTENER = "OAUTH"
IAM_LISTENER = "IAM"
MTLS_LISTENER = "MTLS"
AUDIENCE = "kafka-provisioning-tests"
MSK_REGION = "eu-west-1"
JWT_VALIDATOR = ("org.apache.kafka.common.security.oauthbearer."
                 "OAuthBearerValidatorCallbackHandler")
_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
# The broker logs in on each OAUTHBEARER listener at start (with Kafka's unsecured login
# handler, which needs a subject); clients' tokens are what the validators check.
_SERVER_LOGIN = f'{_LOGIN_MODULE} required unsecuredLoginStringClaim_sub="broker" ;'
# Kafka reads the JWKS file only from a URL this JVM property allows.
ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls"


def _openssl(directory: Path, *args: str, stdin: bytes | None = None) -> bytes:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl not found on PATH: it makes the tests' keys")
    done = subprocess.run([openssl, *args], cwd=directory, input=stdin, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.decode()[-2000:]}")
    return done.stdout


@dataclass(frozen=True)
class ClientCertificate:
    """A client certificate (PEM) and its key, signed by a test CA."""

    certificate: Path
    key: Path
    subject: str        # as openssl's -subj writes it
    principal: str      # as Kafka's default principal builder names it

    @classmethod
    def create(cls, ca: TlsFiles, directory: Path, name: str, subject: str,
               key_password: str | None = None) -> ClientCertificate:
        """A key and a certificate for `subject` (e.g. "/O=platform/CN=job") signed by the CA
        of `ca` (its key beside its certificate); the key encrypted with `key_password`."""
        d = directory.resolve()
        d.mkdir(parents=True, exist_ok=True)
        ca_dir = ca.ca_file.parent
        _openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.plain.key",
                 "-out", f"{name}.csr", "-subj", subject)
        _openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", str(ca.ca_file), "-CAkey",
                 str(ca_dir / "ca.key"), "-CAcreateserial", "-out", f"{name}.crt",
                 "-days", "2")
        key = d / f"{name}.key"
        if key_password is None:
            (d / f"{name}.plain.key").rename(key)
        else:
            _openssl(d, "pkey", "-in", f"{name}.plain.key", "-aes256", "-passout",
                     f"pass:{key_password}", "-out", key.name)
            (d / f"{name}.plain.key").unlink()
        # RFC 2253 order, as Java's X500Principal.getName() gives it: last RDN first.
        rdns = [part for part in subject.split("/") if part]
        return cls(d / f"{name}.crt", key, subject, "User:" + ",".join(reversed(rdns)))


@dataclass
class MtlsBroker:
    """A broker whose MTLS listener requires a client certificate of `tls`'s CA."""

    cluster: KafkaCluster
    tls: TlsFiles
    directory: Path

    @property
    def bootstrap_servers(self) -> str:
        return self.cluster.bootstrap_servers_for(MTLS_LISTENER)

    def admin_settings(self) -> dict[str, Any]:
        """kafka-python settings of the super user (SASL PLAIN on the first listener)."""
        return self.cluster.client_settings()


def start_mtls_broker(directory: Path) -> MtlsBroker:
    tls = TlsFiles.create(directory / "ca")
    listeners = (ListenerSpec("SASL", "SASL_PLAINTEXT"),
                 ListenerSpec(MTLS_LISTENER, "SSL", config={
                     **tls.listener_config(), "ssl.client.auth": "required"}))
    cluster = KafkaCluster(directory / "kafka", nodes=1, listeners=listeners, heap_mb=384,
                           sasl=SaslUsers(admin_password=ADMIN_PASSWORD))
    cluster.start()
    return MtlsBroker(cluster, tls, directory)


@dataclass
class Issued:
    client_id: str
    subject: str
    issued_at: float
    expires_at: int
    token: str


@dataclass
class _Client:
    secret: str
    subject: str
    lifetime_s: int


@dataclass
class TokenIssuer:
    """An OIDC client-credentials token endpoint on loopback: POST /token with HTTP Basic
    client authentication and grant_type=client_credentials; an RS256 JWT for the client's
    subject, signed with the key whose public half is in `jwks_file`."""

    directory: Path
    key_file: Path = field(init=False)
    jwks_file: Path = field(init=False)
    issued: list[Issued] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    _clients: dict[str, _Client] = field(default_factory=dict)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    KID = "provisioning-test-key"

    def __post_init__(self) -> None:
        d = self.directory.resolve()
        d.mkdir(parents=True, exist_ok=True)
        self.key_file = d / "issuer.key"
        _openssl(d, "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                 "-out", self.key_file.name)
        modulus = _openssl(d, "rsa", "-in", self.key_file.name, "-noout", "-modulus")
        n = bytes.fromhex(modulus.decode().strip().split("=", 1)[1])
        self.jwks_file = d / "jwks.json"
        self.jwks_file.write_text(json.dumps({"keys": [{
            "kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.KID,
            "n": _b64(n), "e": _b64((65537).to_bytes(3, "big"))}]}))

    def add_client(self, client_id: str, secret: str, subject: str,
                   lifetime_s: int = 3600) -> None:
        self._clients[client_id] = _Client(secret, subject, lifetime_s)

    @property
    def url(self) -> str:
        assert self._server is not None, "the issuer is not started"
        return f"http://{HOST}:{self._server.server_address[1]}"

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    def issued_to(self, client_id: str) -> list[Issued]:
        with self._lock:
            return [i for i in self.issued if i.client_id == client_id]

    def start(self) -> None:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                status, body = issuer._answer(self.path, self.headers.get("Authorization"),
                                              form)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((HOST, 0), Handler)
        threading.Thread(target=self._server.serve_forever, name="token-issuer",
                         daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _answer(self, path: str, authorization: str | None,
                form: Mapping[str, list[str]]) -> tuple[int, dict[str, Any]]:
        if path != "/token":
            return 404, {"error": "not_found"}
        if form.get("grant_type") != ["client_credentials"]:
            return 400, {"error": "unsupported_grant_type"}
        client_id, secret = "", ""
        if authorization and authorization.startswith("Basic "):
            pair = base64.b64decode(authorization[6:]).decode()
            client_id, _, secret = pair.partition(":")
        client = self._clients.get(client_id)
        if client is None or client.secret != secret:
            with self._lock:
                self.refused.append(client_id)
            return 401, {"error": "invalid_client",
                         "error_description": f"client {client_id!r} failed to authenticate"}
        now = time.time()
        claims = {"iss": self.url, "aud": AUDIENCE, "sub": client.subject,
                  "iat": int(now), "exp": int(now) + client.lifetime_s,
                  "scope": " ".join(form.get("scope", [])) or "kafka"}
        token = self.sign(claims)
        with self._lock:
            self.issued.append(Issued(client_id, client.subject, now, claims["exp"], token))
        return 200, {"access_token": token, "token_type": "Bearer",
                     "expires_in": client.lifetime_s}

    def sign(self, claims: Mapping[str, Any]) -> str:
        """An RS256 JWT of `claims`, signed with the issuer's key."""
        header = {"alg": "RS256", "typ": "JWT", "kid": self.KID}
        signing_input = ".".join(_b64(json.dumps(part, separators=(",", ":")).encode())
                                 for part in (header, claims))
        signature = _openssl(self.directory, "dgst", "-sha256", "-sign", str(self.key_file),
                             stdin=signing_input.encode())
        return f"{signing_input}.{_b64(signature)}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


@dataclass
class OAuthBroker:
    """A broker with an OAUTHBEARER listener validating the issuer's JWTs (OAUTH), one
    validating MSK IAM tokens over TLS (IAM), and SASL PLAIN/SCRAM on the first one."""

    cluster: KafkaCluster
    issuer: TokenIssuer
    tls: TlsFiles
    users: SaslUsers

    def bootstrap(self, listener: str) -> str:
        return self.cluster.bootstrap_servers_for(listener)

    def admin_settings(self) -> dict[str, Any]:
        return self.cluster.client_settings()


def oauth_listener_config(issuer: TokenIssuer, reauth_ms: int) -> dict[str, str]:
    """KIP-768's broker side: Kafka's JWT validator with the issuer's JWKS file, its issuer
    and audience, no clock skew, and sessions that must re-authenticate (KIP-368)."""
    prefix = "oauthbearer."
    return {
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        f"{prefix}sasl.server.callback.handler.class": JWT_VALIDATOR,
        f"{prefix}sasl.jaas.config": _SERVER_LOGIN,
        f"{prefix}sasl.oauthbearer.jwks.endpoint.url": issuer.jwks_file.as_uri(),
        f"{prefix}sasl.oauthbearer.expected.audience": AUDIENCE,
        f"{prefix}sasl.oauthbearer.expected.issuer": issuer.url,
        f"{prefix}sasl.oauthbearer.clock.skew.seconds": "0",
        f"{prefix}connections.max.reauth.ms": str(reauth_ms),
    }


def start_oauth_broker(directory: Path, issuer: TokenIssuer, validators_jar: Path,
                       scram: Mapping[str, str], reauth_ms: int = 4000) -> OAuthBroker:
    tls = TlsFiles.create(directory / "ca")
    users = SaslUsers(admin_password=ADMIN_PASSWORD, scram=dict(scram))
    iam = {**tls.listener_config(), "sasl.enabled.mechanisms": "OAUTHBEARER",
           "oauthbearer.sasl.server.callback.handler.class":
               "provisioning.testing.MskIamTokenValidator",
           "oauthbearer.sasl.jaas.config": _SERVER_LOGIN.replace(" ;", f' region="{MSK_REGION}";')}
    listeners = (ListenerSpec("SASL", "SASL_PLAINTEXT"),
                 ListenerSpec(OAUTH_LISTENER, "SASL_PLAINTEXT",
                              config=oauth_listener_config(issuer, reauth_ms)),
                 ListenerSpec(IAM_LISTENER, "SASL_SSL", config=iam))
    cluster = KafkaCluster(directory / "kafka", nodes=1, listeners=listeners, heap_mb=384,
                           sasl=users, extra_classpath=[validators_jar],
                           system_properties={ALLOWED_URLS: issuer.jwks_file.as_uri()})
    cluster.start()
    return OAuthBroker(cluster, issuer, tls, users)
