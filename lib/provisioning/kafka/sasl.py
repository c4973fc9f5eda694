"""A direct SASL login probe, to tell a refused login from an unreachable cluster."""

from __future__ import annotations

import logging
import socket
import ssl
from typing import Any

import kafka.errors as Errors
from kafka.net.sasl import get_sasl_mechanism
from kafka.protocol.parser import KafkaProtocol
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.codes import error_name

log = logging.getLogger(__name__)


def sasl_login_error(cluster: ClusterConf, credentials: Credentials | None,
                     kafka: KafkaConf) -> str | None:
    """Log in once to each bootstrap server; the broker's reason if it refused the login.

    kafka-python reads the broker's SaslAuthenticate error and the connection
    close that follows it as one lost connection and keeps retrying, so a wrong
    password looks like an unreachable cluster. This asks over a plain blocking
    socket instead. None: not a SASL cluster, no server reachable, or the login
    worked (the failure was something else).
    """
    if credentials is None or not cluster.security_protocol.startswith("SASL"):
        return None
    timeout_s = min(kafka.request_timeout_ms, 10000) / 1000
    for server in cluster.bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        host = host.strip("[]")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout_s) as raw:
                sock = raw
                if cluster.security_protocol == "SASL_SSL":
                    context = ssl.create_default_context(cafile=cluster.ssl_cafile)
                    sock = context.wrap_socket(raw, server_hostname=host)
                return _sasl_exchange(sock, cluster, credentials)
        except (OSError, Errors.KafkaError, ValueError) as exc:
            log.info("cluster %s: login probe of %s failed (%s)", cluster.name, server,
                     type(exc).__name__)
            continue
    return None


def _sasl_exchange(sock: socket.socket, cluster: ClusterConf, credentials: Credentials
                   ) -> str | None:
    parser = KafkaProtocol(client_id=cluster.client_id)

    def call(request: Any) -> Any:
        parser.send_request(request)
        sock.sendall(parser.send_bytes())
        while True:
            data = sock.recv(65536)
            if not data:
                raise Errors.KafkaConnectionError("the broker closed the connection")
            for _, response in parser.receive_bytes(data):
                return response

    handshake = SaslHandshakeRequest(mechanism=cluster.sasl_mechanism)
    handshake.API_VERSION = 1
    response = call(handshake)
    if response.error_code:
        return (f"{error_name(response.error_code)}: the broker offers "
                f"{', '.join(response.mechanisms)}")
    mechanism = get_sasl_mechanism(cluster.sasl_mechanism)(
        host=sock.getpeername()[0],
        security_protocol=cluster.security_protocol,
        sasl_mechanism=cluster.sasl_mechanism,
        sasl_plain_username=credentials.username.reveal(),
        sasl_plain_password=credentials.password.reveal(),
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
    password = credentials.password.reveal()
    return text.replace(password, "***") if password else text

