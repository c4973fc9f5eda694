"""The TLS side of a connection: the SSL context of a cluster, built from the PEM text the
driver read (`conf.TlsKeys`), in whichever process connects.

Python's `ssl` loads a certificate chain and its key only from files, and an executor has
none of the conf's files. The key and the certificate are therefore handed to OpenSSL
through anonymous in-memory files (`os.memfd_create`, Linux): they are never written to
any disk, and they are gone when the context is built. Where memfd is missing (a
developer's macOS driver in local mode) the conf's own paths are read, which exist there.
The CAs load from memory directly (`cadata`).
"""

from __future__ import annotations

import contextlib
import os
import ssl
from collections.abc import Iterator

from provisioning.conf import ClusterConf, Credentials, TlsKeys
from provisioning.errors import ClusterUnreachable


def ssl_context(cluster: ClusterConf, credentials: Credentials | None) -> ssl.SSLContext:
    """The context of `cluster`'s TLS connections, as kafka-python builds its own (TLS 1.2
    at least, the broker's certificate verified, its host name checked unless
    `ssl_check_hostname` is false), from the material in `credentials` or, when the
    driver read none (a process given only the conf), from the conf's files."""
    tls = credentials.tls if credentials is not None else None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = cluster.ssl_check_hostname
    if tls is not None and tls.ca is not None:
        context.load_verify_locations(cadata=tls.ca)
    elif cluster.ssl_cafile:
        context.load_verify_locations(cafile=cluster.ssl_cafile)
    else:
        context.load_default_certs()
    try:
        if tls is not None and tls.certificate is not None and tls.key is not None:
            _load_chain(context, cluster, tls)
        elif cluster.ssl_certfile:
            # Always a password: OpenSSL would otherwise ask for one on the terminal.
            context.load_cert_chain(cluster.ssl_certfile, cluster.ssl_keyfile, password="")
    except ssl.SSLError as exc:
        # The driver checked the pair when it read it: this is a process that read other
        # files, or whose OpenSSL refuses what the driver's took.
        raise ClusterUnreachable(
            f"cluster {cluster.name}: the client certificate and key do not load here "
            f"({exc.reason or 'SSLError'})") from None
    return context


def _load_chain(context: ssl.SSLContext, cluster: ClusterConf, tls: TlsKeys) -> None:
    password = tls.key_password.reveal() if tls.key_password is not None else ""
    assert tls.certificate is not None and tls.key is not None
    if not hasattr(os, "memfd_create"):
        context.load_cert_chain(cluster.ssl_certfile or "", cluster.ssl_keyfile,
                                password=password)
        return
    with _in_memory(tls.certificate) as certificate, _in_memory(tls.key.reveal()) as key:
        context.load_cert_chain(certificate, key, password=password)


@contextlib.contextmanager
def _in_memory(text: str) -> Iterator[str]:
    """A path OpenSSL can open that reads `text` from an anonymous memory file."""
    fd = os.memfd_create("provisioning-tls", os.MFD_CLOEXEC)
    try:
        data = text.encode("utf-8")
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.lseek(fd, 0, os.SEEK_SET)
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)
