"""What the driver reads for each cluster's connection: the secrets the conf names (each
from its environment variable or its file) and the TLS files, once, before any cluster is
asked anything.

What is read travels in memory with the admin tasks (`Credentials`): an executor has none
of the conf's files and none of the driver's environment. A secret file is read as it is
now (a Kubernetes or Vault agent mount may rotate it between runs), its trailing newline
stripped; only a regular file is read, up to a size, within a time (`read_file`): a FIFO,
a device or a file on a mount that hangs never holds the driver. Every problem is reported
at once, naming the key; no problem quotes a secret, nor the value of a key that names one
(it may be the secret itself, written in the wrong key).

What makes a connection weaker than it looks is said once per cluster and run, as a
warning (`weakenings`): a broker certificate not checked against its host name, SASL over a
plaintext listener, a secret file other users of the machine may read.
"""

from __future__ import annotations

import logging
import os
import ssl
import stat
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

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

log = logging.getLogger(__name__)

# How long the driver waits for one file it reads (a hung network mount); how large a
# file of the conf may be: a secret's, and a TLS file's (a CA bundle).
READ_TIMEOUT_S = 5.0
SECRET_FILE_LIMIT = 64 * 1024
TLS_FILE_LIMIT = 1024 * 1024
# OpenSSL takes a private key's password of at most this many bytes.
KEY_PASSWORD_LIMIT = 1024
# The keys whose file holds a secret (`*_file` keys and the TLS key), by the stem of the
# problem's key.
_SECRET_FILE_KEYS = ("sasl_password_file", "ssl_key_password_file",
                     "sasl_oauthbearer_client_secret_file", "ssl_keyfile")
NOT_REPEATED = "its value is not repeated here, in case it is a secret written in this key"


def resolve_credentials(conf: Conf, environ: Mapping[str, str]) -> dict[str, Credentials]:
    """Each cluster's credentials and TLS material, from the environment variables and the
    files its conf names (clusters that need neither are left out); each weakening of a
    cluster's connection logged once, as a warning."""
    problems: list[str] = []
    found: dict[str, Credentials] = {}
    for cluster in conf.clusters.values():
        reader = _Reader(cluster, environ, problems)
        credentials = reader.credentials()
        if credentials is not None and reader.ok:
            found[cluster.name] = credentials
    if problems:
        raise ConfError(conf.source, problems)
    for cluster in conf.clusters.values():
        for warning in weakenings(cluster):
            log.warning("cluster %s: %s", cluster.name, warning)
    return found


def weakenings(cluster: ClusterConf) -> list[str]:
    """What makes `cluster`'s connection weaker than its conf may look: one sentence each."""
    found = []
    if cluster.security_protocol in ("SSL", "SASL_SSL") and not cluster.ssl_check_hostname:
        found.append("ssl_check_hostname is false: the brokers' certificates are not checked "
                     "against the hosts the job connects to, so any certificate the CAs "
                     "signed passes for this cluster's")
    if cluster.security_protocol == "SASL_PLAINTEXT":
        what = {"PLAIN": "the password itself", "OAUTHBEARER": "the bearer token",
                "AWS_MSK_IAM": "the signed token"}.get(cluster.sasl_mechanism or "",
                                                       "the login exchange")
        found.append(f"SASL {cluster.sasl_mechanism} over a plaintext listener "
                     f"(security_protocol SASL_PLAINTEXT): {what} and every request after "
                     "it cross the network unencrypted (use SASL_SSL)")
    for key in _SECRET_FILE_KEYS:
        path = getattr(cluster, key, None)
        if not path:
            continue
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:
            continue
        if mode & 0o004:
            found.append(f"{key} names a file every user of this machine may read (mode "
                         f"{mode:04o}); make it readable by the job's user only")
    return found


class ReadError(str):
    """Why a file could not be read."""


@dataclass(frozen=True)
class _Read:
    text: str | None = None
    error: str | None = None


def read_file(path: str, limit: int = SECRET_FILE_LIMIT, timeout_s: float = READ_TIMEOUT_S,
              named: bool = True) -> str | ReadError:
    """A file's text, or why it cannot be read (`cannot read PATH: REASON`, or the reason
    alone unless `named`): only a regular file (never a FIFO or a device), of at most
    `limit` bytes, read within `timeout_s`."""
    done = _timed(lambda: _read_regular(path, limit), timeout_s)
    reason = f"not read within {timeout_s:g} s" if done is None else done.error
    if reason is not None:
        return ReadError(f"cannot read {path}: {reason}" if named else reason)
    assert done is not None and done.text is not None
    return done.text


