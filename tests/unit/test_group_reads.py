"""The consumer groups' reads: a coordinator that answers with a retriable error (still
loading __consumer_offsets after a start) is asked again within `kafka.request_timeout_ms`;
a lasting or a non-retriable error leaves the snapshot's readers unknown, never the run
failed."""

from __future__ import annotations

import datetime as dt
from typing import Any

import kafka.errors as Errors
import pytest

from provisioning import retry
from provisioning.conf import ClusterConf
from provisioning.conf.model import KafkaConf
from provisioning.kafka import snapshot
from provisioning.kafka.client import ClusterAdmin


class ScriptedClient:
    """The part of kafka-python's admin client the group reads use; each call answers the
    next of its script (an exception is raised)."""

    def __init__(self, groups: list[Any], offsets: list[Any], probe: list[Any] | None = None,
                 may_describe_cluster: bool = True) -> None:
        self.groups = groups
        self.offsets = offsets
        self.probe = probe or []
        self.operations = ["DESCRIBE"] if may_describe_cluster else ["DESCRIBE_CONFIGS"]
        self.calls: list[str] = []

    def describe_cluster(self) -> dict[str, Any]:
        return {"authorized_operations": self.operations}

    def _next(self, name: str, script: list[Any]) -> Any:
        self.calls.append(name)
        answer = script.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def describe_groups(self, groups: list[str]) -> Any:
        return self._next("describe_groups", self.probe)

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


class NoTopics(ClusterAdmin):
    """A cluster with no topic: what snapshot_rows asks besides the groups."""

    def describe_topics(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []

    def topic_configs(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {}


def _admin(scripted: ScriptedClient, request_timeout_ms: int = 60000,
           kind: type[ClusterAdmin] = ClusterAdmin) -> ClusterAdmin:
    admin = kind(ClusterConf("local", "127.0.0.1:9"), None,
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
    # The retry layer's clock and pause, so no other thread's sleep moves this clock.
    c = Clock()
    monkeypatch.setattr(retry, "now", c.monotonic)
    monkeypatch.setattr(retry, "pause", c.sleep)
    return c


LOADING = Errors.CoordinatorLoadInProgressError
OFFSETS = {"billing": {TP("orders", 0): Offset(7), TP("orders", 1): Offset(-1),
                       TP("clicks", 0): Offset(3)}}


def test_a_loading_coordinator_is_asked_again_until_it_answers(clock: Clock) -> None:
    scripted = ScriptedClient(groups=[LOADING("loading"), LOADING("loading"),
                                      [{"group_id": "billing"}]],
                              offsets=[LOADING("loading"), OFFSETS])
    admin = _admin(scripted)

    assert admin.topics_in_use() == {"orders": ["billing"], "clicks": ["billing"]}
    assert scripted.calls == ["list_groups", "list_groups", "list_groups",
                              "list_group_offsets", "list_group_offsets"]
    assert clock.now == pytest.approx(0.75)


def test_one_deadline_holds_for_the_whole_read(clock: Clock) -> None:
    scripted = ScriptedClient(groups=[LOADING("loading"), LOADING("loading"),
                                      [{"group_id": "billing"}]],
                              offsets=[LOADING("loading")] * 100)
    admin = _admin(scripted, request_timeout_ms=1000)

    with pytest.raises(LOADING):
        admin.committed_offsets()
    # The groups took 0.5 s of the second: the offsets are asked at 0.5 and 0.75 s, and
    # no call starts at 1.0 s.
    assert scripted.calls == ["list_groups"] * 3 + ["list_group_offsets"] * 2
    assert clock.now == pytest.approx(0.75)


def test_a_coordinator_still_loading_at_the_deadline_raises_its_error(clock: Clock) -> None:
    scripted = ScriptedClient(groups=[LOADING("loading")] * 100, offsets=[])
    admin = _admin(scripted, request_timeout_ms=1000)

    with pytest.raises(LOADING):
        admin.committed_offsets()
    assert scripted.calls == ["list_groups"] * 4


def test_a_coordinator_that_moved_is_not_asked_again_at_the_same_broker(clock: Clock) -> None:
    scripted = ScriptedClient(groups=[[{"group_id": "billing"}]],
                              offsets=[Errors.NotCoordinatorError("moved"), OFFSETS])
    admin = _admin(scripted)

    with pytest.raises(Errors.NotCoordinatorError):
        admin.committed_offsets()
    assert scripted.calls == ["list_groups", "list_group_offsets"]


def test_a_non_retriable_error_is_raised_at_once(clock: Clock) -> None:
    scripted = ScriptedClient(groups=[Errors.ClusterAuthorizationFailedError("no")],
                              offsets=[])
    admin = _admin(scripted)

    with pytest.raises(Errors.ClusterAuthorizationFailedError):
        admin.committed_offsets()
    assert scripted.calls == ["list_groups"]
    assert clock.now == 0.0


def test_the_visibility_probe_waits_for_the_coordinator_then_reads(clock: Clock) -> None:
    scripted = ScriptedClient(
        groups=[[{"group_id": "billing"}]], offsets=[OFFSETS], may_describe_cluster=False,
        probe=[Errors.CoordinatorNotAvailableError("creating __consumer_offsets"),
               [{"group": "probe", "error_code": 0}]])
    admin = _admin(scripted)

    assert admin.topics_in_use() == {"orders": ["billing"], "clicks": ["billing"]}
    assert scripted.calls == ["describe_groups", "describe_groups", "list_groups",
                              "list_group_offsets"]


@pytest.mark.parametrize("probe", [
    [Errors.GroupAuthorizationFailedError("no describe on groups")],
    [Errors.CoordinatorNotAvailableError("never")] * 100,
], ids=["not-authorized", "never-answered"])
def test_groups_not_all_visible_leave_the_readers_unknown(clock: Clock,
                                                          probe: list[Any]) -> None:
    scripted = ScriptedClient(groups=[], offsets=[], probe=probe, may_describe_cluster=False)
    admin = _admin(scripted, request_timeout_ms=1000)

    assert admin.topics_in_use() is None
    assert set(scripted.calls) == {"describe_groups"}


def test_the_snapshot_records_readers_unknown_when_the_groups_cannot_be_read(
        clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    scripted = ScriptedClient(groups=[LOADING("loading")] * 100, offsets=[])
    admin = _admin(scripted, request_timeout_ms=500, kind=NoTopics)

    with caplog.at_level("WARNING", logger=snapshot.log.name):
        rows = list(snapshot.snapshot_rows(admin, "run-1", None,
                                           dt.datetime(2026, 11, 26)))
    assert rows == []
    assert [r.getMessage() for r in caplog.records] == [
        "cluster local: the consumer groups could not be read "
        "(CoordinatorLoadInProgressError); which topics are in use is unknown"]
