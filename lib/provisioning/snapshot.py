"""The live state of each cluster: a driver-side preflight and a per-cluster topic snapshot."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.errors import ClusterUnreachable
from provisioning.kafka_admin import ClusterAdmin, ClusterState
from schemas import CLUSTER_STATE, SNAPSHOT, column_names


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
) -> DataFrame:
    """Every live topic of every cluster (SNAPSHOT), one Spark task per cluster."""
    if not clusters:
        return spark.createDataFrame([], SNAPSHOT)
    task = functools.partial(
        _snapshot_partition,
        clusters={c.name: c for c in clusters},
        credentials=dict(credentials),
        kafka=kafka,
        run_id=run_id,
        cluster_ids=dict(cluster_ids),
        taken_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
    )
    names = [c.name for c in clusters]
    rdd = spark.sparkContext.parallelize(names, numSlices=len(names)).mapPartitions(task)
    return spark.createDataFrame(rdd, SNAPSHOT)


def _snapshot_partition(
    names: Iterator[str],
    clusters: Mapping[str, ClusterConf],
    credentials: Mapping[str, Credentials],
    kafka: KafkaConf,
    run_id: str,
    cluster_ids: Mapping[str, str | None],
    taken_at: dt.datetime,
) -> Iterator[tuple[Any, ...]]:
    for name in names:
        with ClusterAdmin(clusters[name], credentials.get(name), kafka) as admin:
            yield from snapshot_rows(admin, run_id, cluster_ids.get(name), taken_at)


def snapshot_rows(admin: ClusterAdmin, run_id: str, cluster_id: str | None,
                  taken_at: dt.datetime) -> Iterator[tuple[Any, ...]]:
    """SNAPSHOT rows for every topic the admin client can see."""
    topics = admin.describe_topics()
    described = [t.name for t in topics if t.error_name is None]
    configs = admin.topic_configs(described)
    in_use = admin.topics_in_use()
    cols = column_names(SNAPSHOT)
    for t in sorted(topics, key=lambda t: t.name):
        row = {
            "run_id": run_id,
            "cluster": admin.cluster.name,
            "cluster_id": cluster_id,
            "topic": t.name,
            "topic_id": t.topic_id,
            "internal": t.internal,
            "partitions": t.partitions,
            "replication_factor": t.replication_factor,
            "replica_assignment": t.replica_assignment,
            "configs": configs.get(t.name),
            "consumer_groups": in_use.get(t.name, []),
            "error_name": t.error_name,
            "snapshot_at": taken_at,
        }
        yield tuple(row[c] for c in cols)
