"""A direct login probe, to tell a refused login (a SASL login, or a client certificate
the broker's TLS listener does not accept) from an unreachable cluster."""

from __future__ import annotations

import logging
import socket
import ssl
from typing import Any

import kafka.errors as Errors
from kafka.net.sasl import get_sasl_mechanism
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.parser import KafkaProtocol
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.codes import error_name
from provisioning.kafka.tls import ssl_context

log = logging.getLogger(__name__)


def sasl_login_error(cluster: ClusterConf, credentials: Credentials | None,
                     kafka: KafkaConf) -> str | None:
    """Log in once to each bootstrap server; the broker's reason if it refused the login.

    kafka-python reads the broker's SaslAuthenticate error and the connection
    close that follows it as one lost connection and keeps retrying, so a wrong
    password looks like an unreachable cluster; so does a client certificate the broker's
    listener refuses (a TLS alert). This asks over a plain blocking socket instead. None:
    not a SASL cluster nor one with a client certificate, no server reachable, or the
    login worked (the failure was something else).
    """
    protocol = cluster.security_protocol
    certificate = cluster.ssl_certfile is not None or (
        credentials is not None and credentials.tls is not None
        and credentials.tls.certificate is not None)
    if credentials is None or not (protocol.startswith("SASL") or certificate):
        return None
    timeout_s = min(kafka.request_timeout_ms, 10000) / 1000
    for server in cluster.bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        host = host.strip("[]")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout_s) as raw:
                sock = raw
                if protocol in ("SSL", "SASL_SSL"):
                    sock = ssl_context(cluster, credentials).wrap_socket(
                        raw, server_hostname=host)
                if not protocol.startswith("SASL"):
                    return _tls_exchange(sock, cluster)
                return _sasl_exchange(sock, cluster, credentials)
        except ssl.SSLCertVerificationError as exc:
            log.info("cluster %s: login probe of %s failed (%s)", cluster.name, server,
                     type(exc).__name__)
            continue
        except ssl.SSLError as exc:
            if "ALERT" in (exc.reason or "") and certificate:
                # The broker's alert on the job's certificate: TLS 1.3 sends it after the
                # client's side of the handshake, on the first read.
                return (f"the broker refused the client certificate ssl_certfile "
                        f"({exc.reason}): is it signed by a CA its listener trusts?")
            log.info("cluster %s: login probe of %s failed (%s)", cluster.name, server,
                     type(exc).__name__)
            continue
        except (OSError, Errors.KafkaError, ValueError) as exc:
            log.info("cluster %s: login probe of %s failed (%s)", cluster.name, server,
                     type(exc).__name__)
            continue
    return None


def _call(sock: socket.socket, parser: KafkaProtocol, request: Any) -> Any:
    parser.send_request(request)
    sock.sendall(parser.send_bytes())
    while True:
        data = sock.recv(65536)
        if not data:
            raise Errors.KafkaConnectionError("the broker closed the connection")
        for _, response in parser.receive_bytes(data):
            return response


def _tls_exchange(sock: socket.socket, cluster: ClusterConf) -> str | None:
    """One ApiVersions request over TLS: the broker's refusal of the certificate, if any,
    arrives as an alert on its answer."""
    request = ApiVersionsRequest()
    request.API_VERSION = 0
    _call(sock, KafkaProtocol(client_id=cluster.client_id), request)
    return None


def _sasl_exchange(sock: socket.socket, cluster: ClusterConf, credentials: Credentials
                   ) -> str | None:
    parser = KafkaProtocol(client_id=cluster.client_id)

    def call(request: Any) -> Any:
        return _call(sock, parser, request)

    # MSK IAM is OAUTHBEARER with a signed token.
    wire = "OAUTHBEARER" if cluster.sasl_mechanism == "AWS_MSK_IAM" else cluster.sasl_mechanism
    handshake = SaslHandshakeRequest(mechanism=wire)
    handshake.API_VERSION = 1
    response = call(handshake)
    if response.error_code:
        return (f"{error_name(response.error_code)}: the broker offers "
                f"{', '.join(response.mechanisms)}")
    login: dict[str, Any] = {"sasl_oauth_token_provider": credentials.tokens} \
        if wire == "OAUTHBEARER" else {
            "sasl_plain_username": credentials.username.reveal() if credentials.username
            else "", "sasl_plain_password": credentials.password.reveal()
            if credentials.password else ""}
    mechanism = get_sasl_mechanism(wire)(
        host=sock.getpeername()[0],
        security_protocol=cluster.security_protocol,
        sasl_mechanism=wire,
        **login,
    )
    while not mechanism.is_done():
        request = SaslAuthenticateRequest(auth_bytes=mechanism.auth_bytes())
        request.API_VERSION = 1
        response = call(request)
        if response.error_code:
            message = _without(response.error_message or "", credentials)
            return f"{error_name(response.error_code)}: {message}".rstrip(": ")
        mechanism.receive(response.auth_bytes)
    return None if mechanism.is_authenticated() else "the broker's answer did not verify"


def _without(text: str, credentials: Credentials) -> str:
    """`text` with the password cut out, whatever a broker chose to echo."""
    password = credentials.password.reveal() if credentials.password is not None else ""
    return text.replace(password, "***") if password else text

