"""What a cluster holds and who uses it: the one reader of usage (`usage_results`, one Spark
task per cluster), the newest write of the topics a plan would delete (`last_writes`), and
the log end offsets of some partitions (`latest_offsets`, the group inventory's lag).

A handful of requests per broker, not per topic:
- DescribeLogDirs once per broker: every replica's bytes, and each log dir's total and
  usable bytes (KIP-827);
- ListOffsets EARLIEST, LATEST and MAX_TIMESTAMP (KIP-734), each batched per leader (the
  leaders from one Metadata request per 1,000 topics);
- ListGroups, then the committed offsets per group (OffsetFetch);
all asked at once (one thread each, over the cluster's one admin client).
An answer that fails leaves its measures null and says why in the row's `error`; every
other measure of the cluster is still taken.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kafka import TopicPartition
from kafka import errors as Errors
from kafka.admin import OffsetSpec
from kafka.protocol.admin.cluster import DescribeLogDirsRequest
from kafka.protocol.consumer import ListOffsetsRequest

from provisioning import retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.compat import send_to_node
from provisioning.kafka.snapshot import described
from schemas import USAGE_READ, column_names

TOPIC, DISK = "topic", "disk"
_Topic = ListOffsetsRequest.ListOffsetsTopic
_Partition = _Topic.ListOffsetsPartition
_COLUMNS = column_names(USAGE_READ)


def usage_results(rows: Iterable[Mapping[str, Any]], clusters: Mapping[str, ClusterConf],
                  credentials: Mapping[str, Credentials], kafka: KafkaConf, run_id: str,
                  brokers: Mapping[str, Sequence[int]], checked_at: dt.datetime
                  ) -> Iterator[tuple[Any, ...]]:
    """USAGE_READ rows for the topics `rows` name (cluster, topic, partitions,
    replication_factor, online: the partitions that have a leader, retention_ms,
    retention_bytes; sorted by cluster), and one per log dir of each cluster's brokers.
    A row with a null topic only names its cluster (a cluster with no topic to judge still
    has disks). brokers: each cluster's live brokers (DescribeCluster)."""
    for name, group in itertools.groupby(rows, key=lambda r: r["cluster"]):
        topics = [r for r in group if r["topic"] is not None]
        with ClusterAdmin(clusters[name], credentials.get(name), kafka) as admin:
            yield from _cluster_usage(admin, topics, run_id, brokers.get(name, ()),
                                      checked_at)


def _row(what: str, **values: Any) -> tuple[Any, ...]:
    values["what"] = what
    return tuple(values.get(c) for c in _COLUMNS)


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def _cluster_usage(admin: ClusterAdmin, topics: Sequence[Mapping[str, Any]], run_id: str,
                   brokers: Sequence[int], checked_at: dt.datetime
                   ) -> Iterator[tuple[Any, ...]]:
    cluster = admin.cluster.name
    common = {"run_id": run_id, "cluster": cluster, "checked_at": checked_at}
    wanted = {(t["topic"], int(p)) for t in topics for p in (t["online"] or ())}
    # The log dirs, the offsets and the groups' commits are asked at once (the admin
    # client's requests may come from several threads).
    with ThreadPoolExecutor(3, thread_name_prefix="usage") as pool:
        dirs = pool.submit(_log_dirs, admin, brokers)
        offsets_read = pool.submit(_offsets, admin, wanted)
        groups = pool.submit(_committed, admin)
        (replicas, disks), (offsets, offsets_error) = dirs.result(), offsets_read.result()
        committed, groups_error = groups.result()
    for disk in disks:
        yield _row(DISK, **common, **disk)
    latest = offsets.get(OffsetSpec.LATEST, {})
    by_topic: dict[str, list[tuple[int, int, bool, int]]] = {}
    for key, size in replicas.items():
        if key is not None:
            topic, partition, broker, future = key
            by_topic.setdefault(topic, []).append((partition, broker, future, size))
    readers = _readers_by_topic(committed, latest)
    for t in topics:
        name = t["topic"]
        on_brokers: dict[int, int] = {}
        largest: dict[int, int] = {}
        for partition, broker, future, size in by_topic.get(name, ()):
            on_brokers[broker] = on_brokers.get(broker, 0) + size
            if not future:
                largest[partition] = max(largest.get(partition, 0), size)
        parts = sorted(int(p) for p in (t["online"] or ()))
        problems = [e for e in (offsets_error, groups_error) if e]
        offline = (t["partitions"] or 0) - len(parts)
        if offline > 0:
            problems.append(f"{offline} partition(s) without a leader are not measured")
        if replicas.get(None) is not None:
            problems.append(str(replicas[None]))
        yield _row(
            TOPIC, **common, topic=name, partitions=t["partitions"],
            replication_factor=t["replication_factor"],
            size_bytes=sum(largest.values()) if on_brokers or not replicas else None,
            stored_bytes=sum(on_brokers.values()) if on_brokers or not replicas else None,
            records=_records(offsets, name, parts),
            last_write_at=_last_write(offsets, name, parts),
            consumer_groups=None if readers is None else readers.get(name, []),
            broker_bytes=dict(sorted(on_brokers.items())),
            retention_ms=t["retention_ms"], retention_bytes=t["retention_bytes"],
            error="; ".join(problems) or None)


