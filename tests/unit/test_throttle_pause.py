"""A connection the broker throttled (KIP-219: a response's throttle time pauses it) is waited
for while the throttle lasts, whatever the words of the NodeNotReadyError kafka-python raises
meanwhile; a node not ready for any other reason is a lost connection, sent again only
within `kafka.request_timeout_ms`. The same for the three senders: the topics' requests to
the controller, the ACL requests and the client-quota requests to any broker."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import kafka.errors as Errors
import pytest

from provisioning.conf.model import KafkaConf
from provisioning.kafka import requests
from provisioning.kinds.acls import requests as acls
from provisioning.kinds.quotas import requests as quotas


class Connection:
    """What kafka-python keeps of a broker's throttle on a connection: until when (its
    monotonic clock) the connection is paused."""

    def __init__(self, throttled_until: float) -> None:
        self._throttle_time = throttled_until


class FakeAdmin:
    def __init__(self, throttled_until: float) -> None:
        self.kafka = KafkaConf(request_timeout_ms=2000)
        self.cluster = type("Cluster", (), {"name": "local"})()
        manager = type("Manager", (), {"_conns": {1: Connection(throttled_until)}})()
        self.client = type("Client", (), {"_controller_id": 1, "_manager": manager})()
        self.lost_deadline: float | None = None


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [100.0]
    # The process's clock: kafka.compat reads a connection's throttle on it too.
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    monkeypatch.setattr(time, "sleep", lambda s: now.__setitem__(0, now[0] + s))
    return now


def _answering(errors: list[BaseException], answer: Any) -> Callable[..., Any]:
    def send(*_args: Any, **_kwargs: Any) -> Any:
        if errors:
            raise errors.pop(0)
        return answer

    return send


def _senders(monkeypatch: pytest.MonkeyPatch, send: Callable[..., Any]
             ) -> dict[str, Callable[[FakeAdmin], Any]]:
    """Each sender, with `send` standing for kafka-python's; what each returns of an answer."""
    monkeypatch.setattr(requests, "send_to_controller", send)
    monkeypatch.setattr(acls, "send_to_node", send)
    monkeypatch.setattr(quotas, "send_to_node", send)
    return {
        "topics": lambda admin: requests._to_controller(admin, object(), lambda r: ()),
        "acls": lambda admin: acls._send(admin, object)[0],
        "quotas": lambda admin: quotas._send(admin, object)[0],
    }


@pytest.mark.parametrize("sender", ["topics", "acls", "quotas"])
def test_a_throttled_connection_is_waited_for_past_the_request_timeout(
        monkeypatch: pytest.MonkeyPatch, clock: list[float], sender: str) -> None:
    # A minute of throttle, thirty times the request timeout; the errors never say why.
    admin = FakeAdmin(throttled_until=clock[0] + 60)
    errors: list[BaseException] = [Errors.NodeNotReadyError(1) for _ in range(12)]
    send = _senders(monkeypatch, _answering(errors, "answer"))[sender]
    assert send(admin) == "answer"
    assert errors == []
    assert clock[0] > 102.0


@pytest.mark.parametrize("sender", ["topics", "acls", "quotas"])
def test_a_node_not_ready_without_a_throttle_is_a_lost_connection_whatever_it_says(
        monkeypatch: pytest.MonkeyPatch, clock: list[float], sender: str) -> None:
    admin = FakeAdmin(throttled_until=0.0)
    errors: list[BaseException] = [Errors.NodeNotReadyError("Node paused: {'throttle'}")
                                   for _ in range(1000)]
    send = _senders(monkeypatch, _answering(errors, "answer"))[sender]
    with pytest.raises((Errors.NodeNotReadyError, quotas._Unanswered)):
        send(admin)
    # given up once the request timeout (2 s) passed, not after a throttle's 300 s
    assert 102.0 <= clock[0] < 110.0
