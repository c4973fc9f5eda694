"""The consumer groups' reads: a coordinator that answers with a retriable error (still
loading __consumer_offsets after a start) is asked again within `kafka.request_timeout_ms`;
a lasting or a non-retriable error leaves the snapshot's readers unknown, never the run
failed."""

from __future__ import annotations

from typing import Any

import kafka.errors as Errors
import pytest

from provisioning.conf import ClusterConf
from provisioning.conf.model import KafkaConf
from provisioning.kafka import client as client_module
from provisioning.kafka import snapshot
from provisioning.kafka.client import ClusterAdmin


class ScriptedClient:
    """The part of kafka-python's admin client the group reads use; each call answers the
    next of its script (an exception is raised)."""

    def __init__(self, groups: list[Any], offsets: list[Any]) -> None:
        self.groups = groups
        self.offsets = offsets
        self.calls: list[str] = []

    def describe_cluster(self) -> dict[str, Any]:
        return {"authorized_operations": ["DESCRIBE"]}

    def _next(self, name: str, script: list[Any]) -> Any:
        self.calls.append(name)
        answer = script.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def list_groups(self) -> Any:
        return self._next("list_groups", self.groups)

    def list_group_offsets(self, groups: list[str]) -> Any:
        return self._next("list_group_offsets", self.offsets)


class Offset:
    def __init__(self, offset: int) -> None:
        self.offset = offset


class TP:
    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition


def _admin(scripted: ScriptedClient, request_timeout_ms: int = 60000) -> ClusterAdmin:
    admin = ClusterAdmin(ClusterConf("local", "127.0.0.1:9"), None,
                         KafkaConf(request_timeout_ms=request_timeout_ms))
    admin._client = scripted  # type: ignore[assignment]
    return admin


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(client_module.time, "monotonic", c.monotonic)
    monkeypatch.setattr(client_module.time, "sleep", c.sleep)
    return c


LOADING = Errors.CoordinatorLoadInProgressError


def test_a_loading_coordinator_is_asked_again_until_it_answers(clock: Clock) -> None:
    scripted = ScriptedClient(
        groups=[LOADING("loading"), LOADING("loading"), [{"group_id": "billing"}]],
        offsets=[Errors.CoordinatorNotAvailableError("moving"),
                 {"billing": {TP("orders", 0): Offset(7), TP("orders", 1): Offset(-1),
                              TP("clicks", 0): Offset(3)}}])
    admin = _admin(scripted)

    assert admin.topics_in_use() == {"orders": ["billing"], "clicks": ["billing"]}
    assert scripted.calls == ["list_groups", "list_groups", "list_groups",
                              "list_group_offsets", "list_group_offsets"]
    assert clock.now == pytest.approx(0.75)


def test_a_coordinator_still_loading_at_the_deadline_raises_its_error(clock: Clock) -> None:
    scripted = ScriptedClient(groups=[LOADING("loading")] * 100, offsets=[])
    admin = _admin(scripted, request_timeout_ms=1000)

    with pytest.raises(LOADING):
        admin.committed_offsets()
    # Asked at 0, 0.25, 0.5, 0.75 and 1.0 s: the last answer past the deadline is raised.
    assert scripted.calls == ["list_groups"] * 5


def test_a_non_retriable_error_is_raised_at_once(clock: Clock) -> None:
    scripted = ScriptedClient(groups=[Errors.ClusterAuthorizationFailedError("no")],
                              offsets=[])
    admin = _admin(scripted)

    with pytest.raises(Errors.ClusterAuthorizationFailedError):
        admin.committed_offsets()
    assert scripted.calls == ["list_groups"]
    assert clock.now == 0.0


def test_the_snapshot_records_readers_unknown_when_the_groups_cannot_be_read(
        clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    scripted = ScriptedClient(groups=[LOADING("loading")] * 100, offsets=[])
    admin = _admin(scripted, request_timeout_ms=500)

    with caplog.at_level("WARNING", logger=snapshot.log.name):
        assert snapshot._readers(admin) is None
    assert [r.getMessage() for r in caplog.records] == [
        "cluster local: the consumer groups could not be read "
        "(CoordinatorLoadInProgressError); which topics are in use is unknown"]
