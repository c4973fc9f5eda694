"""The topics' admin I/O as Spark tasks (`run.executors`): CreateTopics, DeleteTopics, the
alters and their read-back, and the one reader of each cluster's live topics.

Every read of live topics goes through `read_live` (`kafka.snapshot.snapshot_results`, one
task per cluster): the snapshot of a run, the re-read under an apply's lock, `import`.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka import snapshot, usage
from provisioning.kinds.topics.tasks.alter import alter_results
from provisioning.kinds.topics.tasks.create import create_results
from provisioning.kinds.topics.tasks.delete import delete_results
from provisioning.kinds.topics.tasks.verify import verify_results
from provisioning.run.executors import materialized, on_executors, task_attempt
from schemas import LAST_WRITE, LIVE_READ, TOPIC_RESULT, USAGE_READ

# The columns of a topic's shape, as a work row of a re-read carries them.
_SHAPE = ("topic_id", "partitions", "replication_factor", "replica_assignment", "error_name")
_WORK = ("cluster string, topic string, ask string, topic_id string, partitions int, "
         "replication_factor int, replica_assignment map<int,array<int>>, error_name string")


def send_creates(requests: DataFrame, clusters: Sequence[ClusterConf],
                 credentials: Mapping[str, Credentials], kafka: KafkaConf,
                 validate_only: bool) -> DataFrame:
    """CreateTopics for every request row (validateOnly or for real), batched per cluster.

    `requests` has cluster, topic, partitions, replication_factor, replica_assignment,
    configs and known_partitions (the count validateOnly returned).
    """
    def work(rows: Iterable[Mapping[str, Any]], named: Mapping[str, ClusterConf],
             creds: Mapping[str, Credentials]) -> Iterator[tuple[Any, ...]]:
        return create_results(rows, named, creds, kafka, validate_only,
                              attempt=task_attempt())

    return on_executors(requests, work, clusters, credentials, TOPIC_RESULT)


def send_deletes(requests: DataFrame, clusters: Sequence[ClusterConf],
                 credentials: Mapping[str, Credentials], kafka: KafkaConf) -> DataFrame:
    """DeleteTopics (by topic id when known) for every row of (cluster, topic, topic_id)."""
    def work(rows: Iterable[Mapping[str, Any]], named: Mapping[str, ClusterConf],
             creds: Mapping[str, Credentials]) -> Iterator[tuple[Any, ...]]:
        return delete_results(rows, named, creds, kafka, attempt=task_attempt())

    return on_executors(requests, work, clusters, credentials, TOPIC_RESULT)


def send_alters(requests: DataFrame, clusters: Sequence[ClusterConf],
                credentials: Mapping[str, Credentials], kafka: KafkaConf,
                validate_only: bool) -> DataFrame:
    """IncrementalAlterConfigs and CreatePartitions (validateOnly or for real) for every
    request row (cluster, topic, config_ops, partitions_to, new_assignment)."""
    def work(rows: Iterable[Mapping[str, Any]], named: Mapping[str, ClusterConf],
             creds: Mapping[str, Credentials]) -> Iterator[tuple[Any, ...]]:
        return alter_results(rows, named, creds, kafka, validate_only,
                             attempt=task_attempt())

    return on_executors(requests, work, clusters, credentials, TOPIC_RESULT)


def verify(requests: DataFrame, clusters: Sequence[ClusterConf],
           credentials: Mapping[str, Credentials], kafka: KafkaConf) -> DataFrame:
    """Wait until created topics have a leader on every partition, deleted ones are gone and
    altered ones show the change.

    `requests` has cluster, topic, action, config_ops, partitions_to and before_partitions.
    """
    return on_executors(requests, functools.partial(verify_results, kafka=kafka), clusters,
                        credentials, TOPIC_RESULT)


def read_live(spark: SparkSession, clusters: Sequence[ClusterConf],
              credentials: Mapping[str, Credentials], kafka: KafkaConf, run_id: str,
              cluster_ids: Mapping[str, str | None], wanted: DataFrame | None = None,
              seen: DataFrame | None = None, changing: DataFrame | None = None
              ) -> DataFrame:
    """LIVE_READ rows of every cluster, one Spark task per cluster.

    wanted: (cluster, topic) rows, the manifests' topics. A listing shows a principal only
      the topics it may describe, so each wanted topic the listing lacks is described by
      name: absent ones leave no row, and one the principal may not see gets a row with
      `error_name` (TOPIC_AUTHORIZATION_FAILED) rather than passing for absent.
    seen, changing: a re-read (an apply under its lock): `seen`, the first read's SNAPSHOT
      rows; `changing`, (cluster, topic) rows to read again whatever the listing shows.
      Only the topics read again come back (`kafka.snapshot.reread_rows`); a topic read
      again and gone is one row with `found` false.
    """
    if not clusters:
        return spark.createDataFrame([], LIVE_READ)
    names = [c.name for c in clusters]

    def asked(rows: DataFrame, ask: str, shape: bool = False) -> DataFrame:
        return (rows.where(F.col("cluster").isin(*names) & F.col("topic").isNotNull())
                .select("cluster", "topic", F.lit(ask).alias("ask"),
                        *[F.col(c) if shape else F.lit(None).alias(c) for c in _SHAPE]))

    # One listing row per cluster, so a cluster no other row names is still read.
    work = spark.createDataFrame([(n, None, snapshot.LISTING, *[None] * len(_SHAPE))
                                  for n in names], _WORK)
    if wanted is not None:
        work = work.unionByName(asked(wanted.select("cluster", "topic").distinct(),
                                      snapshot.WANTED).select(*work.columns))
    if seen is not None:
        work = work.unionByName(asked(seen, snapshot.SEEN, shape=True).select(*work.columns))
    if changing is not None:
        work = work.unionByName(asked(changing.select("cluster", "topic").distinct(),
                                      snapshot.CHANGING).select(*work.columns))
    read = functools.partial(
        snapshot.snapshot_results,
        kafka=kafka,
        run_id=run_id,
        cluster_ids=dict(cluster_ids),
        taken_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
    )
    return on_executors(work, read, clusters, credentials, LIVE_READ,
                        order=("cluster", F.col("topic").asc_nulls_first()))


_USAGE_WORK = ("cluster string, topic string, partitions int, replication_factor int, "
               "online array<int>, retention_ms long, retention_bytes long")


def read_usage(spark: SparkSession, clusters: Sequence[ClusterConf],
               credentials: Mapping[str, Credentials], kafka: KafkaConf, run_id: str,
               brokers: Mapping[str, Sequence[int]], topics: DataFrame) -> DataFrame:
    """USAGE_READ rows of every cluster (`kafka.usage.usage_results`), one Spark task per
    cluster: the usage of each `topics` row (cluster, topic, partitions,
    replication_factor, online, retention_ms, retention_bytes) and each broker's log
    dirs."""
    if not clusters:
        return spark.createDataFrame([], USAGE_READ)
    # One row per cluster with no topic, so a cluster with no topic still has its disks.
    work = spark.createDataFrame([(c.name, *[None] * 6) for c in clusters], _USAGE_WORK)
    work = work.unionByName(topics.select(*work.columns))
    read = functools.partial(
        usage.usage_results, kafka=kafka, run_id=run_id,
        brokers={k: tuple(v) for k, v in brokers.items()},
        checked_at=dt.datetime.now(dt.UTC).replace(tzinfo=None))
    return on_executors(work, read, clusters, credentials, USAGE_READ,
                        order=("cluster", F.col("topic").asc_nulls_first()))


def read_last_writes(clusters: Sequence[ClusterConf], credentials: Mapping[str, Credentials],
                     kafka: KafkaConf, topics: DataFrame) -> DataFrame:
    """(cluster, topic, last_write_at, error) of each `topics` row (cluster, topic,
    partitions, online), one Spark task per cluster (`kafka.usage.last_writes`)."""
    work = functools.partial(usage.last_writes, kafka=kafka)
    return materialized(on_executors(topics.select("cluster", "topic", "partitions", "online"),
                                     work, clusters, credentials, LAST_WRITE))
