"""The live state of each cluster: a driver-side preflight, and the one reader of each
cluster's live topics (`snapshot_results`: the snapshot, the re-read under an apply's lock
and `import` all read through it, as Spark tasks like the other admin work)."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import logging
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kafka.errors as Errors

from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.errors import ClusterUnreachable
from provisioning.kafka.client import ClusterAdmin, ClusterState, LiveTopic, PartitionState
from provisioning.kafka.codes import NON_DEFAULT_SOURCES
from provisioning.kafka.compat import check_installed
from schemas import SNAPSHOT, column_names

log = logging.getLogger(__name__)

# Describe-by-name answers that mean "no such topic": it is absent, not hidden.
_ABSENT = frozenset({"UNKNOWN_TOPIC_OR_PARTITION", "INVALID_TOPIC_EXCEPTION"})
# Topic names per Metadata request when describing topics by name.
_DESCRIBE_CHUNK = 1000


def preflight(
    clusters: Sequence[ClusterConf],
    credentials: Mapping[str, Credentials],
    kafka: KafkaConf,
) -> dict[str, ClusterState]:
    """Reach every cluster and check its identity before anything reads or changes it.

    Raises ClusterUnreachable naming every cluster that failed, so an operator
    sees all of them at once and nothing is changed anywhere; KafkaPythonIncompatible
    when the installed kafka-python lacks an internal the job uses.
    """
    check_installed()
    states: dict[str, ClusterState] = {}
    failures = []
    for cluster in clusters:
        try:
            with ClusterAdmin(cluster, credentials.get(cluster.name), kafka) as admin:
                state = admin.cluster_state()
        except ClusterUnreachable as exc:
            failures.append(str(exc))
            continue
        if cluster.cluster_id and state.cluster_id != cluster.cluster_id:
            failures.append(
                f"cluster {cluster.name}: expected cluster id {cluster.cluster_id} but "
                f"{cluster.bootstrap_servers} answers as {state.cluster_id}"
            )
            continue
        states[cluster.name] = state
    if failures:
        raise ClusterUnreachable("; ".join(failures))
    return states


# What a work row of `snapshot_results` asks for its cluster: the cluster's listing (one
# marker row per cluster, topic null), a topic wanted by name, a topic the first read saw
# (with its shape: read again only if the listing now shows it otherwise), a topic to read
# again whatever its shape.
LISTING, WANTED, SEEN, CHANGING = "listing", "wanted", "seen", "changing"


def snapshot_results(
    rows: Iterable[Mapping[str, Any]],
    clusters: Mapping[str, ClusterConf],
    credentials: Mapping[str, Credentials],
    kafka: KafkaConf,
    run_id: str,
    cluster_ids: Mapping[str, str | None],
    taken_at: dt.datetime,
) -> Iterator[tuple[Any, ...]]:
    """LIVE_READ rows (SNAPSHOT and `found`) of each cluster named by `rows` (cluster, topic,
    `ask`, and a SEEN row's shape columns: topic_id, partitions, replication_factor,
    replica_assignment, error_name; sorted by cluster, the LISTING row first).

    A cluster with no SEEN or CHANGING row is read whole: every listed topic, then the
    WANTED topics the listing lacked (`snapshot_rows`). A cluster with some is read again
    where it matters (`reread_rows`): the CHANGING topics and every topic the listing
    shows otherwise than SEEN; each name read again that is not there any more is one row
    with only its cluster and topic and `found` false.
    """
    for name, group in itertools.groupby(rows, key=lambda r: r["cluster"]):
        wanted: list[str] = []
        seen: dict[str, TopicShape] = {}
        changing: set[str] = set()
        for r in group:
            if r["ask"] == WANTED:
                wanted.append(r["topic"])
            elif r["ask"] == SEEN:
                seen[r["topic"]] = topic_shape(r["topic_id"], r["partitions"],
                                               r["replication_factor"],
                                               r["replica_assignment"], r["error_name"])
            elif r["ask"] == CHANGING:
                changing.add(r["topic"])
        with ClusterAdmin(clusters[name], credentials.get(name), kafka) as admin:
            if not seen and not changing:
                for row in snapshot_rows(admin, run_id, cluster_ids.get(name), taken_at,
                                         wanted):
                    yield (*row, True)
                continue
            found, again = reread_rows(admin, run_id, cluster_ids.get(name), taken_at, seen,
                                       changing)
        got = set()
        for row in found:
            got.add(row[_TOPIC])
            yield (*row, True)
        for topic in sorted(again - got):
            yield (*(name if c == "cluster" else topic if c == "topic" else None
                     for c in column_names(SNAPSHOT)), False)


_TOPIC = column_names(SNAPSHOT).index("topic")


def snapshot_rows(admin: ClusterAdmin, run_id: str, cluster_id: str | None,
                  taken_at: dt.datetime, wanted: Iterable[str] = ()
                  ) -> Iterator[tuple[Any, ...]]:
    """SNAPSHOT rows for every topic the admin client can list, then for each `wanted`
    topic the listing lacked that is not absent (hidden from this principal, or new)."""
    topics = sorted(admin.describe_topics(), key=lambda t: t.name)
    listed = {t.name for t in topics}
    # The consumer groups are asked while the topics' configs are described.
    with ThreadPoolExecutor(1, thread_name_prefix="groups") as pool:
        groups = pool.submit(_readers, admin)
        configs = _configs(admin, topics)
        in_use = groups.result()
    row = functools.partial(_row, admin, run_id, cluster_id, taken_at, in_use)
    for t in topics:
        yield row(t, configs.get(t.name))
    for found in described(admin, (name for name in wanted if name not in listed)):
        yield from _rows_of(admin, found, row)


def _readers(admin: ClusterAdmin) -> dict[str, list[str]] | None:
    """Topic -> the consumer groups reading it; None (unknown: a deletion's in-use check
    then refuses) when the groups cannot be read, with the broker's error logged."""
    try:
        return admin.topics_in_use()
    except Errors.KafkaError as exc:
        log.warning("cluster %s: the consumer groups could not be read (%s); which topics "
                    "are in use is unknown", admin.cluster.name, type(exc).__name__)
        return None