def _committed(admin: ClusterAdmin
               ) -> tuple[dict[str, dict[tuple[str, int], int]] | None, str | None]:
    """Every group's committed offsets (None: unknown), and why they are unknown."""
    try:
        return admin.committed_offsets(), None
    except Errors.KafkaError as exc:
        return None, _error(exc)


def group_committed_offsets(admin: ClusterAdmin, groups: Sequence[str]
                            ) -> tuple[dict[str, dict[tuple[str, int], int]], dict[str, str]]:
    """group -> its committed offsets, and group -> why they could not be read (the group
    inventory's): one OffsetFetch per coordinator for every group; when that answer fails
    (kafka-python raises on any group's error), each group is asked alone."""
    deadline = retry.deadline_in(admin.kafka.request_timeout_ms / 1000)

    def fetch(asked: Sequence[str]) -> dict[str, dict[tuple[str, int], int]]:
        # A coordinator still reading __consumer_offsets is asked again (as
        # `ClusterAdmin.committed_offsets` does).
        answers = retry.settle(lambda: admin.client.list_group_offsets(list(asked)), deadline,
                               lambda exc: isinstance(exc, Errors.CoordinatorLoadInProgressError))
        return {g: {(tp.topic, tp.partition): int(m.offset) for tp, m in found.items()
                    if m.offset is not None and m.offset >= 0} for g, found in answers.items()}

    if not groups:
        return {}, {}
    try:
        return fetch(groups), {}
    except Errors.KafkaError:
        pass
    found: dict[str, dict[tuple[str, int], int]] = {}
    unread: dict[str, str] = {}
    for group in groups:
        try:
            found.update(fetch([group]))
        except Errors.KafkaError as exc:
            unread[group] = f"committed offsets not read: {type(exc).__name__}"
    return found, unread


# (topic, partition, broker, future replica) -> bytes; the key None holds a failure.
Replicas = dict[Any, Any]


def _log_dirs(admin: ClusterAdmin, brokers: Sequence[int]
              ) -> tuple[Replicas, list[dict[str, Any]]]:
    """Every replica's bytes and every log dir's DISKS values, one DescribeLogDirs per
    broker, all asked at once (a broker that does not answer is a DISKS row with its
    error)."""
    replicas: Replicas = {}
    disks: list[dict[str, Any]] = []

    def describe(broker: int) -> Any:
        # Every topic's partitions (topics null): kafka-python's describe_log_dirs would
        # list them all first to name them.
        return send_to_node(admin.client, broker, DescribeLogDirsRequest(topics=None),
                            use="DescribeLogDirs")

    ordered = sorted(brokers)
    with ThreadPoolExecutor(max(1, min(len(ordered), 8)),
                            thread_name_prefix="log-dirs") as pool:
        asked = [(broker, pool.submit(describe, broker)) for broker in ordered]
    for broker, future in asked:
        try:
            answer = future.result()
        except Errors.KafkaError as exc:
            disks.append({"broker": broker, "error": _error(exc)})
            replicas[None] = f"broker {broker} did not describe its log dirs"
            continue
        for log_dir in (r.to_dict() for r in answer.results):
            kafka_bytes = 0
            for topic in log_dir.get("topics") or ():
                for p in topic["partitions"]:
                    size = max(0, int(p["partition_size"]))
                    kafka_bytes += size
                    key = (topic["name"], p["partition_index"], broker,
                           bool(p.get("is_future_key")))
                    replicas[key] = replicas.get(key, 0) + size
            total = _known(log_dir.get("total_bytes"))
            usable = _known(log_dir.get("usable_bytes"))
            code = log_dir.get("error_code") or 0
            disks.append({
                "broker": broker, "log_dir": log_dir["log_dir"], "total_bytes": total,
                "usable_bytes": usable,
                "used_bytes": None if total is None or usable is None else total - usable,
                "kafka_bytes": kafka_bytes,
                "error": None if not code else Errors.for_code(code).__name__})
    return replicas, disks


