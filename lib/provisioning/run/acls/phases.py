"""The ACL phases of `plan` and `apply`, beside the topic phases (see engine.py):

    acl manifests -> acl snapshot -> acl plan -> acl validate -> acl apply -> acl verify

They run only when the conf names ACL manifests (`tables.acl_manifests`) and the run is
not narrowed to some topics (`--topics`): a run limited to some topics leaves ACLs alone.
Their AUDIT rows carry the binding in `acl` (topic null) and go to the same audit table;
the run's summary counts topics and bindings apart (`run.acls.summary`).

Kafka has no validateOnly for ACLs: the `validate` row of a binding is the job's own row
validation (at plan) and the authority check (DescribeCluster's authorized operations,
asked right before apply). Grants are made by `apply`; revokes only with
`--allow-revokes`; the LITERAL TOPIC bindings of a topic this run deleted go with it once
its deletion is verified (`--allow-deletes` covers them).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf.acls import AclsConf
from provisioning.delta.manifests import manifest_commits, read_manifests
from provisioning.delta.snapshots import marked_view, record_view
from provisioning.delta.tables import Commit, TableRef, Transaction
from provisioning.kafka.acls import ClusterAcls, acl_states
from provisioning.kafka.tasks.acls import AUTHORITY, GRANT, REVOKE, VERIFY
from provisioning.names import acls as acl_names
from provisioning.results import utc_now
from provisioning.run.acls.executors import send_acls
from provisioning.run.acls.state import AclSlice
from provisioning.run.engine import Phase, RunContext, log_counts, recorded, require
from provisioning.run.executors import answered
from provisioning.run.manifest_cache import manifest_rows
from provisioning.run.options import ApplyOptions
from provisioning.run.state import RunState
from provisioning.run.topics.planning import cut
from provisioning.run.topics.state import TopicState
from provisioning.session import job_label
from provisioning.transforms.acls.audit import (
    acl_plan_audit,
    acl_plan_outcome,
    acl_result_audit,
    acl_without_answer,
)
from provisioning.transforms.acls.plan import (
    KEY,
    deleted_topic_bindings,
    orphaned_bindings,
    plan_acls,
    unmanaged_bindings,
)
from provisioning.transforms.acls.policies import AclPolicyContext, with_acl_policies
from provisioning.transforms.acls.validation import with_acl_row_errors
from schemas import ACL_BINDING, ACL_DESIRED, ACL_MANIFEST, ACL_SNAPSHOT, column_names

NAME = "acls"
# The `--allow-*` flags ACL bindings use (cli.acls; a deleted topic's bindings go with it
# under the topics' `deletes`).
REVOKES, DELETES = "revokes", "deletes"


def acls_managed(ctx: RunContext) -> bool:
    """Whether this run manages ACL bindings: the conf names ACL manifests and the run is
    not narrowed to some topics."""
    scope = getattr(ctx.options, "scope", None)
    return (ctx.conf.section(AclsConf).manifests is not None and scope is not None
            and scope.topics_glob is None)


def _clean(*actions: str) -> Column:
    """ACL_PLAN rows of `actions` that are valid and no policy refused."""
    return ((F.size("row_errors") == 0) & (F.size("policy_violations") == 0)
            & F.col("action").isin(*actions))


def sent_actions(ctx: RunContext) -> tuple[str, ...]:
    """The plan actions an apply sends whatever the topics do: GRANT, and REVOKE with
    --allow-revokes."""
    options = ctx.options
    allowed = isinstance(options, ApplyOptions) and options.allows(REVOKES)
    return (acl_names.GRANT, *((acl_names.REVOKE,) if allowed else ()))


def acl_planned(state: RunState, *actions: str) -> int:
    """Clean ACL_PLAN rows (outcome planned) of `actions`."""
    return sum(n for (_, action, outcome), n in (state.of(AclSlice).counts or {}).items()
               if action in actions and outcome == names.PLANNED)


_MANIFEST_KIND = "ACL manifest"


def validated_rows(ctx: RunContext, tables: Sequence[str],
                   commits: Sequence[tuple[str, Commit]] | None = None) -> DataFrame:
    """The ACL manifests' rows (ACL_DESIRED), validated as data (`row_errors`)."""
    return read_manifests(ctx.spark, tables, ACL_MANIFEST, ACL_DESIRED,
                          ("cluster", "principal"), _MANIFEST_KIND, commits
                          ).transform(with_acl_row_errors(tuple(ctx.conf.clusters)))