def _read_regular(path: str, limit: int) -> _Read:
    try:
        # Non-blocking: opening a FIFO must not wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        return _Read(error=exc.strerror or type(exc).__name__)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            return _Read(error="not a regular file")
        if found.st_size > limit:
            return _Read(error=f"larger than {limit} bytes")
        chunks, size = [], 0
        while chunk := os.read(fd, limit + 1 - size):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                return _Read(error=f"larger than {limit} bytes")
        return _Read(text=b"".join(chunks).decode("utf-8"))
    except UnicodeDecodeError:
        return _Read(error="not UTF-8 text")
    except OSError as exc:
        return _Read(error=exc.strerror or type(exc).__name__)
    finally:
        os.close(fd)


def _timed(read: Callable[[], _Read], timeout_s: float) -> _Read | None:
    """`read()` on a helper thread, or None when it has not returned after `timeout_s` (the
    thread is left to finish on its own: a read stuck in the kernel cannot be cancelled)."""
    box: list[_Read] = []
    thread = threading.Thread(target=lambda: box.append(read()), daemon=True,
                              name="read-secret-file")
    thread.start()
    thread.join(timeout_s)
    return box[0] if box else None


def secret_from(var: str | None, path: str | None, environ: Mapping[str, str]
                ) -> Secret | tuple[str, str]:
    """The secret an `_env` / `_file` pair names: the file's text, as it is now, its
    trailing newline stripped, when a file is named, else the variable's value; or which
    of the two is wrong (`env` or `file`) and why, never repeating the variable's name or
    the file's path (either may be a secret written in the wrong key), nor a value."""
    if path is not None:
        text = read_file(path, named=False)
        if isinstance(text, ReadError):
            return "file", f"the file it names cannot be read ({text}; {NOT_REPEATED})"
        value = text[:-1] if text.endswith("\n") else text
        value = value[:-1] if value.endswith("\r") else value
        return Secret(value) if value else ("file", "the file it names is empty")
    if var is None or var not in environ:
        return "env", f"the environment variable it names is not set ({NOT_REPEATED})"
    return Secret(environ[var]) if environ[var] else \
        ("env", "the environment variable it names is empty")


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
            ca = self.ca("sasl_oauthbearer_ca_file", cluster.sasl_oauthbearer_ca_file)
            if client_id is not None and client_secret is not None:
                oauth = OAuthClient(client_id, client_secret, ca)
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
        text = read_file(path, TLS_FILE_LIMIT)
        if isinstance(text, ReadError):
            self.problem(key, str(text))
            return None
        return text

    def ca(self, key: str, path: str | None) -> str | None:
        """The PEM certificates of a CA file key, checked to hold one."""
        ca = self.read(key, path) if path else None
        if ca is not None and "-----BEGIN CERTIFICATE-----" not in ca:
            self.problem(key, f"{path} holds no PEM certificate")
        return ca

    def tls(self) -> TlsKeys:
        """The CA, client certificate and key files, read and checked to load together."""
        cluster = self.cluster
        ca = self.ca("ssl_cafile", cluster.ssl_cafile)
        certificate = key = key_password = None
        if cluster.ssl_certfile and cluster.ssl_keyfile:
            certificate = self.read("ssl_certfile", cluster.ssl_certfile)
            key_text = self.read("ssl_keyfile", cluster.ssl_keyfile)
            key = Secret(key_text) if key_text is not None else None
            encrypted = bool(cluster.ssl_key_password_env or cluster.ssl_key_password_file)
            if encrypted:
                key_password = self.secret("ssl_key_password")
            if key_password is not None and \
                    len(key_password.reveal().encode("utf-8")) > KEY_PASSWORD_LIMIT:
                source = "file" if cluster.ssl_key_password_file else "env"
                self.problem(f"ssl_key_password_{source}", "the key's password is longer "
                             f"than the {KEY_PASSWORD_LIMIT} bytes OpenSSL takes")
            elif certificate is not None and key is not None \
                    and (key_password is not None or not encrypted):
                # (A password that could not be read is its own problem, said already.)
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