def described(admin: ClusterAdmin, names: Iterable[str]) -> Iterator[list[LiveTopic]]:
    """`names` described by name, a Metadata request per chunk: the topics that are not
    absent (hidden ones keep their error), one list per chunk."""
    it = iter(names)
    while chunk := list(itertools.islice(it, _DESCRIBE_CHUNK)):
        yield [t for t in admin.describe_topics(chunk) if t.error_name not in _ABSENT]


# What a topic listing tells of a topic, in a form two reads compare by (`topic_shape`).
TopicShape = tuple[Any, ...]


def topic_shape(topic_id: str | None, partitions: int | None,
                replication_factor: int | None,
                replica_assignment: Mapping[int, Sequence[int]] | None,
                error_name: str | None) -> TopicShape:
    """A topic as a listing shows it (id, partitions, replicas, error), comparable across
    two reads of the cluster."""
    assignment = (None if replica_assignment is None else
                  tuple(sorted((int(p), tuple(int(b) for b in r))
                               for p, r in replica_assignment.items())))
    return (topic_id, partitions, replication_factor, assignment, error_name)


def _shape(t: LiveTopic) -> TopicShape:
    return topic_shape(t.topic_id, t.partitions, t.replication_factor, t.replica_assignment,
                       t.error_name)


def reread_rows(admin: ClusterAdmin, run_id: str, cluster_id: str | None,
                taken_at: dt.datetime, seen: Mapping[str, TopicShape],
                changing: Collection[str]) -> tuple[list[tuple[Any, ...]], set[str]]:
    """The cluster read again where it matters (an apply, under its lock): the topic
    listing, then SNAPSHOT rows for the `changing` topics and for every topic the listing
    shows otherwise than `seen` (the first read's shapes): new, gone or hidden, another id,
    other partitions or replicas. Returns those rows and the names read again (a name read
    again with no row is absent now); every other topic is as `seen` holds it."""
    listing = {t.name: t for t in admin.describe_topics()}
    again = set(changing)
    again.update(n for n, t in listing.items() if seen.get(n) != _shape(t))
    again.update(n for n in seen if n not in listing)
    if not again:
        return [], again
    row = functools.partial(_row, admin, run_id, cluster_id, taken_at, _readers(admin))
    rows: list[tuple[Any, ...]] = []
    listed = sorted((listing[n] for n in again if n in listing), key=lambda t: t.name)
    if listed:
        rows.extend(_rows_of(admin, listed, row))
    for found in described(admin, sorted(n for n in again if n not in listing)):
        if found:
            rows.extend(_rows_of(admin, found, row))
    return rows, again


def _configs(admin: ClusterAdmin, topics: Sequence[LiveTopic]
             ) -> dict[str, list[dict[str, Any]]]:
    # One DescribeConfigs per chunk gives both: the configs somebody set and the inherited.
    return admin.topic_configs([t.name for t in topics if t.error_name is None],
                               only_non_default=False)


def _rows_of(admin: ClusterAdmin, topics: Sequence[LiveTopic], row: Any
             ) -> Iterator[tuple[Any, ...]]:
    configs = _configs(admin, topics)
    for t in topics:
        yield row(t, configs.get(t.name))


def _set_and_inherited(entries: list[dict[str, Any]] | None
                       ) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """A topic's config entries split into the ones somebody set (SNAPSHOT.configs, as
    `ClusterAdmin.topic_configs` keeps them by default) and the ones it inherits."""
    if entries is None:
        return None, None
    return ([e for e in entries if e["source"] in NON_DEFAULT_SOURCES],
            [e for e in entries if e["source"] not in NON_DEFAULT_SOURCES])


def _partition_row(p: PartitionState) -> dict[str, Any]:
    return {"partition": p.partition, "leader": p.leader, "replicas": list(p.replicas),
            "isr": list(p.isr)}


def _row(admin: ClusterAdmin, run_id: str, cluster_id: str | None, taken_at: dt.datetime,
         in_use: Mapping[str, list[str]] | None, t: LiveTopic,
         entries: list[dict[str, Any]] | None) -> tuple[Any, ...]:
    # Unknown stays null: configs the broker would not show, groups this principal
    # cannot all see, and everything about a topic it may not describe.
    visible = t.error_name is None
    configs, inherited = _set_and_inherited(entries)
    values = {
        "run_id": run_id,
        "cluster": admin.cluster.name,
        "cluster_id": cluster_id,
        "topic": t.name,
        "topic_id": t.topic_id,
        "internal": t.internal,
        "partitions": t.partitions,
        "replication_factor": t.replication_factor,
        "replica_assignment": t.replica_assignment,
        "configs": configs,
        "consumer_groups": in_use.get(t.name, []) if in_use is not None and visible else None,
        "error_name": t.error_name,
        "snapshot_at": taken_at,
        "partition_states": (None if t.partition_states is None
                             else [_partition_row(p) for p in t.partition_states]),
        "default_configs": inherited,
    }
    return tuple(values[c] for c in column_names(SNAPSHOT))