def live_bindings(ctx: RunContext) -> tuple[Mapping[str, ClusterAcls], DataFrame]:
    """Every live binding of the run's clusters (DescribeAcls, from the driver), as each
    cluster's state and as ACL_BINDING rows (materialized)."""
    found = acl_states(ctx.clusters, ctx.credentials, ctx.conf.kafka)
    rows = [(cluster, *(b[c] for c in column_names(ACL_BINDING)[1:]))
            for cluster, s in sorted(found.items()) for b in s.bindings]
    return found, ctx.spark.createDataFrame(rows, ACL_BINDING).localCheckpoint(eager=True)


class AclManifests(Phase):
    """The ACL manifests' rows (ACL_DESIRED), validated as data, of the run's clusters (rows
    naming no known cluster stay: they are rejected, whatever was selected); served by the
    shared Connect session's cache when an earlier run left them there
    (`run.manifest_cache`)."""

    name = "acl manifests"
    kind = NAME
    writes = ("acls.desired",)

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return acls_managed(ctx)

    def run(self, ctx: RunContext, state: RunState) -> None:
        known = tuple(ctx.conf.clusters)
        tables = ctx.conf.section(AclsConf).manifests or ()
        kind = _MANIFEST_KIND
        with job_label(ctx.spark, f"{ctx.command}: read ACL manifests"):
            commits = manifest_commits(ctx.spark, tables, kind)

            def validated() -> DataFrame:
                return validated_rows(ctx, tables, commits)

            def finish(rows: DataFrame) -> DataFrame:
                selected = (F.col("cluster").isNull() | ~F.col("cluster").isin(*known)
                            | F.col("cluster").isin(*ctx.cluster_names))
                return rows.where(selected).localCheckpoint(eager=True)

            # Validated rows of every cluster: runs of other clusters share them.
            state.of(AclSlice).desired = manifest_rows(ctx.spark, kind, commits, known,
                                                       validated, finish)
        ctx.steps.done("ACL manifest read")


class AclSnapshot(Phase):
    """Every live binding of the run's clusters (DescribeAcls, from the driver), and whether
    the job may change them; recorded in `tables.acl_snapshots` before anything changes."""

    name = "acl snapshot"
    kind = NAME
    reads = ("states", "acls.desired")
    writes = ("acls.live", "acls.problems")

    def __init__(self, always_record: bool = False) -> None:
        # Recorded only when a cluster's bindings changed since the table's last record,
        # unless `always_record` (the view an apply changes Kafka on).
        self.always_record = always_record

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return state.of(AclSlice).desired is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        acls = state.of(AclSlice)
        with job_label(ctx.spark, f"{ctx.command}: snapshot live ACLs"):
            found, live = live_bindings(ctx)
            recorded = marked_view(live, list(found), ACL_BINDING, column_names(ACL_SNAPSHOT),
                                   ctx.run_id, utc_now())
            table = TableRef(ctx.conf.section(AclsConf).snapshots)
            txn = Transaction(f"topic-provisioning-acl-snapshots-{ctx.run_id}", 1)
            ctx.commits.record("acl-snapshot-write", lambda: record_view(
                recorded, table, txn, sorted(found), "the ACL snapshot",
                always=self.always_record))
        acls.live = live
        acls.problems = {c: s.problem for c, s in found.items() if s.problem is not None}
        log_counts("acl snapshot", started, {c: len(s.bindings) for c, s in found.items()})
        ctx.steps.done("ACL snapshot")


