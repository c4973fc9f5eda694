"""A lost controller: the request is resent to the controller the cluster names next, within
`kafka.request_timeout_ms`, and only when a second answer can be settled."""

from __future__ import annotations

from typing import Any

import kafka.errors as Errors
import pytest

from provisioning import retry
from provisioning.conf.model import KafkaConf
from provisioning.kafka import requests


class FakeAdmin:
    """What `_to_controller` reads of a ClusterAdmin: the conf, the client (its connections:
    none throttled), the deadline."""

    def __init__(self, request_timeout_ms: int = 2000) -> None:
        self.kafka = KafkaConf(request_timeout_ms=request_timeout_ms)
        self.cluster = type("Cluster", (), {"name": "local"})()
        manager = type("Manager", (), {"_conns": {}})()
        self.client = type("Client", (), {"_controller_id": 2, "_manager": manager})()
        self.lost_deadline: float | None = None


def _sender(answers: list[Any], seen: list[Any]) -> Any:
    def send(client: Any, request: Any, codes: Any) -> Any:
        seen.append(client._controller_id)
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        client._controller_id = 3
        return answer

    return send


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "pause", lambda s: None)


def test_a_cut_connection_is_resent_to_a_fresh_controller(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    monkeypatch.setattr(requests, "send_to_controller", _sender(
        [Errors.KafkaConnectionError("socket disconnected"), "answer"], seen))
    admin, resent = FakeAdmin(), []
    assert requests._to_controller(admin, object(), lambda r: (), resent) == "answer"
    # the second send asked the cluster again (no cached controller id)
    assert seen == [2, None]
    assert [str(e) for e in resent] == ["KafkaConnectionError: socket disconnected"]
    assert admin.lost_deadline is None


def test_a_cut_connection_is_raised_when_a_resend_cannot_be_settled(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    monkeypatch.setattr(requests, "send_to_controller", _sender(
        [Errors.KafkaConnectionError("socket disconnected"), "answer"], seen))
    with pytest.raises(Errors.KafkaConnectionError):
        requests._to_controller(FakeAdmin(), object(), lambda r: ())
    assert seen == [2]


def test_a_request_never_sent_is_resent_whatever_the_caller(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    monkeypatch.setattr(requests, "send_to_controller", _sender(
        [Errors.NodeNotReadyError(2), Errors.NodeNotReadyError(2), "answer"], seen))
    assert requests._to_controller(FakeAdmin(), object(), lambda r: ()) == "answer"
    assert seen == [2, None, None]


def test_a_controller_that_stays_lost_fails_every_later_request_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(retry, "now", lambda: clock[0])
    monkeypatch.setattr(retry, "pause", lambda s: clock.__setitem__(0, clock[0] + s))
    seen: list[Any] = []
    monkeypatch.setattr(requests, "send_to_controller", _sender(
        [Errors.NodeNotReadyError(2)] * 100, seen))
    admin = FakeAdmin(request_timeout_ms=2000)
    with pytest.raises(Errors.NodeNotReadyError):
        requests._to_controller(admin, object(), lambda r: (), [])
    assert admin.lost_deadline == 102.0
    # backoff 0.1, 0.2, 0.4, 0.8, 1.6: past the deadline on the sixth send
    assert len(seen) == 6
    # the next request of the same admin does not wait the timeout again
    with pytest.raises(Errors.NodeNotReadyError):
        requests._to_controller(admin, object(), lambda r: (), [])
    assert len(seen) == 7


class Described:
    def __init__(self, name: str, error_name: str | None) -> None:
        self.name, self.error_name = name, error_name


def test_topics_the_controller_created_are_described_once_metadata_shows_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from provisioning.kinds.topics.tasks import create as tasks

    answers = [
        # right after a controller change the broker does not know `a` yet
        {"a": "UNKNOWN_TOPIC_OR_PARTITION", "b": None, "c": "TOPIC_AUTHORIZATION_FAILED"},
        {"a": None},
    ]
    asked: list[list[str]] = []

    class Admin(FakeAdmin):
        def describe_topics(self, names: list[str]) -> list[Described]:
            asked.append(list(names))
            answer = answers.pop(0)
            return [Described(n, answer[n]) for n in names]

    found = tasks.described_until_seen(Admin(), ["a", "b", "c"])
    assert {n: t.error_name for n, t in found.items()} == {
        "a": None, "b": None, "c": "TOPIC_AUTHORIZATION_FAILED"}
    # only the topic metadata did not know yet is asked again; a refusal is final
    assert asked == [["a", "b", "c"], ["a"]]
