"""CreateTopics a broker throttles (KIP-599, THROTTLING_QUOTA_EXCEEDED): the throttled topics
alone are sent again after the throttle time the broker asked for, up to
`kafka.throttle_retries` times, each result counting the requests that carried its topic."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from provisioning import retry
from provisioning.conf.model import KafkaConf
from provisioning.kafka import requests
from provisioning.kafka.batching import TopicRequest

THROTTLED = 89


class FakeAdmin:
    def __init__(self, throttle_retries: int) -> None:
        self.kafka = KafkaConf(throttle_retries=throttle_retries)
        self.cluster = type("Cluster", (), {"name": "local"})()
        self.client = object()
        self.lost_deadline: float | None = None


def _answer(codes: dict[str, int], throttle_ms: int) -> Any:
    return SimpleNamespace(throttle_time_ms=throttle_ms, topics=[
        SimpleNamespace(name=name, error_code=code, topic_id=None, error_message=None)
        for name, code in codes.items()])


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> tuple[list[list[str]], list[float], list[Any]]:
    """The topics of each CreateTopics sent, the waits between them, and the answers to give
    in turn."""
    topics: list[list[str]] = []
    waits: list[float] = []
    answers: list[Any] = []

    def send(_client: Any, request: Any, _codes: Any) -> Any:
        topics.append([t.name for t in request.topics])
        return answers.pop(0)

    monkeypatch.setattr(requests, "send_to_controller", send)
    monkeypatch.setattr(retry, "pause", waits.append)
    return topics, waits, answers


def _requests(*names: str) -> list[TopicRequest]:
    return [TopicRequest(name=n, partitions=1, replication_factor=1, replica_assignment=None,
                         configs={}) for n in names]


def test_throttled_topics_alone_are_sent_again_after_the_throttle_time(
        sent: tuple[list[list[str]], list[float], list[Any]],
        caplog: pytest.LogCaptureFixture) -> None:
    topics, waits, answers = sent
    answers += [_answer({"a": 0, "b": THROTTLED, "c": THROTTLED}, 250),
                _answer({"b": 0, "c": THROTTLED}, 40), _answer({"c": 0}, 0)]
    with caplog.at_level(logging.INFO, logger=requests.__name__):
        results = requests.create_topics(FakeAdmin(8), _requests("a", "b", "c"),  # type: ignore[arg-type]
                                          validate_only=False)
    assert [(r["topic"], r["error_code"], r["attempts"]) for r in results] == [
        ("a", 0, 1), ("b", 0, 2), ("c", 0, 3)]
    assert topics == [["a", "b", "c"], ["b", "c"], ["c"]]
    # a throttle time under 100 ms waits 100 ms
    assert waits == [0.25, 0.1]
    assert [r.getMessage() for r in caplog.records] == [
        "cluster local: 2 topic(s) throttled, retrying in 250 ms",
        "cluster local: 1 topic(s) throttled, retrying in 100 ms"]


def test_a_topic_throttled_past_the_retries_keeps_its_throttled_answer(
        sent: tuple[list[list[str]], list[float], list[Any]]) -> None:
    topics, waits, answers = sent
    answers += [_answer({"a": THROTTLED}, 500)] * 3
    (result,) = requests.create_topics(FakeAdmin(2), _requests("a"),  # type: ignore[arg-type]
                                       validate_only=False)
    assert (result["error_name"], result["attempts"]) == ("THROTTLING_QUOTA_EXCEEDED", 3)
    assert (len(topics), waits) == (3, [0.5, 0.5])


def test_a_topic_an_answer_leaves_out_while_others_are_throttled_is_said_so(
        sent: tuple[list[list[str]], list[float], list[Any]]) -> None:
    topics, _, answers = sent
    answers += [_answer({"a": THROTTLED}, 100), _answer({"a": 0}, 0)]
    results = requests.create_topics(FakeAdmin(8), _requests("a", "b"),  # type: ignore[arg-type]
                                     validate_only=False)
    assert [(r["topic"], r["error_code"], r["error_message"], r["attempts"])
            for r in results] == [
        ("a", 0, None, 2),
        ("b", -1, "the broker's response did not mention this topic", 1)]
    assert topics == [["a", "b"], ["a"]]
