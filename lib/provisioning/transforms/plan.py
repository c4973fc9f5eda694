"""Desired joined with live: one PLAN row per (cluster, topic) with an explicit action.

CREATE   the manifest wants the topic and the cluster lacks it
DELETE   the manifest says `absent` and the cluster has it
ALTER    both have it and it differs in something changed in place: a listed config
         (SET), an unlisted override with `alters.remove_unlisted_configs` (DELETE),
         more partitions (CreatePartitions); `config_ops` holds the config operations
DRIFT    both have it and it differs only in what is not changed in place (fewer
         partitions, replication factor, the existing partitions' assignment, an
         unlisted override left alone)
NOOP     both agree (present and matching, or absent on both sides), or the job may
         not see the topic (`live_error`, e.g. TOPIC_AUTHORIZATION_FAILED): it may or
         may not exist, so the job neither creates nor deletes it nor calls it absent

The kinds that extend the topics' rows may take over a row's action (a replication factor
changed in place, by another kind's layer: `run.kind.PlanLayer`).

Drift (`provisioning.transforms.drift`) is reported as data; an ALTER changes only
what Kafka changes in place. A partition decrease or a replication factor change would
need the topic recreated, which a provisioning job must never do behind an operator's
back.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.names import ABSENT, ALTER, CREATE, DELETE, DRIFT, NOOP
from provisioning.transforms.drift import (
    alterable,
    config_ops,
    desired_partitions,
    drift_items,
)
from provisioning.transforms.shape import to_schema
from schemas import PLAN

_LIVE_COLUMNS = {
    "topic_id": "live_topic_id",
    "internal": "live_internal",
    "partitions": "live_partitions",
    "replication_factor": "live_replication_factor",
    "replica_assignment": "live_replica_assignment",
    "configs": "live_configs",
    "consumer_groups": "live_consumer_groups",
    "error_name": "live_error",
}


def build_plan(desired: DataFrame, live: DataFrame, remove_unlisted: bool = False
               ) -> DataFrame:
    """PLAN rows: every DESIRED row joined with its live topic, with action and drift.

    remove_unlisted: `alters.remove_unlisted_configs` (see transforms.drift).
    """
    live_side = live.select(
        "cluster", "topic",
        F.lit(True).alias("live_exists"),
        *[F.col(src).alias(dst) for src, dst in _LIVE_COLUMNS.items()],
    )
    joined = desired.join(live_side, on=["cluster", "topic"], how="left")

    unseen = F.col("live_error").isNotNull()
    exists = F.coalesce(F.col("live_exists"), F.lit(False)) & ~unseen
    wants_absent = F.coalesce(F.col("state") == ABSENT, F.lit(False))
    wants_present = ~wants_absent
    drift = F.when(wants_present & exists, drift_items(remove_unlisted)).otherwise(
        F.array().cast(PLAN["drift"].dataType))
    drifted = F.size("drift") > 0

    create = wants_present & ~exists & ~unseen
    delete = wants_absent & exists
    alter = wants_present & exists & alterable(F.col("drift"))
    differs = wants_present & exists & drifted
    matches = (wants_present & exists & ~drifted) | (wants_absent & ~exists & ~unseen)
    action = (F.when(create, CREATE).when(delete, DELETE).when(alter, ALTER)
              .when(differs, DRIFT).when(matches | unseen, NOOP))

    # The columns another kind's layer fills (run.kind.PlanLayer) stay null here.
    return to_schema(
        joined
        .withColumn("drift", drift)
        .withColumn("action", action)
        .withColumn("policy_violations", F.array().cast(PLAN["policy_violations"].dataType))
        .withColumn("config_ops", F.when(F.col("action") == ALTER, config_ops(F.col("drift")))
                    .otherwise(F.array().cast(PLAN["config_ops"].dataType))),
        PLAN)


def prune_candidates(live: DataFrame, desired: DataFrame, created_by_job: DataFrame
                     ) -> DataFrame:
    """PLAN DELETE rows for live topics no manifest mentions that this job created.

    `created_by_job` holds (cluster, topic, topic_id) of topics the audit shows
    this job created; matching the topic id means a topic recreated by someone
    else under the same name is never pruned.
    """
    mentioned = desired.select("cluster", "topic").where(
        F.col("cluster").isNotNull() & F.col("topic").isNotNull())
    orphans = (
        live.join(mentioned, on=["cluster", "topic"], how="left_anti")
        .join(created_by_job.select("cluster", "topic", F.col("topic_id")),
              on=["cluster", "topic", "topic_id"], how="left_semi")
    )
    return to_schema(orphans.select(
        "cluster", "topic",
        F.lit(DELETE).alias("action"),
        F.lit(ABSENT).alias("state"),
        F.lit("prune").alias("source_table"),
        F.array().cast("array<string>").alias("row_errors"),
        *[F.col(src).alias(dst) for src, dst in _LIVE_COLUMNS.items()],
        F.array().cast(PLAN["drift"].dataType).alias("drift"),
        F.array().cast(PLAN["policy_violations"].dataType).alias("policy_violations"),
        F.array().cast(PLAN["config_ops"].dataType).alias("config_ops"),
    ), PLAN)



def change_columns() -> list[Column]:
    """What an ALTER row asks Kafka for, beside its config operations (null on other rows):
    partitions_to, the new partition count when it adds partitions; new_assignment, the
    replicas of each new partition (from the row's assignment) or null for the broker's
    choice; before_partitions, the live count."""
    alter = F.col("action") == ALTER
    adds = alter & F.exists("drift", lambda d: (d["field"] == "partitions") & d["supported"])
    new_ones = F.map_filter("replica_assignment", lambda k, _: k >= F.col("live_partitions"))
    return [
        F.when(adds, desired_partitions()).alias("partitions_to"),
        F.when(adds & F.col("replica_assignment").isNotNull(), F.transform(
            F.array_sort(F.map_entries(new_ones)), lambda e: e["value"])).alias("new_assignment"),
        F.when(alter, F.col("live_partitions")).alias("before_partitions"),
    ]
