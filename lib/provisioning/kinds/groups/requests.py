"""The consumer groups' admin requests: the live groups (ListGroups v5 for each group's type
and state, DescribeGroups for a classic group's members, DescribeConfigs of the group
resources), their configs set (IncrementalAlterConfigs, validateOnly first), their deletion
(DeleteGroups), and the audit outcome of each answer.

DescribeConfigs and IncrementalAlterConfigs are sent again after a lost answer
(`kafka.resources`); a change still unanswered is `unknown` (`failed` when it was never sent,
or only validated). DeleteGroups (kafka-python's, at each group's coordinator) is not
resent: a lost answer leaves the groups it was sent for `unknown`.

A group's type and state come from ListGroups v5 only: DescribeGroups answers a KIP-848
consumer group (and a share or streams group) as `Dead`, "not a classic group", so it is
asked only for the member count of a classic group. A broker older than ListGroups v5 names
no type, and its groups are not read (never taken as memberless).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import kafka.errors as Errors

from provisioning import names, retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.codes import retriable
from provisioning.kafka.reads import Unreadable, each_cluster
from provisioning.kafka.resources import answer, read_configs
from provisioning.kafka.snapshot import described
from provisioning.kafka.usage import group_committed_offsets, latest_offsets
from provisioning.kinds.groups.names import ALTERED, CLASSIC, DELETED, EMPTY, SHARE

log = logging.getLogger(__name__)

# ConfigResource type of a group (KIP-848), and the source of a group's own config.
GROUP_RESOURCE = 32
DYNAMIC_GROUP_CONFIG = 8
# The broker refused the change as asked: no retry helps.
REJECTIONS = frozenset({"INVALID_CONFIG", "INVALID_REQUEST", "POLICY_VIOLATION",
                        "GROUP_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED",
                        "NON_EMPTY_GROUP", "UNSUPPORTED_VERSION", "INVALID_GROUP_ID"})



class GroupsUnreadable(Unreadable):
    """The cluster's groups could not be read: unknown then, never "none"."""

    def __init__(self, cluster: str, error: str, message: str | None) -> None:
        super().__init__(cluster, "reading consumer groups", error, message)


@dataclass(frozen=True)
class LiveGroup:
    """One live group: its type and state (ListGroups v5; None: a group id with configs
    and no group), its members (None: not known) and its own configs."""

    type: str | None
    state: str | None
    members: int | None
    configs: Mapping[str, str] = field(default_factory=dict)


def _deadline(admin: ClusterAdmin) -> float:
    return retry.deadline_in(admin.kafka.request_timeout_ms / 1000)


def list_groups(admin: ClusterAdmin) -> dict[str, tuple[str | None, str | None]]:
    """group -> (type, state) of every group of the cluster (ListGroups v5, every broker).
    Raises GroupsUnreadable when a broker answers below v5 (no type).

    Asked without filters: kafka-python sends the highest version both sides know, and a
    `types_filter` (which would force v5) cannot name a streams group in kafka-python 3.0's
    GroupType, so the answer is checked for v5's type instead."""
    listed = retry.settle(admin.client.list_groups, _deadline(admin), retriable)
    found: dict[str, tuple[str | None, str | None]] = {}
    for g in listed:
        if not g.get("group_type"):
            raise GroupsUnreadable(admin.cluster.name, "UNSUPPORTED_VERSION",
                                   "ListGroups names no group type (v5, Kafka 4.0 on)")
        found[g["group_id"]] = (g["group_type"], g["group_state"])
    return found


def listed_groups(admin: ClusterAdmin, only: Collection[str] | None = None
                  ) -> dict[str, tuple[str | None, str | None, int | None]]:
    """group -> (type, state, members) of the listed groups (of `only`, if given): members
    0 when Empty, counted by DescribeGroups for a classic group, else None (not known)."""
    listed = {g: found for g, found in list_groups(admin).items() if only is None or g in only}
    asked = sorted(g for g, (kind, state) in listed.items() if kind == CLASSIC and state != EMPTY)
    described = retry.settle(lambda: admin.client.describe_groups(asked), _deadline(admin),
                             retriable) if asked else {}
    counted = {g: len(d.get("members") or []) for g, d in described.items()
               if not d.get("error")}
    return {g: (kind, state, 0 if state == EMPTY else counted.get(g))
            for g, (kind, state) in listed.items()}


def group_configs(admin: ClusterAdmin, groups: Sequence[str], batch_size: int = 200
                  ) -> dict[str, dict[str, str]]:
    """group -> its own configs (set on the group resource; a group without any: {})."""
    return read_configs(admin, GROUP_RESOURCE, groups, DYNAMIC_GROUP_CONFIG, lambda error, said:
                        GroupsUnreadable(admin.cluster.name, error, said), batch_size)


def configured_groups(admin: ClusterAdmin) -> list[str]:
    """The group ids that have configs of their own, listed or not (ListConfigResources,
    Kafka 4.1 on; none on a broker without it)."""
    try:
        found = admin.client.list_config_resources(["GROUP"])
    except (Errors.IncompatibleBrokerVersion, Errors.UnsupportedVersionError):
        return []
    return sorted(found.get("group", []))