class AclPlan(Phase):
    """The ACL manifests' bindings joined with the live ones (`transforms.acls.plan`), the
    bindings of the topics this run deletes revoked with them, judged by the ACL policies;
    the plan's audit rows land before anything changes Kafka."""

    name = "acl plan"
    kind = NAME
    reads = ("topics.desired", "topics.live", "topics.plan", "acls.desired", "acls.live")
    writes = ("acls.plan", "acls.counts", "acls.unmanaged", "acls.orphaned")
    records_view = True
    plans = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return state.of(AclSlice).live is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        acls, topics = state.of(AclSlice), state.of(TopicState)
        desired, live = require(acls.desired, "acls.desired"), require(acls.live, "acls.live")
        conf = ctx.conf.section(AclsConf)
        with job_label(ctx.spark, f"{ctx.command}: ACL plan, policies"):
            plan = plan_acls(desired, live, conf.remove_unlisted)
            if conf.revoke_with_deleted_topics:
                deleting = require(topics.plan, "topics.plan").where(
                    (F.size("row_errors") == 0) & (F.size("policy_violations") == 0)
                    & (F.col("action") == names.DELETE))
                gone = deleted_topic_bindings(live, deleting).join(
                    plan.select(*KEY), on=KEY, how="left_anti")
                plan = plan.unionByName(gone)
            wanted = require(topics.desired, "topics.desired")
            context = AclPolicyContext(
                topics=wanted.select("cluster", "topic", "state", "owner"),
                live_topics=require(topics.live, "topics.live"),
                cluster_principals=conf.cluster_principals,
                max_changes_per_cluster=conf.max_changes_per_cluster)
            valid = F.size("row_errors") == 0
            judged = (with_acl_policies(plan.where(valid), conf.policies, context, cut)
                      .unionByName(plan.where(~valid))).localCheckpoint(eager=True)
            counts = {(r["cluster"], r["action"], r["outcome"]): int(r["n"]) for r in
                      judged.groupBy("cluster", "action", acl_plan_outcome().alias("outcome"))
                      .agg(F.count(F.lit(1)).alias("n")).collect()}
            ctx.steps.done("ACL plan and policies")
            recorded(ctx, acls, names.PLAN, acl_plan_audit(judged, ctx.run_id, utc_now()))
        by_outcome: dict[str, int] = {}
        for (_, _, outcome), n in counts.items():
            by_outcome[outcome] = by_outcome.get(outcome, 0) + n
        log_counts("acl plan", started, by_outcome)

        def count_loose() -> None:
            with job_label(ctx.spark, f"{ctx.command}: count unmanaged and orphaned ACLs"):
                acls.unmanaged = _per_cluster(unmanaged_bindings(live, desired))
                acls.orphaned = _per_cluster(orphaned_bindings(
                    live, require(topics.live, "topics.live").where(
                        F.col("error_name").isNull())))

        ctx.commits.side("acl-loose", count_loose)
        acls.plan, acls.counts = judged, counts
        hook = getattr(ctx.options, "hook", lambda _kind: None)(NAME)
        if hook is not None:
            with job_label(ctx.spark, f"{ctx.command}: saved plan (ACL bindings)"):
                hook(judged)


def _per_cluster(df: DataFrame) -> dict[str, int]:
    return {r["cluster"]: int(r["n"]) for r in
            df.groupBy("cluster").agg(F.count(F.lit(1)).alias("n")).collect()}


class AclValidate(Phase):
    """The authority check for every clean GRANT and REVOKE: each cluster is asked which
    operations the job's principal may perform there (DescribeCluster, KIP-430); without
    ALTER on the cluster, or with no authorizer, its bindings are `rejected` and nothing is
    sent there. Topic work goes on either way."""

    name = "acl validate"
    kind = NAME
    reads = ("acls.plan", "acls.counts")
    writes = ("acls.validated",)
    runs_tasks = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return acl_planned(state, acl_names.GRANT, acl_names.REVOKE) > 0

    def run(self, ctx: RunContext, state: RunState) -> None:
        acls = state.of(AclSlice)
        plan = require(acls.plan, "acls.plan")
        requests = plan.where(_clean(acl_names.GRANT, acl_names.REVOKE)).select(*KEY)
        with job_label(ctx.spark, f"{ctx.command}: ACL authority check"):
            validated = answered(
                send_acls(requests, ctx.clusters, ctx.credentials, ctx.conf.kafka,
                          AUTHORITY, ctx.conf.section(AclsConf).batch_size),
                requests, names.VALIDATE, names.FAILED, acl_without_answer)
            recorded(ctx, acls, names.VALIDATE,
                     acl_result_audit(validated, plan, ctx.run_id, utc_now()))
        ctx.steps.done("ACL validate")
        acls.validated = validated


