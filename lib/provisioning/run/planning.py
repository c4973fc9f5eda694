"""The chain from manifest tables to a judged plan, as the run and the benchmarks use it."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning.conf import Conf
from provisioning.delta.manifests import manifest_commits, read_manifests
from provisioning.kafka.client import ClusterState
from provisioning.names import ALTER, CREATE, DELETE, DRIFT, PLANNED, REASSIGN
from provisioning.run.executors import cluster_states_frame
from provisioning.run.manifest_cache import manifest_rows
from provisioning.transforms.audit import plan_outcome_counts
from provisioning.transforms.plan import build_plan, prune_candidates
from provisioning.transforms.policies import (
    PolicyContext,
    with_alter_policies,
    with_create_policies,
    with_delete_policies,
)
from provisioning.transforms.reassign.plan import moves_planned, with_reassignments
from provisioning.transforms.reassign.policies import with_reassign_policies
from provisioning.transforms.scope import in_scope
from provisioning.transforms.validation import with_duplicate_errors, with_row_errors
from schemas import REASSIGNMENT_IN_FLIGHT, column_names


def read_desired(spark: SparkSession, conf: Conf, clusters: Sequence[str],
                 topics_glob: str | None) -> DataFrame:
    """The manifests' DESIRED rows, validated (row errors, duplicates), in the run's scope,
    pinned (a local checkpoint). On a shared Spark Connect session the validated rows come
    from the session's cache when an earlier run left them there (`run.manifest_cache`)."""
    known = tuple(conf.clusters)
    commits = manifest_commits(spark, conf.tables.manifests)

    def validated() -> DataFrame:
        return (read_manifests(spark, conf.tables.manifests, commits=commits)
                .transform(with_row_errors(known))
                .transform(with_duplicate_errors))

    def finish(rows: DataFrame) -> DataFrame:
        return rows.transform(in_scope(clusters, topics_glob, known)).localCheckpoint(
            eager=True)

    return manifest_rows(spark, "manifest", commits, known, validated, finish)


def policy_context(spark: SparkSession, conf: Conf, states: Mapping[str, ClusterState],
                   live: DataFrame) -> PolicyContext:
    """The cluster facts the policies judge with (KIP-170's cluster-aware policies)."""
    return PolicyContext(
        # A few rows from the driver: Spark keeps them in the plan, nothing to materialize.
        clusters=cluster_states_frame(spark, states),
        live=live,
        protected=conf.deletes.protected,
        deny_list=conf.deletes.deny_list,
        max_deletes_per_cluster=conf.deletes.max_per_cluster,
        max_alters_per_cluster=conf.alters.max_per_cluster,
        max_reassign_partitions_per_cluster=conf.reassign.max_partitions_per_cluster,
    )


def plan_rows(desired: DataFrame, live: DataFrame, created_by_job: DataFrame | None,
              remove_unlisted: bool = False) -> DataFrame:
    """PLAN rows of the desired and live topics; with `created_by_job`, the prune pass's
    DELETE rows for live topics no manifest mentions that this job created.

    remove_unlisted: `alters.remove_unlisted_configs`.
    """
    plan = build_plan(desired, live, remove_unlisted)
    if created_by_job is not None:
        plan = plan.unionByName(prune_candidates(live, desired, created_by_job))
    return plan


def cut(df: DataFrame) -> DataFrame:
    """`df` with its plan cut short (a lazy local checkpoint: no Spark job of its own).

    Spark Connect sends a DataFrame's whole plan as nested protobuf, and its client
    refuses one deeper than 100 levels: the plan and policy chain would be. Classic Spark
    runs the same code (one code path).
    """
    return df.localCheckpoint(eager=False)


def judge_plan(plan: DataFrame, conf: Conf, context: PolicyContext,
               actions: Collection[str] = (CREATE, DELETE, ALTER, REASSIGN)) -> DataFrame:
    """The create, delete, alter and reassign policies over the valid PLAN rows; invalid
    rows pass as they are (the reassign group judges the rows that move replicas: REASSIGN,
    and ALTER rows with a reassignment).

    actions: the policy groups to run (a policy judges only rows of its action, so a group
      whose action has no valid row would change nothing).
    """
    valid = F.size("row_errors") == 0
    judged = plan.where(valid)
    groups = [(apply_policies, specs) for action, apply_policies, specs in (
        (CREATE, with_create_policies, conf.create_policies),
        (DELETE, with_delete_policies, conf.delete_policies),
        (ALTER, with_alter_policies, conf.alter_policies),
        (REASSIGN, with_reassign_policies, conf.reassign_policies)) if action in actions]
    for i, (apply_policies, specs) in enumerate(groups):
        judged = apply_policies(judged, specs, context, cut)
        if i < len(groups) - 1:
            judged = cut(judged)
    return judged.unionByName(plan.where(~valid))