def read_groups(admin: ClusterAdmin, batch_size: int = 200) -> dict[str, LiveGroup]:
    """Every live group of the cluster, with its type, state, members and own configs; a
    group id with configs and no group (no consumer used it yet, or it was deleted) has
    type and state None."""
    listed = listed_groups(admin)
    configs = group_configs(admin, sorted({*listed, *configured_groups(admin)}), batch_size)
    found = {}
    for g in sorted({*listed, *(g for g, c in configs.items() if c)}):
        kind, state, members = listed.get(g, (None, None, None))
        found[g] = LiveGroup(kind, state, members, configs.get(g, {}))
    return found


def delete_groups(admin: ClusterAdmin, groups: Sequence[str], batch_size: int,
                  sent: Callable[[Sequence[str]], None] = lambda _: None
                  ) -> Iterator[tuple[str, dict[str, Any]]]:
    """(group, answer) for each group deleted (DeleteGroups at each group's coordinator)."""
    for start in range(0, len(groups), batch_size):
        batch = list(groups[start:start + batch_size])
        sent(batch)
        answers = admin.client.delete_groups(batch)
        for group in batch:
            said = answers.get(group)
            code = (-1 if said is None else 0 if said == "OK"
                    else int(getattr(Errors, said, Errors.UnknownError).errno))
            yield group, answer(code, None if code != -1 else "no answer for this group")


def outcome(action_removes: bool, validate_only: bool, answer: Mapping[str, Any]) -> str:
    """The audit outcome of one group's answer. A deletion the broker found done
    (GROUP_ID_NOT_FOUND) is `deleted`: the group is gone."""
    error = answer["error_name"]
    if error == "NONE" or (action_removes and error == "GROUP_ID_NOT_FOUND"):
        return names.VALIDATED if validate_only else DELETED if action_removes else ALTERED
    if error in REJECTIONS:
        return names.REJECTED
    return names.FAILED if validate_only or answer["attempts"] == 0 else names.UNKNOWN


@dataclass(frozen=True)
class ClusterGroups:
    """A cluster's live groups, or why they could not be read (error name, message)."""

    groups: Mapping[str, LiveGroup]
    problem: tuple[str, str] | None = None


def group_states(clusters: Sequence[ClusterConf], credentials: Mapping[str, Credentials],
                 kafka: KafkaConf, batch_size: int = 200) -> dict[str, ClusterGroups]:
    """Every cluster's live groups (from the driver); a cluster whose groups cannot be read
    has its problem instead."""
    return each_cluster(clusters, credentials, kafka, lambda admin: ClusterGroups(
        read_groups(admin, batch_size)), lambda problem: ClusterGroups({}, problem),
                        also=(Errors.KafkaError,))


@dataclass(frozen=True)
class ClusterOffsets:
    """What `check` read of one cluster's groups: GROUP_OFFSETS rows, GROUP_TOPICS rows, and
    why the groups could not be read (error name, message), if so."""

    offsets: list[tuple[Any, ...]]
    topics: list[tuple[Any, ...]]
    problem: tuple[str, str] | None = None


def _cluster_offsets(admin: ClusterAdmin, recorded: Collection[str]) -> ClusterOffsets:
    """Every group's type, state, members and committed offsets (a share group's are not read
    by OffsetFetch: none), the log end offset of each partition committed on (one ListOffsets
    per leader), and the topics committed on or `recorded` (named by the groups' earlier
    inventory rows) as the cluster has them now. A group whose offsets could not be read has
    one row, topic null, with why."""
    cluster = admin.cluster.name
    listed = listed_groups(admin)
    committed, unread = group_committed_offsets(
        admin, sorted(g for g, (kind, _, _) in listed.items() if kind != SHARE))
    names = sorted({t for found in committed.values() for t, _ in found} | set(recorded))
    # An absent topic has no row; one the broker would not describe keeps its error.
    seen = {t.name: t for chunk in described(admin, names) for t in chunk}
    now = {n: t for n, t in seen.items() if t.error_name is None}
    wanted = {tp for found in committed.values() for tp in found
              if tp[0] in now and tp[1] < (now[tp[0]].partitions or 0)}
    ends, failure = latest_offsets(admin, wanted)
    offsets: list[tuple[Any, ...]] = []
    for group, (kind, state, members) in sorted(listed.items()):
        found = committed.get(group, {})
        for (topic, partition), offset in sorted(found.items()):
            end = ends.get((topic, partition))
            error = (failure if (topic, partition) in wanted and end is None else None)
            offsets.append((cluster, group, kind, state, members, topic, partition, offset,
                            end, error))
        if not found:
            offsets.append((cluster, group, kind, state, members, None, None, None, None,
                            unread.get(group)))
    return ClusterOffsets(offsets, [(cluster, t.name, t.topic_id, t.partitions, t.error_name)
                                    for _, t in sorted(seen.items())])


def group_offsets(clusters: Sequence[ClusterConf], credentials: Mapping[str, Credentials],
                  kafka: KafkaConf, recorded: Mapping[str, Collection[str]]
                  ) -> dict[str, ClusterOffsets]:
    """Every cluster's groups' committed offsets and lag (from the driver; `recorded`: per
    cluster, the topics the groups' earlier inventory rows name); a cluster whose groups
    cannot be read has its problem instead."""
    return each_cluster(clusters, credentials, kafka, lambda admin: _cluster_offsets(
        admin, recorded.get(admin.cluster.name, ())), lambda p: ClusterOffsets([], [], p),
                        also=(Errors.KafkaError,))