def _known(v: Any) -> int | None:
    return None if v is None or int(v) < 0 else int(v)


Offsets = dict[Any, dict[tuple[str, int], tuple[int, int]]]
SPECS = (OffsetSpec.EARLIEST, OffsetSpec.LATEST, OffsetSpec.MAX_TIMESTAMP)


def _offsets(admin: ClusterAdmin, partitions: Iterable[tuple[str, int]],
             specs: Sequence[OffsetSpec] = SPECS) -> tuple[Offsets, str | None]:
    """spec -> (topic, partition) -> (offset, timestamp): one ListOffsets per leader and
    spec, the specs asked at once. A spec whose answer failed is missing, with the first
    failure's text (in the specs' order)."""
    wanted = sorted(partitions)
    found: Offsets = {}
    failure = None
    if not wanted:
        return found, None
    leaders = _by_leader(admin, wanted)
    with ThreadPoolExecutor(len(specs), thread_name_prefix="offsets") as pool:
        asked = [(spec, pool.submit(_listed, admin, wanted, leaders, spec)) for spec in specs]
    for spec, future in asked:
        try:
            found[spec] = future.result()
        except Errors.KafkaError as exc:
            failure = failure or f"ListOffsets {spec.name}: {_error(exc)}"
    return found, failure


def latest_offsets(admin: ClusterAdmin, partitions: Iterable[tuple[str, int]]
                   ) -> tuple[dict[tuple[str, int], int], str | None]:
    """(topic, partition) -> log end offset (ListOffsets LATEST, one request per leader),
    and why they are unknown (then empty)."""
    found, failure = _offsets(admin, partitions, (OffsetSpec.LATEST,))
    return {tp: offset for tp, (offset, _) in found.get(OffsetSpec.LATEST, {}).items()}, failure


def _by_leader(admin: ClusterAdmin, wanted: Sequence[tuple[str, int]]
               ) -> dict[int, list[tuple[str, int]]] | None:
    """The wanted partitions by their leader, from the snapshot's Metadata requests by name
    (`snapshot.described`); None when a read failed, or a partition is gone or has no
    leader now (kafka-python's own routing then asks, waiting out a leader election)."""
    leader: dict[tuple[str, int], int | None] = {}
    try:
        for chunk in described(admin, sorted({t for t, _ in wanted})):
            for t in chunk:
                for state in t.partition_states or ():
                    leader[(t.name, state.partition)] = state.leader
    except Errors.KafkaError:
        return None
    groups: dict[int, list[tuple[str, int]]] = {}
    for tp in wanted:
        node = leader.get(tp)
        if node is None or node < 0:
            return None
        groups.setdefault(node, []).append(tp)
    return groups


class _Unsettled(Exception):
    """A partition's leader answered ListOffsets with an error (a leader that moved)."""


def _listed(admin: ClusterAdmin, wanted: Sequence[tuple[str, int]],
            leaders: Mapping[int, Sequence[tuple[str, int]]] | None, spec: OffsetSpec
            ) -> dict[tuple[str, int], tuple[int, int]]:
    """One spec's offsets of the wanted partitions: a ListOffsets to each leader. When a
    leader is unknown or a partition answers with an error, kafka-python's own
    list_partition_offsets asks again: it reads every topic's metadata to route the
    requests (most of this request's time over many topics), retries a moved leader until
    its timeout and raises any other error."""
    if leaders is not None:
        try:
            return _listed_by_leader(admin, leaders, spec)
        except _Unsettled:
            pass
    answer = admin.client.list_partition_offsets({TopicPartition(t, p): spec for t, p in wanted})
    return {(tp.topic, tp.partition): (int(o.offset), int(o.timestamp))
            for tp, o in answer.items()}


