"""The offset resets' admin requests: what a request's partitions hold now (Metadata for the
topic's partitions, OffsetFetch for the group's committed offsets, ListOffsets for the log's
start and end and the first offset at a time), the group's members read again right
before anything is sent (ListGroups v5 through the groups kind), the targets committed
(OffsetCommit, kafka-python's `alter_group_offsets`) or the committed offsets removed
(OffsetDelete, `delete_group_offsets`), and the committed offsets read back.

Whether a group has members comes from the groups kind's reading (`kinds.groups.tasks.
in_use`): ListGroups v5 for every group's type and state, DescribeGroups for a classic
group's members, so a KIP-848 consumer group with members is never taken as empty. A group
ListGroups does not list may be given offsets (its consumers find them when they start).

A commit or a removal whose answer was lost is not sent again: its partitions are `unknown`,
and verify reads the committed offsets back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import groupby
from typing import Any

import kafka.errors as Errors
from kafka import TopicPartition
from kafka.admin import OffsetSpec, OffsetTimestamp
from kafka.structs import OffsetAndMetadata

from provisioning import names, retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.errors import ClusterUnreachable
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.codes import error_name, retriable
from provisioning.kinds.groups.tasks import in_use
from provisioning.kinds.offsets.names import DELETE, OFFSETS_DELETED, RESET, RESET_DONE

# The broker refused it as asked: nothing was changed.
REJECTIONS = frozenset({"GROUP_SUBSCRIBED_TO_TOPIC", "NON_EMPTY_GROUP", "UNKNOWN_MEMBER_ID",
                        "GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED",
                        "INVALID_GROUP_ID", "UNKNOWN_TOPIC_OR_PARTITION",
                        "OFFSET_METADATA_TOO_LARGE", "INVALID_COMMIT_OFFSET_SIZE"})
# Sent, and its answer lost: what the broker did is not known.
_LOST: tuple[type[BaseException], ...] = (
    Errors.KafkaConnectionError, Errors.KafkaTimeoutError, Errors.RequestTimedOutError)


def _deadline(admin: ClusterAdmin) -> float:
    return retry.deadline_in(admin.kafka.request_timeout_ms / 1000)


def _settled(admin: ClusterAdmin, call: Callable[[], Any]) -> Any:
    """`call` asked again while the broker answers with a retriable error (a coordinator
    loading its offsets, a leader being elected), up to `kafka.request_timeout_ms`."""
    return retry.settle(call, _deadline(admin), retriable)


def read_offsets(admin: ClusterAdmin, requests: Sequence[Mapping[str, Any]]
                 ) -> list[tuple[Any, ...]]:
    """OFFSET_LIVE rows for `requests` (each with cluster, request_id, group, topic, at_ms): every
    partition of its topic with the group's committed offset, the log's start and end and
    the first offset at or after `at_ms`; a topic the cluster does not have is one row with
    partition null."""
    topics = sorted({r["topic"] for r in requests})
    described = {t.name: t for t in admin.describe_topics(topics)}
    counts = {t: d.partitions for t, d in described.items() if d.error_name is None}
    tps = [TopicPartition(t, p) for t, n in sorted(counts.items()) for p in range(n or 0)]

    def offsets(partitions: Sequence[TopicPartition], spec: Any) -> dict[TopicPartition, Any]:
        if not partitions:
            return {}
        return dict(_settled(admin, lambda: admin.client.list_partition_offsets(
            dict.fromkeys(partitions, spec))))

    ends = {spec: offsets(tps, spec) for spec in (OffsetSpec.EARLIEST, OffsetSpec.LATEST)}
    times = sorted({(r["topic"], r["at_ms"]) for r in requests
                    if r["at_ms"] is not None and r["topic"] in counts})
    at: dict[tuple[str, int], dict[int, int | None]] = {}
    for topic, ms in times:
        found = offsets([tp for tp in tps if tp.topic == topic], OffsetTimestamp(ms))
        at[(topic, ms)] = {tp.partition: (v.offset if v.offset >= 0 else None)
                           for tp, v in found.items()}
    groups = sorted({r["group"] for r in requests})
    committed = _settled(admin, lambda: admin.client.list_group_offsets(
        {g: [tp for tp in tps if any(r["group"] == g and r["topic"] == tp.topic
                                     for r in requests)] for g in groups})) if tps else {}
    rows: list[tuple[Any, ...]] = []
    for r in requests:
        if r["topic"] not in counts:
            rows.append((r["cluster"], r["request_id"], None, None, None, None, None))
            continue
        mine = committed.get(r["group"], {})
        for p in range(counts[r["topic"]] or 0):
            tp = TopicPartition(r["topic"], p)
            offset = mine.get(tp)
            rows.append((r["cluster"], r["request_id"], p,
                         offset.offset if offset is not None and offset.offset >= 0 else None,
                         ends[OffsetSpec.EARLIEST][tp].offset,
                         ends[OffsetSpec.LATEST][tp].offset,
                         at.get((r["topic"], r["at_ms"]), {}).get(p)))
    return rows


def offset_states(clusters: Sequence[ClusterConf], credentials: Mapping[str, Credentials],
                  kafka: KafkaConf, requests: Sequence[Mapping[str, Any]]
                  ) -> dict[str, tuple[list[tuple[Any, ...]], tuple[str, str] | None]]:
    """Per cluster, the OFFSET_LIVE rows of its `requests` (`read_offsets`, from the
    driver), or none and why they could not be read (error name, message)."""
    found: dict[str, tuple[list[tuple[Any, ...]], tuple[str, str] | None]] = {}
    for cluster in clusters:
        mine = [r for r in requests if r["cluster"] == cluster.name]
        if not mine:
            found[cluster.name] = ([], None)
            continue
        try:
            with ClusterAdmin(cluster, credentials.get(cluster.name), kafka) as admin:
                found[cluster.name] = (read_offsets(admin, mine), None)
        except ClusterUnreachable as exc:
            found[cluster.name] = ([], ("CLUSTER_UNREACHABLE", str(exc)))
        except Errors.KafkaError as exc:
            found[cluster.name] = ([], (type(exc).__name__, str(exc) or type(exc).__name__))
    return found


def _answer(code: int, message: str | None = None, attempts: int = 1) -> dict[str, Any]:
    return {"error_code": code, "error_name": error_name(code) if code >= 0 else "UNKNOWN",
            "error_message": message, "attempts": attempts}


def outcome(action: str, answer: Mapping[str, Any]) -> str:
    """The audit outcome of one partition's answer."""
    error = answer["error_name"]
    if error == "NONE":
        return OFFSETS_DELETED if action == DELETE else RESET_DONE
    if error in REJECTIONS:
        return names.REJECTED
    return names.FAILED if answer["attempts"] == 0 else names.UNKNOWN


