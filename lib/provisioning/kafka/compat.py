"""The one place that relies on kafka-python internals, checked against the installed version.

The public CreateTopics / DeleteTopics helpers of kafka-python drop the response's
`throttle_time_ms`, which KIP-599 retries need, so requests go through the admin
client's own controller routing (`_manager.run(_send_request_to_controller, ...)`), and
a lost controller is forgotten (`_controller_id`) so that a resend asks the cluster again.
Its helpers for other admin requests lose per-item answers (which item an error belongs
to, per-item error codes: DescribeConfigs' per resource) or leave them as bits
(DescribeCluster's authorized operations), or cost more than the request over many topics
(DescribeConfigs' entries made into dicts through its enums; a full metadata read to route
each ListOffsets), so those requests go to a broker through the connection manager
(`_manager.run(_manager.send, request, node_id)`).
Those are private names: this module checks them once, and a kafka-python release
that moved them fails with a message saying so instead of an AttributeError mid-run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import kafka
from kafka import KafkaAdminClient

from provisioning.errors import ProvisioningError

log = logging.getLogger(__name__)

# The kafka-python releases whose internals this module was written against.
TESTED_VERSIONS = ("3.0.",)
_CLASS_ATTRIBUTES = ("_send_request_to_controller",)
_INSTANCE_ATTRIBUTES = ("_manager", "_controller_id")


class KafkaPythonIncompatible(ProvisioningError):
    """The installed kafka-python lacks an internal the job relies on."""

    exit_code = 2


def _moved(what: str, use: str = "CreateTopics and DeleteTopics with their throttle time"
           ) -> KafkaPythonIncompatible:
    return KafkaPythonIncompatible(
        f"kafka-python {kafka.__version__} has no {what}, which this job uses to send "
        f"{use}; it was written against "
        f"kafka-python {', '.join(v + 'x' for v in TESTED_VERSIONS)}: install that version "
        "(pyproject.toml pins it)")


def check_client_class(client_class: type = KafkaAdminClient) -> None:
    """Raise KafkaPythonIncompatible unless the admin client class still has what the job
    uses."""
    for name in _CLASS_ATTRIBUTES:
        if not callable(getattr(client_class, name, None)):
            raise _moved(f"KafkaAdminClient.{name}")


def check_installed(version: str | None = None, client_class: type = KafkaAdminClient) -> None:
    """Checked once when a run starts, before any cluster is read: a kafka-python release
    the job was not written against is named in a warning, and one whose internals moved
    stops the run (KafkaPythonIncompatible, exit 2) instead of failing its admin tasks."""
    installed = version or kafka.__version__
    if not installed.startswith(TESTED_VERSIONS):
        log.warning("kafka-python %s is installed; the job was written against %s: its use "
                    "of the admin client's internals is checked, not tested", installed,
                    ", ".join(v + "x" for v in TESTED_VERSIONS))
    check_client_class(client_class)


def send_to_controller(client: KafkaAdminClient, request: Any,
                       error_codes: Callable[[Any], Iterable[int]]) -> Any:
    """Send `request` to the controller (retried once on NOT_CONTROLLER by the client);
    the whole response, per-topic errors included, is returned, never raised."""
    check_client_class()
    for name in _INSTANCE_ATTRIBUTES:
        if not hasattr(client, name):
            raise _moved(f"KafkaAdminClient().{name}")
    manager = client._manager
    if not callable(getattr(manager, "run", None)):
        raise _moved("KafkaAdminClient()._manager.run")
    import kafka.errors as Errors

    return manager.run(
        client._send_request_to_controller,
        request,
        lambda resp: (Errors.for_code(c) for c in error_codes(resp)),
        False,
    )


def forget_controller(client: KafkaAdminClient) -> None:
    """Drop the client's cached controller id: the next request to the controller asks the
    cluster's metadata again (after the node it cached went away). kafka-python refreshes
    it by itself only on NOT_CONTROLLER, never after a lost connection."""
    if not hasattr(client, "_controller_id"):
        raise _moved("KafkaAdminClient()._controller_id")
    client._controller_id = None


_THROTTLE_USE = "requests to a broker that throttles them, waiting out its throttle"


def throttle_delay_ms(client: KafkaAdminClient) -> float:
    """How much longer a broker's throttle keeps one of the client's connections paused, in
    ms (0: none is). A response carrying a throttle time (KIP-219) pauses the connection it
    came on until then, and kafka-python refuses sends on it meanwhile with a
    NodeNotReadyError that carries no code: this is what tells that error apart from a node
    backing off after a lost connection (kafka-python's own `throttle_delay`, for every
    connection)."""
    conns = getattr(getattr(client, "_manager", None), "_conns", None)
    if not isinstance(conns, Mapping):
        raise _moved("KafkaAdminClient()._manager._conns", _THROTTLE_USE)
    now = time.monotonic()
    delays = [0.0]
    for conn in list(conns.values()):
        until = getattr(conn, "_throttle_time", None)
        if not isinstance(until, int | float):
            raise _moved("a connection's _throttle_time", _THROTTLE_USE)
        delays.append(max(0.0, until - now) * 1000)
    return max(delays)


_NODE_USE = "admin requests to one broker with a result per item"


def send_to_node(client: KafkaAdminClient, node_id: int | None, request: Any,
                 use: str = _NODE_USE) -> Any:
    """Send `request` to broker `node_id` (None: the least loaded broker, as kafka-python
    sends its admin requests to a node); the whole response is returned, the errors it
    carries never raised.

    use: what the caller sends this way, named when the internals have moved.

    Raises what the connection manager raises: NodeNotReadyError when the node is backing
    off or its connection is paused by a throttle (never sent), UnknownBrokerIdError, a
    KafkaConnectionError or KafkaTimeoutError when the request may have been sent.
    """
    if not hasattr(client, "_manager"):
        raise _moved("KafkaAdminClient()._manager", use)
    manager = client._manager
    for name in ("run", "send"):
        if not callable(getattr(manager, name, None)):
            raise _moved(f"KafkaAdminClient()._manager.{name}", use)
    return manager.run(manager.send, request, node_id)