class AclApply(Phase):
    """CreateAcls for the grants the authority check passed; DeleteAcls for the revokes
    (with --allow-revokes), and for the bindings of the topics this run deleted once their
    deletion was verified (with --allow-deletes); batched per cluster, `acls.batch_size`
    bindings per request."""

    name = "acl apply"
    kind = NAME
    reads = ("acls.plan", "acls.counts", "acls.validated", "topics.verified")
    writes = ("acls.applied",)
    changes_kafka = True
    runs_tasks = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        options = ctx.options
        # Revokes of the bindings of topics this run deleted ride on --allow-deletes and
        # the lock the deletions took (their verify ran).
        with_deleted = (isinstance(options, ApplyOptions) and options.allows(DELETES)
                        and state.of(TopicState).verified is not None
                        and acl_planned(state, acl_names.REVOKE) > 0)
        return (isinstance(options, ApplyOptions)
                and state.of(AclSlice).validated is not None
                and (acl_planned(state, *sent_actions(ctx)) > 0 or with_deleted))

    @staticmethod
    def _requests(ctx: RunContext, state: RunState) -> tuple[DataFrame, DataFrame]:
        """The grants and the revokes this apply sends (ACL_PLAN rows)."""
        acls = state.of(AclSlice)
        plan = require(acls.plan, "acls.plan")
        options = ctx.options
        assert isinstance(options, ApplyOptions)
        passed = require(acls.validated, "acls.validated").where(
            F.col("outcome") == names.VALIDATED).select(*KEY)
        ok = plan.join(passed, on=KEY, how="left_semi")
        grants = ok.where(_clean(acl_names.GRANT))
        revokes = ok.where(_clean(acl_names.REVOKE))
        # The bindings of topics this run deleted (and verified gone) go with them under
        # --allow-deletes; every other revoke needs --allow-revokes.
        verified = state.of(TopicState).verified
        gone = (verified.where((F.col("phase") == names.VERIFY)
                               & (F.col("outcome") == names.DELETED))
                .select("cluster", F.col("topic").alias("resource_name"),
                        F.lit(True).alias("_deleted"))
                if verified is not None and options.allows(DELETES) else
                ctx.spark.createDataFrame([], "cluster string, resource_name string, "
                                              "_deleted boolean"))
        literal_topic = ((F.col("resource_type") == acl_names.TOPIC_RESOURCE)
                         & (F.col("pattern_type") == acl_names.LITERAL))
        revokes = revokes.join(gone, on=["cluster", "resource_name"], how="left")
        allowed = ((literal_topic & F.coalesce(F.col("_deleted"), F.lit(False)))
                   | F.lit(options.allows(REVOKES)))
        return grants, revokes.where(allowed).drop("_deleted")

    def unreached(self, ctx: RunContext, state: RunState, error_name: str,
                  reason: str) -> DataFrame:
        grants, revokes = self._requests(ctx, state)
        every = grants.unionByName(revokes)
        return acl_result_audit(
            acl_without_answer(every, names.APPLY, names.FAILED, error_name, reason),
            require(state.of(AclSlice).plan, "acls.plan"), ctx.run_id, utc_now())

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        acls = state.of(AclSlice)
        plan = require(acls.plan, "acls.plan")
        grants, revokes = self._requests(ctx, state)
        size, kafka = ctx.conf.section(AclsConf).batch_size, ctx.conf.kafka
        with job_label(ctx.spark, "apply: CreateAcls, DeleteAcls"):
            sent = send_acls(grants.select(*KEY), ctx.clusters, ctx.credentials, kafka, GRANT,
                             size).unionByName(
                send_acls(revokes.select(*KEY), ctx.clusters, ctx.credentials, kafka, REVOKE,
                          size))
            applied = answered(
                sent, grants.select(*KEY).unionByName(revokes.select(*KEY)), names.APPLY,
                names.UNKNOWN, acl_without_answer)
            recorded(ctx, acls, names.APPLY,
                     acl_result_audit(applied, plan, ctx.run_id, utc_now()))
        acls.applied = applied
        ctx.commits.side("acl-apply-count", lambda: log_counts(
            "acl apply", started, {r["outcome"]: int(r["n"]) for r in applied.groupBy(
                "outcome").agg(F.count(F.lit(1)).alias("n")).collect()}))
        ctx.steps.done("ACL apply")


class AclVerify(Phase):
    """Every granted binding shows in DescribeAcls, every revoked one is gone; settles the
    `unknown` outcomes."""

    name = "acl verify"
    kind = NAME
    reads = ("acls.plan", "acls.applied")
    runs_tasks = True
    settles = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return state.of(AclSlice).applied is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        acls = state.of(AclSlice)
        plan = require(acls.plan, "acls.plan")
        applied = require(acls.applied, "acls.applied")
        requests = (applied.where(F.col("outcome").isin(acl_names.GRANTED, acl_names.REVOKED,
                                                        names.UNKNOWN))
                    .select(*KEY).join(plan.select(*KEY, "action"), on=KEY, how="inner"))
        with job_label(ctx.spark, "apply: verify ACLs"):
            verified = answered(
                send_acls(requests, ctx.clusters, ctx.credentials, ctx.conf.kafka,
                          VERIFY, ctx.conf.section(AclsConf).batch_size),
                requests.select(*KEY), names.VERIFY, names.UNKNOWN, acl_without_answer)
            recorded(ctx, acls, names.VERIFY,
                     acl_result_audit(verified, plan, ctx.run_id, utc_now()))
        ctx.steps.done("ACL verify")
