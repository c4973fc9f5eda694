"""The consumer groups' reads of a group's type, state and members, on a stand-in admin
client: a broker that names no group type (below ListGroups v5) is never read as memberless,
and a group is free to delete only in a state without members and with none counted."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from provisioning.conf import KafkaConf
from provisioning.kinds.groups.requests import GroupsUnreadable, list_groups
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
