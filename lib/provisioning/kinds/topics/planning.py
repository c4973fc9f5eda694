"""The chain from manifest tables to a judged topic plan, as the run and the benchmarks
use it.

The kinds that extend the topics' rows (`run.kind.layers_of`) plan on them here: each
layer adds what it plans to the plan rows before the topic policies run, and judges them
with its own policies after.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning.conf import Conf
from provisioning.delta.manifests import manifest_commits, read_manifests
from provisioning.kafka.client import ClusterState
from provisioning.kinds.topics.conf import TopicsConf
from provisioning.kinds.topics.plan import build_plan, prune_candidates
from provisioning.kinds.topics.policies import (
    with_alter_policies,
    with_create_policies,
    with_delete_policies,
)
from provisioning.kinds.topics.rules.usage import online_partitions
from provisioning.names import ALTER, CREATE, DELETE, PLANNED
from provisioning.results import utc_now
from provisioning.run.executors import cluster_states_frame
from provisioning.run.kind import PlanLayer
from provisioning.run.manifest_cache import manifest_rows
from provisioning.run.phases import cut
from provisioning.transforms.audit import plan_outcome_counts
from provisioning.transforms.policies import PolicyContext
from provisioning.transforms.scope import in_scope
from provisioning.transforms.validation import with_duplicate_errors, with_row_errors
from schemas import PLAN, column_names


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
    topics = conf.section(TopicsConf)
    return PolicyContext(
        # A few rows from the driver: Spark keeps them in the plan, nothing to materialize.
        clusters=cluster_states_frame(spark, states),
        live=live,
        protected=topics.deletes.protected,
        deny_list=topics.deletes.deny_list,
        max_deletes_per_cluster=topics.deletes.max_per_cluster,
        max_alters_per_cluster=topics.alters.max_per_cluster,
        in_use_since=(utc_now() - dt.timedelta(days=topics.deletes.in_use_days)
                      if topics.deletes.in_use_days > 0 else None),
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


def judge_plan(plan: DataFrame, conf: Conf, context: PolicyContext,
               actions: Collection[str] = (CREATE, DELETE, ALTER)) -> DataFrame:
    """The create, delete and alter policies over the valid PLAN rows; invalid rows pass
    as they are.

    actions: the policy groups to run (a policy judges only rows of its action, so a group
      whose action has no valid row would change nothing).
    """
    topics = conf.section(TopicsConf)
    valid = F.size("row_errors") == 0
    judged = plan.where(valid)
    groups = [(apply_policies, specs) for action, apply_policies, specs in (
        (CREATE, with_create_policies, topics.create_policies),
        (DELETE, with_delete_policies, topics.delete_policies),
        (ALTER, with_alter_policies, topics.alter_policies)) if action in actions]
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


def planned_plan(spark: SparkSession, conf: Conf, states: Mapping[str, ClusterState],
                 desired: DataFrame, live: DataFrame, in_run: DataFrame,
                 created_by_job: DataFrame | None,
                 layers: Sequence[tuple[PlanLayer, Callable[[DataFrame, PlanCounts], DataFrame],
                                        Callable[[DataFrame, PlanCounts], DataFrame]]] = (),
                 last_writes: Callable[[DataFrame], DataFrame] | None = None,
                 counted: Callable[[PlanCounts], None] | None = None
                 ) -> tuple[DataFrame, PlanCounts]:
    """The judged PLAN rows of a run, materialized, and their counts.

    A policy group runs only when the plan has valid rows of its action (a policy judges
    only those): a run with nothing to create, delete or alter plans no policy at all.
    live: every live topic of the run's clusters (the policies' context); in_run: those in
      the run's scope (the plan's live side).
    layers: each extending kind's (layer, attach, judge), its `attach` and `judge` bound to
      the run: attach adds what it plans to the rows before the topic policies, judge
      runs its own policies after them (each returns the rows unchanged when it has
      nothing to do).
    last_writes: (cluster, topic, partitions, online) -> LAST_WRITE rows, read for the
      DELETE rows when `deletes.in_use_days` counts writes (the delete policy's in-use
      check).
    counted: given the plan rows' counts before any layer or policy judged them (an apply
      starts its lock's claim from them).
    """
    rows = plan_rows(desired, in_run, created_by_job,
                     conf.section(TopicsConf).alters.remove_unlisted_configs
                     ).localCheckpoint(eager=True)
    counts = plan_counts(rows)
    if counted is not None:
        counted(counts)
    for _, attach, _ in layers:
        attached = attach(rows, counts)
        if attached is not rows:
            rows = attached.localCheckpoint(eager=True)
            counts = plan_counts(rows)
    judged = {action for (_, action, outcome), n in counts.items()
              if outcome == PLANNED and n and action in (CREATE, DELETE, ALTER)}
    plan = rows
    if judged:
        context = policy_context(spark, conf, states, live)
        if DELETE in judged and context.in_use_since is not None and last_writes:
            rows = with_last_writes(rows, live, last_writes)
        plan = judge_plan(rows, conf, context, judged)
    for _, _, judge in layers:
        plan = judge(plan, counts)
    if plan is rows:
        return rows, counts
    plan = plan.localCheckpoint(eager=True)
    return plan, plan_counts(plan)


def with_last_writes(rows: DataFrame, live: DataFrame,
                     last_writes: Callable[[DataFrame], DataFrame]) -> DataFrame:
    """PLAN `rows` with the newest record's time of each DELETE row's topic (and why it
    could not be read), from `last_writes` over the topics' online partitions (`live`)."""
    topics = (rows.where(F.col("action") == DELETE).select("cluster", "topic")
              .join(live.select("cluster", "topic", "partitions",
                                online_partitions().alias("online")), ["cluster", "topic"]))
    found = last_writes(topics).select(
        "cluster", "topic", F.col("last_write_at").alias("_written"),
        F.col("error").alias("_unread"))
    return (rows.join(found, ["cluster", "topic"], "left")
            .withColumn("live_last_write_at", F.col("_written"))
            .withColumn("live_last_write_error", F.col("_unread"))
            .select(*column_names(PLAN)).localCheckpoint(eager=True))