def _listed_by_leader(admin: ClusterAdmin, leaders: Mapping[int, Sequence[tuple[str, int]]],
                      spec: OffsetSpec) -> dict[tuple[str, int], tuple[int, int]]:
    found: dict[tuple[str, int], tuple[int, int]] = {}
    for node, partitions in sorted(leaders.items()):
        by_topic: dict[str, list[Any]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(_Partition(partition_index=p,
                                                         timestamp=int(spec)))
        request = ListOffsetsRequest(
            isolation_level=0, topics=[_Topic(name=t, partitions=ps)
                                       for t, ps in by_topic.items()],
            min_version=max(1, ListOffsetsRequest.min_version_for_timestamp(spec)))
        response = send_to_node(admin.client, node, request,
                                use="ListOffsets to each partition's leader")
        for topic in response.topics:
            for p in topic.partitions:
                if p.error_code:
                    raise _Unsettled
                found[(topic.name, p.partition_index)] = (int(p.offset), int(p.timestamp))
        if any(tp not in found for tp in partitions):
            raise _Unsettled
    return found


def _records(offsets: Offsets, topic: str, parts: Sequence[int]) -> int | None:
    first, last = offsets.get(OffsetSpec.EARLIEST), offsets.get(OffsetSpec.LATEST)
    if first is None or last is None:
        return None
    return sum(max(0, last[(topic, p)][0] - first[(topic, p)][0]) for p in parts
               if (topic, p) in first and (topic, p) in last)


def _last_write(offsets: Offsets, topic: str, parts: Sequence[int]) -> dt.datetime | None:
    newest = offsets.get(OffsetSpec.MAX_TIMESTAMP)
    if newest is None:
        return None
    stamps = [newest[(topic, p)][1] for p in parts if (topic, p) in newest]
    stamps = [s for s in stamps if s >= 0]
    return _at(max(stamps)) if stamps else None


def _at(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).replace(tzinfo=None)


def _readers_by_topic(committed: Mapping[str, Mapping[tuple[str, int], int]] | None,
                      latest: Mapping[tuple[str, int], tuple[int, int]]
                      ) -> dict[str, list[dict[str, Any]]] | None:
    """Topic -> the groups with committed offsets on it, each with its lag (the latest
    offsets minus its commits, over the partitions it committed on; null when a partition's
    latest offset is unknown), by group id. None: the groups are unknown."""
    if committed is None:
        return None
    on_topics: dict[str, dict[str, dict[int, int]]] = {}
    for group in sorted(committed):
        for (topic, partition), offset in committed[group].items():
            on_topics.setdefault(topic, {}).setdefault(group, {})[partition] = offset
    readers: dict[str, list[dict[str, Any]]] = {}
    for topic, groups in on_topics.items():
        for group, on_topic in groups.items():
            lags = [max(0, latest[(topic, p)][0] - o) for p, o in on_topic.items()
                    if (topic, p) in latest]
            readers.setdefault(topic, []).append(
                {"group_id": group, "lag": sum(lags) if len(lags) == len(on_topic) else None})
    return readers


def last_writes(rows: Iterable[Mapping[str, Any]], clusters: Mapping[str, ClusterConf],
                credentials: Mapping[str, Credentials], kafka: KafkaConf
                ) -> Iterator[tuple[Any, ...]]:
    """(cluster, topic, last_write_at, error) for the topics `rows` name (cluster, topic,
    online: the partitions with a leader; sorted by cluster): the newest record's
    timestamp, null for a topic with no records; `error` says why it is unknown."""
    for name, group in itertools.groupby(rows, key=lambda r: r["cluster"]):
        topics = list(group)
        with ClusterAdmin(clusters[name], credentials.get(name), kafka) as admin:
            wanted = {(t["topic"], int(p)) for t in topics for p in (t["online"] or ())}
            offsets, failure = _offsets(admin, wanted, (OffsetSpec.MAX_TIMESTAMP,))
        for t in topics:
            parts = sorted(int(p) for p in (t["online"] or ()))
            offline = (t["partitions"] or 0) - len(parts)
            error = failure or (f"{offline} partition(s) without a leader" if offline > 0
                                else None)
            yield (name, t["topic"], None if failure else _last_write(offsets, t["topic"],
                                                                      parts), error)
