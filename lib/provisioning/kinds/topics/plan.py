"""The topics' rows as pure transforms: their plan, the live topics adopted as manifest
rows, and the admin results judged against the plan.

The plan: desired joined with live, one PLAN row per (cluster, topic) with an explicit
action (`build_plan`).

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

Adopting existing clusters (`import`): the live topics as manifest rows
(`manifest_rows`), and the live topics no manifest mentions (`unmanaged`). An imported row
asks for exactly what the topic is: its partitions, its replication factor and its own
overrides (config source DYNAMIC_TOPIC_CONFIG; never a broker default, never a sensitive
value the broker hides, never the throttled-replicas lists:
`transforms.drift.own_override`), so a plan over a freshly imported manifest is all NOOP.

Admin results judged against the plan: a topic the broker says already exists
(`settle_existing`); the topics a phase never reached (`without_answer`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.names import ABSENT, ALTER, CREATE, DELETE, DRIFT, NOOP, PRESENT
from provisioning.transforms.drift import (
    alterable,
    config_ops,
    desired_partitions,
    drift_items,
    drift_text,
    own_override,
)
from provisioning.transforms.scope import matching_globs
from provisioning.transforms.shape import to_schema
from schemas import MANIFEST, PLAN, TOPIC_RESULT, column_names

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


def own_overrides(configs: Column) -> Column:
    """The topic's own overrides a manifest may manage (`own_override`) as map<name, value>,
    without the ones the broker hides (sensitive: their value is not readable, so they
    cannot be written back)."""
    shown = F.filter(configs, lambda c: own_override(c)
                     & c["value"].isNotNull() & ~F.coalesce(c["sensitive"], F.lit(False)))
    return F.map_from_entries(F.transform(
        shown, lambda c: F.struct(c["name"].alias("key"), c["value"].alias("value"))))


def importable(protected: Sequence[str], include_protected: bool) -> Column:
    """SNAPSHOT rows an import writes: described topics that are not internal and, unless
    `include_protected`, match none of the `protected` globs."""
    keep = F.col("error_name").isNull()
    if not include_protected:
        keep = (keep & ~F.coalesce(F.col("internal"), F.lit(False))
                & (F.size(matching_globs(F.col("topic"), tuple(protected))) == 0))
    return keep


def manifest_rows(live: DataFrame, owner: str | None, with_assignment: bool) -> DataFrame:
    """MANIFEST rows that ask for each SNAPSHOT row's topic as it is."""
    return live.select(
        "cluster", "topic",
        F.lit(PRESENT).alias("state"),
        "partitions",
        "replication_factor",
        (F.col("replica_assignment") if with_assignment
         else F.lit(None).cast(MANIFEST["replica_assignment"].dataType)
         ).alias("replica_assignment"),
        F.coalesce(own_overrides(F.col("configs")),
                   F.create_map().cast(MANIFEST["configs"].dataType)).alias("configs"),
        F.lit(owner).cast("string").alias("owner"),
        F.lit(None).cast("boolean").alias("force"),
    ).select(*column_names(MANIFEST))


def unmanaged(live: DataFrame, desired: DataFrame) -> DataFrame:
    """The SNAPSHOT rows of topics that are not internal and that no DESIRED row names."""
    mentioned = desired.select("cluster", "topic").where(
        F.col("cluster").isNotNull() & F.col("topic").isNotNull())
    return (live.where(~F.coalesce(F.col("internal"), F.lit(False)))
            .join(mentioned, on=["cluster", "topic"], how="left_anti"))


_DESIRED = ("partitions", "replication_factor", "replica_assignment", "configs")


def settle_existing(results: DataFrame, plan: DataFrame) -> DataFrame:
    """TOPIC_RESULT rows where each topic a real CreateTopics found existing (created behind
    the job's back since the snapshot) is judged by the plan's own drift definition:
    outcome `drift`, with the differences in its message, when the live topic differs
    from its PLAN row; as it came (`already_present`) otherwise.

    Only topics the task could describe are judged (their `result_partitions` is set).
    """
    desired = plan.select("cluster", "topic", *[F.col(c).alias(f"_desired_{c}")
                                                for c in _DESIRED])
    joined = results.join(desired, on=["cluster", "topic"], how="left")
    compared = joined.select(
        "*",
        *[F.col(f"_desired_{c}").alias(c) for c in _DESIRED],
        F.col("result_partitions").alias("live_partitions"),
        F.col("result_replication_factor").alias("live_replication_factor"),
        F.col("result_assignment").alias("live_replica_assignment"),
        F.col("result_configs").alias("live_configs"),
    ).withColumn("_drift", drift_items())
    existing = ((F.col("phase") == names.APPLY)
                & (F.col("error_name") == names.TOPIC_ALREADY_EXISTS)
                & F.col("result_partitions").isNotNull())
    differs = existing & (F.size("_drift") > 0)
    replaced = {
        "outcome": F.when(differs, F.lit(names.DRIFTED)).otherwise(F.col("outcome")),
        "error_message": F.when(differs, F.concat(F.lit("the topic exists and differs: "),
                                                  drift_text(F.col("_drift"))))
        .otherwise(F.col("error_message")),
    }
    return compared.select(*[replaced.get(c, F.col(c)).alias(c)
                             for c in column_names(TOPIC_RESULT)])


def without_answer(targets: DataFrame, phase: str, outcome: str, error_name: str,
                   message: str, attempts: int = 0) -> DataFrame:
    """TOPIC_RESULT rows of `phase` for `targets` (cluster, topic) that no broker answer
    settled: `outcome` with `error_name` and `message` (the topics a phase never sent
    because the run stopped first, `failed` with attempts 0; those whose answers a failed
    Spark job lost, `unknown`)."""
    given = {
        "phase": F.lit(phase),
        "outcome": F.lit(outcome),
        "error_name": F.lit(error_name),
        "error_message": F.lit(message),
        "attempts": F.lit(attempts),
    }
    return targets.select(*[
        F.col(c).alias(c) if c in ("cluster", "topic")
        else given.get(c, F.lit(None)).cast(TOPIC_RESULT[c].dataType).alias(c)
        for c in column_names(TOPIC_RESULT)])
