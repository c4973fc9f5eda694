"""What the driver reads for each cluster's connection: the secrets the conf names (each
from its environment variable or its file) and the TLS files, once, before any cluster is
asked anything.

What is read travels in memory with the admin tasks (`Credentials`): an executor has none
of the conf's files and none of the driver's environment. A secret file is read as it is
now (a Kubernetes or Vault agent mount may rotate it between runs), its trailing newline
stripped. Every problem is reported at once, naming the key; no problem quotes a secret.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from pathlib import Path

from provisioning.conf.model import (
    PASSWORD_MECHANISMS,
    ClusterConf,
    Conf,
    Credentials,
    OAuthClient,
    Secret,
    TlsKeys,
)
from provisioning.errors import ConfError


def resolve_credentials(conf: Conf, environ: Mapping[str, str]) -> dict[str, Credentials]:
    """Each cluster's credentials and TLS material, from the environment variables and the
    files its conf names (clusters that need neither are left out)."""
    problems: list[str] = []
    found: dict[str, Credentials] = {}
    for cluster in conf.clusters.values():
        reader = _Reader(cluster, environ, problems)
        credentials = reader.credentials()
        if credentials is not None and reader.ok:
            found[cluster.name] = credentials
    if problems:
        raise ConfError(conf.source, problems)
    return found


class ReadError(str):
    """Why a file could not be read (`cannot read PATH: REASON`)."""


def read_file(path: str) -> str | ReadError:
    """A file's text, or why it cannot be read, naming the file."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else \
            type(exc).__name__
        return ReadError(f"cannot read {path}: {reason}")


def secret_from(var: str | None, path: str | None, environ: Mapping[str, str]
                ) -> Secret | tuple[str, str]:
    """The secret an `_env` / `_file` pair names: the file's text, as it is now, its
    trailing newline stripped, when a file is named, else the variable's value; or which
    of the two is wrong (`env` or `file`) and why, naming the variable or the file, never
    a value."""
    if path is not None:
        text = read_file(path)
        if isinstance(text, ReadError):
            return "file", str(text)
        value = text[:-1] if text.endswith("\n") else text
        value = value[:-1] if value.endswith("\r") else value
        return Secret(value) if value else ("file", f"{path} is empty")
    if var is None or var not in environ:
        return "env", f"environment variable {var!r} is not set"
    return Secret(environ[var]) if environ[var] else \
        ("env", f"environment variable {var!r} is empty")


class _Reader:
    def __init__(self, cluster: ClusterConf, environ: Mapping[str, str],
                 problems: list[str]) -> None:
        self.cluster = cluster
        self.environ = environ
        self.problems = problems
        self.ok = True

    def problem(self, key: str, message: str) -> None:
        self.problems.append(f"clusters.{self.cluster.name}.{key}: {message}")
        self.ok = False

    def credentials(self) -> Credentials | None:
        cluster = self.cluster
        sasl = cluster.security_protocol.startswith("SASL")
        username = password = None
        oauth = None
        if sasl and cluster.sasl_mechanism in (None, *PASSWORD_MECHANISMS):
            username = self.secret("sasl_username")
            password = self.secret("sasl_password")
        elif sasl and cluster.sasl_mechanism == "OAUTHBEARER":
            client_id = self.secret("sasl_oauthbearer_client_id")
            client_secret = self.secret("sasl_oauthbearer_client_secret")
            if client_id is not None and client_secret is not None:
                oauth = OAuthClient(client_id, client_secret)
        tls = self.tls() if cluster.security_protocol in ("SSL", "SASL_SSL") else None
        if username is None and password is None and oauth is None and tls is None \
                and not sasl:
            return None
        return Credentials(username=username, password=password, tls=tls, oauth=oauth)

    def secret(self, stem: str) -> Secret | None:
        """The secret of `<stem>_env` or `<stem>_file` (the conf's rules allow one)."""
        found = secret_from(getattr(self.cluster, f"{stem}_env"),
                            getattr(self.cluster, f"{stem}_file"), self.environ)
        if isinstance(found, Secret):
            return found
        self.problem(f"{stem}_{found[0]}", found[1])
        return None

    def read(self, key: str, path: str) -> str | None:
        text = read_file(path)
        if isinstance(text, ReadError):
            self.problem(key, str(text))
            return None
        return text

    def tls(self) -> TlsKeys:
        """The CA, client certificate and key files, read and checked to load together."""
        cluster = self.cluster
        ca = self.read("ssl_cafile", cluster.ssl_cafile) if cluster.ssl_cafile else None
        if ca is not None and "-----BEGIN CERTIFICATE-----" not in ca:
            self.problem("ssl_cafile", f"{cluster.ssl_cafile} holds no PEM certificate")
        certificate = key = key_password = None
        if cluster.ssl_certfile and cluster.ssl_keyfile:
            certificate = self.read("ssl_certfile", cluster.ssl_certfile)
            key_text = self.read("ssl_keyfile", cluster.ssl_keyfile)
            key = Secret(key_text) if key_text is not None else None
            if cluster.ssl_key_password_env or cluster.ssl_key_password_file:
                key_password = self.secret("ssl_key_password")
            if certificate is not None and key is not None:
                self.check_key(key_password)
        return TlsKeys(ca=ca, certificate=certificate, key=key, key_password=key_password)

    def check_key(self, password: Secret | None) -> None:
        """The certificate and its key load together (the key decrypted with its password):
        a wrong file is refused here, by its key, not by the broker as a refused login."""
        cluster = self.cluster
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            context.load_cert_chain(cluster.ssl_certfile or "", cluster.ssl_keyfile,
                                    password=password.reveal() if password else "")
        except ssl.SSLError as exc:
            self.problem("ssl_keyfile", f"{cluster.ssl_keyfile} is not the PEM private key of "
                         f"ssl_certfile {cluster.ssl_certfile}, or its password is wrong "
                         f"({exc.reason or 'SSLError'})")