PlanCounts = dict[tuple[str, str, str], int]


def plan_counts(plan: DataFrame) -> PlanCounts:
    """PLAN rows per (cluster, action, plan outcome): one small Spark job."""
    return {(r["cluster"], r["action"], r["outcome"]): int(r["n"])
            for r in plan.transform(plan_outcome_counts).collect()}


def _with_moves(spark: SparkSession, rows: DataFrame, states: Mapping[str, ClusterState],
                live: DataFrame, in_flight: DataFrame, unlisted: Mapping[str, str]
                ) -> DataFrame:
    """PLAN rows with their replica moves (`transforms.reassign.plan`); on a cluster whose
    moves in flight could not be listed (`unlisted`: cluster -> why), a row with moves gets
    that as a problem (the job cannot tell what is moving already)."""
    moved = with_reassignments(rows, live, cluster_states_frame(spark, states), in_flight)
    if not unlisted:
        return moved
    why = F.create_map(*[F.lit(x) for c, reason in sorted(unlisted.items())
                         for x in (c, reason)])
    problem = F.format_string(
        "the partitions being reassigned on cluster %s could not be listed "
        "(ListPartitionReassignments: %s); no move starts there until they can "
        "(the job's principal needs Describe on the cluster)", F.col("cluster"),
        why[F.col("cluster")])
    unknown = moves_planned() & why[F.col("cluster")].isNotNull()
    return moved.withColumn("reassign_problems", F.when(unknown, F.concat(
        F.coalesce("reassign_problems", F.array().cast("array<string>")), F.array(problem)))
        .otherwise(F.col("reassign_problems")))


def planned_plan(spark: SparkSession, conf: Conf, states: Mapping[str, ClusterState],
                 desired: DataFrame, live: DataFrame, in_run: DataFrame,
                 created_by_job: DataFrame | None,
                 in_flight: Sequence[Mapping[str, Any]] | None = None,
                 unlisted: Mapping[str, str] | None = None) -> tuple[DataFrame, PlanCounts]:
    """The judged PLAN rows of a run, materialized, and their counts.

    A policy group runs only when the plan has valid rows of its action (a policy judges
    only those): a run with nothing to create, delete or alter plans no policy at all.
    live: every live topic of the run's clusters (the policies' context); in_run: those in
      the run's scope (the plan's live side).
    in_flight: REASSIGNMENT_IN_FLIGHT rows (dicts) of the run's clusters; unlisted: cluster -> why
      they could not be listed. Replica moves are planned only when the plan has drift or
      alters, or some partition is being moved (None: never).
    """
    rows = plan_rows(desired, in_run, created_by_job,
                     conf.alters.remove_unlisted_configs).localCheckpoint(eager=True)
    counts = plan_counts(rows)
    moving = in_flight is not None and (bool(in_flight) or any(
        n for (_, action, _), n in counts.items() if action in (DRIFT, ALTER)))
    if moving and in_flight is not None:
        flights = spark.createDataFrame(
            [tuple(r[c] for c in column_names(REASSIGNMENT_IN_FLIGHT)) for r in in_flight],
            REASSIGNMENT_IN_FLIGHT)
        rows = _with_moves(spark, rows, states, live, flights, unlisted or {}
                           ).localCheckpoint(eager=True)
        counts = plan_counts(rows)
    judged = {action for (_, action, outcome), n in counts.items()
              if outcome == PLANNED and n}
    if ALTER in judged and moving:
        judged.add(REASSIGN)  # an ALTER row may move replicas too
    if not judged:
        return rows, counts
    context = policy_context(spark, conf, states, live)
    plan = judge_plan(rows, conf, context, judged).localCheckpoint(eager=True)
    return plan, plan_counts(plan)
