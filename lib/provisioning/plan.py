"""Desired joined with live: one PLAN row per (cluster, topic) with an explicit action.

CREATE   the manifest wants the topic and the cluster lacks it
DELETE   the manifest says `absent` and the cluster has it
DRIFT    both have it and partitions, replication factor, assignment or configs differ
NOOP     both agree (present and matching, or absent on both sides), or the job may
         not see the topic (`live_error`, e.g. TOPIC_AUTHORIZATION_FAILED): it may or
         may not exist, so the job neither creates nor deletes it nor calls it absent

Drift is reported as data and never fixed here: a partition decrease or a
replication factor change would need the topic recreated, which a
provisioning job must never do behind an operator's back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType

from schemas import CONFIG_ENTRY, PLAN, column_names

# Topic configs that somebody set on the topic itself, as opposed to inherited defaults.
TOPIC_OVERRIDE = "DYNAMIC_TOPIC_CONFIG"

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


def glob_regex(pattern: str) -> str:
    """A shell glob (`*`, `?`) as an anchored Java regex."""
    out = []
    for ch in pattern:
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        else:
            out.append(re.escape(ch))
    return "^" + "".join(out) + "$"


def in_scope(clusters: Sequence[str], topics_glob: str | None,
             known_clusters: Sequence[str]) -> Callable[[DataFrame], DataFrame]:
    """Keep the rows of the selected clusters whose topic matches the glob.

    Rows without a cluster or topic, or naming a cluster the conf lacks, stay:
    they are invalid and every run reports them, whatever was selected.
    """

    def transform(df: DataFrame) -> DataFrame:
        unnamed = (F.col("cluster").isNull() | F.col("topic").isNull()
                   | ~F.col("cluster").isin(*known_clusters))
        selected = F.col("cluster").isin(*clusters)
        if topics_glob:
            selected = selected & F.col("topic").rlike(glob_regex(topics_glob))
        return df.where(unnamed | selected)

    return transform


def _override_map(configs: Column) -> Column:
    overrides = F.filter(configs, lambda c: c["source"] == F.lit(TOPIC_OVERRIDE))
    return F.map_from_entries(F.transform(
        overrides, lambda c: F.struct(c["name"].alias("key"), c["value"].alias("value"))))


def _drift_item(field: str | Column, desired: Column, actual: Column,
                supported: Column | bool) -> Column:
    return F.struct(
        (F.lit(field) if isinstance(field, str) else field).alias("field"),
        desired.cast("string").alias("desired"),
        actual.cast("string").alias("actual"),
        (F.lit(supported) if isinstance(supported, bool) else supported).alias("supported"),
    )


def _assignment_text(assignment: Column) -> Column:
    return F.to_json(F.array_sort(F.map_entries(assignment)))


def drift_items() -> Column:
    """The differences between the desired and the live topic, as DRIFT_ITEM structs."""
    partitions = F.col("partitions")
    live_partitions = F.col("live_partitions")
    rf = F.col("replication_factor")
    live_rf = F.col("live_replication_factor")
    assignment = F.col("replica_assignment")
    live_assignment = F.col("live_replica_assignment")

    partitions_differ = partitions.isNotNull() & (partitions != live_partitions)
    rf_differs = rf.isNotNull() & (rf != live_rf)
    assignment_differs = assignment.isNotNull() & (
        _assignment_text(assignment) != _assignment_text(live_assignment))

    desired_configs = F.coalesce(F.col("configs"), F.create_map().cast("map<string,string>"))
    live_configs = _override_map(F.coalesce(
        F.col("live_configs"), F.array().cast(ArrayType(CONFIG_ENTRY))))
    names = F.array_sort(F.array_union(F.map_keys(desired_configs), F.map_keys(live_configs)))
    config_items = F.transform(names, lambda name: _drift_item(
        F.concat(F.lit("config:"), name),
        desired_configs[name],
        live_configs[name],
        True,
    ))
    config_drift = F.filter(config_items, lambda d: ~d["desired"].eqNullSafe(d["actual"]))

    fixed = F.array(
        F.when(partitions_differ, _drift_item(
            "partitions", partitions, live_partitions,
            # Kafka can add partitions but never remove them.
            partitions > live_partitions)),
        F.when(rf_differs, _drift_item("replication_factor", rf, live_rf, False)),
        F.when(assignment_differs, _drift_item(
            "replica_assignment", _assignment_text(assignment),
            _assignment_text(live_assignment), False)),
    )
    return F.concat(F.filter(fixed, lambda d: d.isNotNull()), config_drift)


def build_plan(desired: DataFrame, live: DataFrame) -> DataFrame:
    """PLAN rows: every DESIRED row joined with its live topic, with action and drift."""
    live_side = live.select(
        "cluster", "topic",
        F.lit(True).alias("live_exists"),
        *[F.col(src).alias(dst) for src, dst in _LIVE_COLUMNS.items()],
    )
    joined = desired.join(live_side, on=["cluster", "topic"], how="left")

    unseen = F.col("live_error").isNotNull()
    exists = F.coalesce(F.col("live_exists"), F.lit(False)) & ~unseen
    wants_absent = F.coalesce(F.col("state") == "absent", F.lit(False))
    wants_present = ~wants_absent
    drift = F.when(wants_present & exists, drift_items()).otherwise(
        F.array().cast(PLAN["drift"].dataType))
    drifted = F.size("drift") > 0

    create = wants_present & ~exists & ~unseen
    delete = wants_absent & exists
    differs = wants_present & exists & drifted
    matches = (wants_present & exists & ~drifted) | (wants_absent & ~exists & ~unseen)
    action = (F.when(create, "CREATE").when(delete, "DELETE")
              .when(differs, "DRIFT").when(matches | unseen, "NOOP"))

    return (
        joined
        .withColumn("drift", drift)
        .withColumn("action", action)
        .withColumn("policy_violations", F.array().cast(PLAN["policy_violations"].dataType))
        .select(*column_names(PLAN))
    )


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
    return orphans.select(
        "cluster", "topic",
        F.lit("DELETE").alias("action"),
        F.lit("absent").alias("state"),
        *[F.lit(None).cast(PLAN[c].dataType).alias(c) for c in
          ("partitions", "replication_factor", "replica_assignment", "configs", "owner",
           "force")],
        F.lit("prune").alias("source_table"),
        F.lit(None).cast("long").alias("source_version"),
        F.array().cast("array<string>").alias("row_errors"),
        *[F.col(src).alias(dst) for src, dst in _LIVE_COLUMNS.items()],
        F.array().cast(PLAN["drift"].dataType).alias("drift"),
        F.array().cast(PLAN["policy_violations"].dataType).alias("policy_violations"),
    ).select(*column_names(PLAN))

