"""The subcommands' work, between the CLI (parsing, exit codes) and the transforms and adapters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning.conf import ClusterConf, Conf, Credentials
from provisioning.delta_io import TableRef, append
from provisioning.runs import RunRecord
from provisioning.snapshot import preflight, snapshot_topics
from provisioning.spark import job_description


@dataclass(frozen=True)
class ClusterSummary:
    cluster: str
    cluster_id: str | None
    brokers: int
    topics: int
    internal_topics: int
    partitions: int
    topics_in_use: int
    undescribable_topics: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def take_snapshot(
    spark: SparkSession,
    conf: Conf,
    clusters: Sequence[ClusterConf],
    credentials: Mapping[str, Credentials],
    record: RunRecord,
) -> list[ClusterSummary]:
    """Record every selected cluster's live topics in the snapshots table; change nothing."""
    with job_description(spark, "snapshot: preflight"):
        states = preflight(clusters, credentials, conf.kafka)
    with job_description(spark, "snapshot: read live metadata"):
        live = snapshot_topics(
            spark, clusters, credentials, conf.kafka, record.run_id,
            {name: s.cluster_id for name, s in states.items()},
        ).localCheckpoint(eager=True)
    with job_description(spark, "snapshot: write snapshot table"):
        append(live, TableRef(conf.tables.snapshots))
    per_cluster = {r["cluster"]: r.asDict() for r in summarize_snapshot(live).collect()}
    summaries = []
    for cluster in clusters:
        row = per_cluster.get(cluster.name, {})
        summaries.append(ClusterSummary(
            cluster=cluster.name,
            cluster_id=states[cluster.name].cluster_id,
            brokers=len(states[cluster.name].broker_ids),
            topics=int(row.get("topics") or 0),
            internal_topics=int(row.get("internal_topics") or 0),
            partitions=int(row.get("partitions") or 0),
            topics_in_use=int(row.get("topics_in_use") or 0),
            undescribable_topics=int(row.get("undescribable_topics") or 0),
        ))
    record.clusters = [
        {"cluster": s.cluster, "cluster_id": s.cluster_id, "brokers": s.brokers,
         "topics": s.topics, "error": None}
        for s in summaries
    ]
    record.outcome_counts = {"topics": sum(s.topics for s in summaries)}
    return summaries


def summarize_snapshot(live: DataFrame) -> DataFrame:
    """Per cluster: topic, internal topic, partition and in-use counts."""
    return live.groupBy("cluster").agg(
        F.count("topic").alias("topics"),
        F.sum(F.when(F.col("internal"), 1).otherwise(0)).alias("internal_topics"),
        F.sum(F.coalesce(F.col("partitions"), F.lit(0))).alias("partitions"),
        F.sum(F.when(F.size("consumer_groups") > 0, 1).otherwise(0)).alias("topics_in_use"),
        F.sum(F.when(F.col("error_name").isNotNull(), 1).otherwise(0))
        .alias("undescribable_topics"),
    )