def busy_groups(admin: ClusterAdmin, groups: Sequence[str]) -> dict[str, str]:
    """group -> why nothing may be committed for it now (it has members: ListGroups v5 and
    DescribeGroups, read now), for those of `groups` that have any."""
    return in_use(admin, list(groups))


def send_resets(admin: ClusterAdmin, rows: Sequence[Mapping[str, Any]],
                sent: Callable[[Sequence[Mapping[str, Any]]], None] = lambda _: None
                ) -> Iterator[tuple[Mapping[str, Any], dict[str, Any]]]:
    """(row, answer) for each plan row (RESET with its `target`, or DELETE), one request per
    group, topic and action; a group with members is given no offset, its RESET rows
    refused (NON_EMPTY_GROUP) by name. A DELETE goes to the broker whatever the group's
    members (OffsetDelete, KIP-496, removes the offsets of a topic a live group no longer
    reads; the broker refuses it, GROUP_SUBSCRIBED_TO_TOPIC, while the group reads it).
    `sent` is told of a request's rows just before it goes."""
    ordered = sorted(rows, key=lambda r: (r["group"], r["topic"], r["action"],
                                          r["partition"]))
    busy = busy_groups(admin, sorted({r["group"] for r in ordered if r["action"] == RESET}))
    for (group, topic, action), each in groupby(
            ordered, key=lambda r: (r["group"], r["topic"], r["action"])):
        part = list(each)
        if group in busy and action == RESET:
            for row in part:
                yield row, {**_answer(-1, busy[group], attempts=0),
                            "error_name": "NON_EMPTY_GROUP"}
            continue
        sent(part)
        try:
            if action == RESET:
                said = admin.client.alter_group_offsets(group, {
                    TopicPartition(topic, r["partition"]): OffsetAndMetadata(
                        r["target"], f"offset reset {r['request_id']}", -1) for r in part})
            else:
                said = admin.client.delete_group_offsets(
                    group, [TopicPartition(topic, r["partition"]) for r in part])
        except _LOST as exc:
            for row in part:
                yield row, {**_answer(-1, f"no answer ({type(exc).__name__})"),
                            "error_name": type(exc).__name__}
            continue
        except Errors.KafkaError as exc:
            # A top-level refusal (the group has members, is unknown, ...): none changed.
            for row in part:
                yield row, _answer(int(getattr(exc, "errno", -1)), str(exc) or None)
            continue
        for row in part:
            error = said.get(TopicPartition(topic, row["partition"]))
            yield row, (_answer(-1, "the broker's response did not answer this partition")
                        if error is None else _answer(int(error.errno), (
                            getattr(error, "description", None) or None)
                            if error.errno else None))


def committed_offsets(admin: ClusterAdmin, group: str, topic: str) -> dict[int, int]:
    """partition -> the group's committed offset on `topic` (read back at verify)."""
    found = _settled(admin, lambda: admin.client.list_group_offsets({group: None}))
    return {tp.partition: o.offset for tp, o in found.get(group, {}).items()
            if tp.topic == topic and o.offset >= 0}


def settled_action(action: str, target: int | None, found: Mapping[int, int],
                   partition: int) -> bool:
    """Whether a partition read back holds what its request asked."""
    if action == RESET:
        return found.get(partition) == target
    return partition not in found
