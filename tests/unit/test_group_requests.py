"""The consumer groups' reads of a group's type, state and members, on a stand-in admin
client: a broker that names no group type (below ListGroups v5) is never read as memberless,
and a group is free to delete only in a state without members and with none counted; a
group config request sent again after a lost answer, and `unknown` when none came."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import kafka.errors as Errors
import pytest

from provisioning import names, retry
from provisioning.conf import KafkaConf
from provisioning.kafka import resources
from provisioning.kinds.groups.requests import (
    GROUP_RESOURCE,
    GroupsUnreadable,
    list_groups,
    outcome,
)
from provisioning.kinds.groups.tasks import in_use


def admin(listed: list[dict[str, Any]], described: dict[str, Any] | None = None) -> Any:
    asked: list[list[str]] = []

    def describe_groups(groups: list[str]) -> dict[str, Any]:
        asked.append(groups)
        return {g: (described or {})[g] for g in groups}

    client = SimpleNamespace(list_groups=lambda: listed, describe_groups=describe_groups)
    return SimpleNamespace(client=client, kafka=KafkaConf(request_timeout_ms=1000),
                           cluster=SimpleNamespace(name="local"), asked=asked)


def group(name: str, kind: str | None, state: str) -> dict[str, Any]:
    return {"group_id": name, "protocol_type": "consumer", "group_state": state,
            "group_type": kind}


def test_a_broker_below_list_groups_v5_is_not_read() -> None:
    with pytest.raises(GroupsUnreadable, match="ListGroups names no group type"):
        list_groups(admin([group("a", None, "Empty")]))


def test_groups_with_members_are_in_use_whatever_their_type() -> None:
    found = admin([group("idle", "classic", "Empty"), group("busy", "classic", "Stable"),
                   group("kip848", "consumer", "Stable"), group("share", "share", "Empty"),
                   group("gone", "classic", "Dead")],
                  {"busy": {"members": [{}, {}], "error": None},
                   "gone": {"members": [], "error": None}})
    assert in_use(found, ["idle", "busy", "kip848", "share", "gone", "unknown"]) == {
        "busy": "group busy: it has 2 member(s) (type classic, state Stable); nothing was "
                "sent",
        "kip848": "group kip848: it has an unknown number of member(s) (type consumer, "
                  "state Stable); nothing was sent"}
    # DescribeGroups is asked of classic groups only (it answers the others as Dead), and
    # not of an Empty one.
    assert found.asked == [["busy", "gone"]]


@pytest.fixture
def sends(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What each send of a group config request does, in turn (an exception is raised, the
    last one for every send after it); a clock that moves 0.4 s per error, no sleep."""
    plan: list[Any] = []
    clock = [0.0]

    def send_to_node(client: Any, node: Any, request: Any, use: str) -> Any:
        step = plan.pop(0) if len(plan) > 1 else plan[0]
        if isinstance(step, BaseException):
            raise step
        return SimpleNamespace(responses=[
            SimpleNamespace(resource_name=r.resource_name, error_code=0, error_message=None)
            for r in request.resources])

    def now() -> float:
        clock[0] += 0.4
        return clock[0]

    monkeypatch.setattr(resources, "send_to_node", send_to_node)
    monkeypatch.setattr(retry, "now", now)
    monkeypatch.setattr(retry, "pause", lambda _s: None)
    return plan


def alter(validate_only: bool) -> list[tuple[str, str, dict[str, Any]]]:
    marked: list[list[str]] = []
    answers = list(resources.set_configs(
        admin([]), GROUP_RESOURCE, [("a", {"k": "1"}), ("b", {"k": "2"})], validate_only, 1,
        sent=lambda gs: marked.append(list(gs))))
    assert marked == [["a"], ["b"]]
    return [(g, outcome(False, validate_only, a), a) for g, a in answers]


def test_a_group_config_change_whose_answer_was_lost_is_sent_again(sends: list[Any]) -> None:
    sends[:] = [Errors.NodeNotReadyError("not ready"), Errors.KafkaConnectionError("reset"),
                "answered"]
    assert [(g, o, a["attempts"], a["error_name"]) for g, o, a in alter(False)] == [
        ("a", "altered", 2, "NONE"),
        ("b", "altered", 1, "NONE")]


def test_a_change_unanswered_within_the_request_timeout_is_unknown_not_failed(
        sends: list[Any]) -> None:
    sends[:] = [Errors.KafkaTimeoutError("lost")]
    # Lost at 0.4 s (the deadline 1.4 s), 0.8, 1.2 and 1.6 s: four sends, each request.
    real = alter(False)
    assert [(g, o, a["attempts"], a["error_name"], a["error_message"]) for g, o, a in real] == [
        (g, names.UNKNOWN, 4, "KafkaTimeoutError",
         "no answer within kafka.request_timeout_ms (KafkaTimeoutError)") for g in "ab"]
    # validateOnly changes nothing: failed; never sent (the node never ready): failed.
    assert {o for _, o, _ in alter(True)} == {names.FAILED}
    sends[:] = [Errors.NodeNotReadyError("not ready")]
    assert [(o, a["attempts"]) for _, o, a in alter(False)] == [(names.FAILED, 0)] * 2


def test_an_error_that_is_not_a_loss_is_raised_at_once(sends: list[Any]) -> None:
    sends[:] = [Errors.IncompatibleBrokerVersion("no"), "answered"]
    with pytest.raises(Errors.IncompatibleBrokerVersion):
        alter(False)
