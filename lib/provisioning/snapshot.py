"""The live state of each cluster: a driver-side preflight and a per-cluster topic snapshot."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.errors import ClusterUnreachable
from provisioning.kafka_admin import ClusterAdmin, ClusterState, LiveTopic
from schemas import CLUSTER_STATE, SNAPSHOT, column_names

# Describe-by-name answers that mean "no such topic": it is absent, not hidden.
_ABSENT = frozenset({"UNKNOWN_TOPIC_OR_PARTITION", "INVALID_TOPIC_EXCEPTION"})
# Topic names per Metadata request when describing wanted topics by name.
_DESCRIBE_CHUNK = 1000


def preflight(
    clusters: Sequence[ClusterConf],
    credentials: Mapping[str, Credentials],
    kafka: KafkaConf,
) -> dict[str, ClusterState]:
    """Reach every cluster and check its identity before anything reads or changes it.

    Raises ClusterUnreachable naming every cluster that failed, so an operator
    sees all of them at once and nothing is changed anywhere.
    """
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


def cluster_states_frame(spark: SparkSession, states: Mapping[str, ClusterState]) -> DataFrame:
    """The preflight result as a small DataFrame (CLUSTER_STATE)."""
    rows = [(name, s.cluster_id, s.controller_id, list(s.broker_ids), s.default_partitions,
             s.default_replication_factor, None)
            for name, s in sorted(states.items())]
    return spark.createDataFrame(rows, CLUSTER_STATE)


def snapshot_topics(
    spark: SparkSession,
    clusters: Sequence[ClusterConf],
    credentials: Mapping[str, Credentials],
    kafka: KafkaConf,
    run_id: str,
    cluster_ids: Mapping[str, str | None],
    wanted: DataFrame | None = None,
) -> DataFrame:
    """Every live topic of every cluster (SNAPSHOT), one Spark task per cluster.

    wanted: (cluster, topic) rows, the manifests' topics. A listing shows a
      principal only the topics it may describe, so each wanted topic the listing
      lacks is described by name: absent ones leave no row, and one the principal
      may not see gets a row with `error_name` (TOPIC_AUTHORIZATION_FAILED) rather
      than passing for absent.
    """
    if not clusters:
        return spark.createDataFrame([], SNAPSHOT)
    names = [c.name for c in clusters]
    # One marker row per cluster, so a cluster no wanted row names is still listed.
    work = spark.createDataFrame([(n, None) for n in names], "cluster string, topic string")
    if wanted is not None:
        work = work.unionByName(
            wanted.where(F.col("cluster").isin(*names) & F.col("topic").isNotNull())
            .select("cluster", "topic").distinct())
    task = functools.partial(
        _snapshot_partition,
        clusters={c.name: c for c in clusters},
        credentials=dict(credentials),
        kafka=kafka,
        run_id=run_id,
        cluster_ids=dict(cluster_ids),
        taken_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
    )
    rdd = (work.repartition(len(names), "cluster")
           .sortWithinPartitions("cluster", F.col("topic").asc_nulls_first())
           .rdd.mapPartitions(task))
    # Rows built from SNAPSHOT's own column list (see admin_io._run_on_executors).
    return spark.createDataFrame(rdd, SNAPSHOT, verifySchema=False)


def _snapshot_partition(
    rows: Iterator[Row],
    clusters: Mapping[str, ClusterConf],
    credentials: Mapping[str, Credentials],
    kafka: KafkaConf,
    run_id: str,
    cluster_ids: Mapping[str, str | None],
    taken_at: dt.datetime,
) -> Iterator[tuple[Any, ...]]:
    for name, group in itertools.groupby(rows, key=lambda r: r["cluster"]):
        wanted = (r["topic"] for r in group if r["topic"] is not None)
        with ClusterAdmin(clusters[name], credentials.get(name), kafka) as admin:
            yield from snapshot_rows(admin, run_id, cluster_ids.get(name), taken_at, wanted)


def snapshot_rows(admin: ClusterAdmin, run_id: str, cluster_id: str | None,
                  taken_at: dt.datetime, wanted: Iterable[str] = ()
                  ) -> Iterator[tuple[Any, ...]]:
    """SNAPSHOT rows for every topic the admin client can list, then for each `wanted`
    topic the listing lacked that is not absent (hidden from this principal, or new)."""
    topics = admin.describe_topics()
    listed = {t.name for t in topics}
    in_use = admin.topics_in_use()
    row = functools.partial(_row, admin, run_id, cluster_id, taken_at, in_use)
    yield from _rows_of(admin, sorted(topics, key=lambda t: t.name), row)
    unlisted = (name for name in wanted if name not in listed)
    while chunk := list(itertools.islice(unlisted, _DESCRIBE_CHUNK)):
        found = [t for t in admin.describe_topics(chunk) if t.error_name not in _ABSENT]
        yield from _rows_of(admin, found, row)


def _rows_of(admin: ClusterAdmin, topics: Sequence[LiveTopic], row: Any
             ) -> Iterator[tuple[Any, ...]]:
    configs = admin.topic_configs([t.name for t in topics if t.error_name is None])
    for t in topics:
        yield row(t, configs.get(t.name))


def _row(admin: ClusterAdmin, run_id: str, cluster_id: str | None, taken_at: dt.datetime,
         in_use: Mapping[str, list[str]] | None, t: LiveTopic,
         configs: list[dict[str, Any]] | None) -> tuple[Any, ...]:
    # Unknown stays null: configs the broker would not show, groups this principal
    # cannot all see, and everything about a topic it may not describe.
    visible = t.error_name is None
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
    }
    return tuple(values[c] for c in column_names(SNAPSHOT))
