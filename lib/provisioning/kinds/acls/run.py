"""The ACL bindings' part of the run package, on the entity base (`run.entity`): their requests
(`kinds.acls.requests`, `kinds.acls.tasks`), and what they take from the topics' run.

Kafka has no validateOnly for ACLs: the `validate` row of a binding is the job's own row
validation (at plan) and the authority check (DescribeCluster's authorized operations, asked
right before apply). Grants are made by `apply`; revokes only with `--allow-revokes`; the
LITERAL TOPIC bindings of a topic this run deletes are revoked with it
(`acls.revoke_with_deleted_topics`) once its deletion is verified (`--allow-deletes` covers
them: they ride on the topics' deletions and their lock).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.kinds.acls import names as acl_names
from provisioning.kinds.acls.conf import AclsConf
from provisioning.kinds.acls.model import MODEL
from provisioning.kinds.acls.plan import deleted_topic_bindings, orphaned_bindings
from provisioning.kinds.acls.policies import AclPolicyContext
from provisioning.kinds.acls.requests import acl_states
from provisioning.kinds.acls.schema import ACL_BINDING, BINDING_KEY
from provisioning.kinds.acls.tasks import AUTHORITY, GRANT, REVOKE, VERIFY, acl_results
from provisioning.kinds.topics.state import TopicState
from provisioning.run.engine import RunContext, require
from provisioning.run.entity import ClusterRead, EntityRunKind, EntitySlice
from provisioning.run.executors import task_attempt
from provisioning.run.state import RunState
from provisioning.transforms.entity import per_cluster
from schemas import column_names

KEY = list(BINDING_KEY)
# A deleted topic's bindings go with it under the topics' `--allow-deletes`.
DELETES = "deletes"


@dataclass
class AclSlice(EntitySlice):
    """The ACL bindings' slice of the run's state."""

    # LITERAL TOPIC bindings naming no live topic, per cluster.
    orphaned: Mapping[str, int] | None = None


class AclsKind(EntityRunKind):
    name, State, model, conf_class = "acls", AclSlice, MODEL, AclsConf
    requests_named = ("ACL authority check", "CreateAcls, DeleteAcls", "verify ACLs")
    plan_reads = ("topics.desired", "topics.live", "topics.plan")
    plan_writes = ("acls.orphaned",)
    apply_reads = ("topics.verified",)
    summary_keys = ("revokes_not_allowed", "clusters_not_changeable")

    def read_live(self, ctx: RunContext) -> tuple[Mapping[str, ClusterRead], DataFrame]:
        columns = column_names(ACL_BINDING)[1:]
        return self.live_frame(ctx, {
            cluster: ([(cluster, *(b[c] for c in columns)) for b in s.bindings], s.problem)
            for cluster, s in acl_states(ctx.clusters, ctx.credentials, ctx.conf.kafka).items()})

    def _send(self, ctx: RunContext, rows: DataFrame, task: str) -> DataFrame:
        kafka, size = ctx.conf.kafka, self.conf(ctx).batch_size
        return self.tasks(ctx, rows, lambda batch, named, creds: acl_results(
            batch, named, creds, kafka, task, size, attempt=task_attempt()))

    def validate(self, ctx: RunContext, requests: DataFrame) -> DataFrame:
        return self._send(ctx, requests.select(*KEY), AUTHORITY)

    def change(self, ctx: RunContext, requests: DataFrame) -> DataFrame:
        action = F.col("action")
        return self._send(ctx, requests.where(action == acl_names.GRANT).select(*KEY), GRANT
                          ).unionByName(self._send(
            ctx, requests.where(action == acl_names.REVOKE).select(*KEY), REVOKE))

    def read_back(self, ctx: RunContext, requests: DataFrame) -> DataFrame:
        return self._send(ctx, requests.select(*KEY, "action"), VERIFY)

    def planned_rows(self, ctx: RunContext, state: RunState, desired: DataFrame,
                     live: DataFrame) -> DataFrame:
        """The bindings of the manifests, and those of the topics this run deletes."""
        plan = super().planned_rows(ctx, state, desired, live)
        if not ctx.conf.section(AclsConf).revoke_with_deleted_topics:
            return plan
        deleting = require(state.of(TopicState).plan, "topics.plan").where(
            (F.size("row_errors") == 0) & (F.size("policy_violations") == 0)
            & (F.col("action") == names.DELETE))
        gone = deleted_topic_bindings(live, deleting).join(plan.select(*KEY), on=KEY,
                                                           how="left_anti")
        return plan.unionByName(gone)

    def policy_context(self, ctx: RunContext, state: RunState) -> Any:
        topics, conf = state.of(TopicState), ctx.conf.section(AclsConf)
        return AclPolicyContext(
            topics=require(topics.desired, "topics.desired").select(
                "cluster", "topic", "state", "owner"),
            live_topics=require(topics.live, "topics.live"),
            cluster_principals=conf.cluster_principals,
            max_changes_per_cluster=conf.max_changes_per_cluster)

    def count_left_alone(self, ctx: RunContext, state: RunState, live: DataFrame) -> None:
        live_topics = require(state.of(TopicState).live, "topics.live")
        state.of(AclSlice).orphaned = per_cluster(orphaned_bindings(
            live, live_topics.where(F.col("error_name").isNull())))

    def removals_sent(self, ctx: RunContext, state: RunState, removals: DataFrame
                      ) -> DataFrame:
        # The bindings of topics this run deleted (and verified gone) go with them under
        # --allow-deletes; every other revoke needs --allow-revokes.
        verified = state.of(TopicState).verified
        gone = (verified.where((F.col("phase") == names.VERIFY)
                               & (F.col("outcome") == names.DELETED))
                .select("cluster", F.col("topic").alias("resource_name"),
                        F.lit(True).alias("_deleted"))
                if verified is not None and self.allows(ctx, DELETES) else
                ctx.spark.createDataFrame([], "cluster string, resource_name string, "
                                              "_deleted boolean"))
        literal_topic = ((F.col("resource_type") == acl_names.TOPIC_RESOURCE)
                         & (F.col("pattern_type") == acl_names.LITERAL))
        allowed = ((literal_topic & F.coalesce(F.col("_deleted"), F.lit(False)))
                   | F.lit(self.allows(ctx, self.model.nouns.removals)))
        return (removals.join(gone, on=["cluster", "resource_name"], how="left")
                .where(allowed).drop("_deleted"))

    def removes_with_another_kind(self, ctx: RunContext, state: RunState) -> bool:
        # Topics this run deleted (their verify ran) under --allow-deletes may take their
        # literal bindings with them; the topics' deletions took the lock.
        return (self.allows(ctx, DELETES) and state.of(TopicState).verified is not None
                and self.planned(state, self.model.removes) > 0)

    def complete(self, state: RunState, summary: Any) -> None:
        super().complete(state, summary)
        summary.left_alone["orphaned"] = dict(sorted((state.of(AclSlice).orphaned or {}).items()))


RUN = AclsKind()
