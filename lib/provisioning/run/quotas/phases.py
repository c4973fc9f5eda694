"""The client quotas' phases of `plan` and `apply` (see engine.py):

    quota manifests -> quota snapshot -> quota plan -> quota validate -> quota apply
      -> quota verify

They run only when the conf names quota manifests (`tables.quota_manifests`) and the run is
not narrowed to some topics (`--topics`). Their AUDIT rows carry the quota in `quota`
(topic null). AlterClientQuotas has validateOnly: every SET and REMOVE the plan allows
goes to the broker with it first, one request per cluster and `quotas.batch_size`
entities, and the broker's verdict per entity is each key's `validate` row. `apply` makes
the SETs the broker passed, and the REMOVEs only with `--allow-quota-removals`; `verify`
reads every changed entity back (DescribeClientQuotas).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf.quotas import QuotasConf
from provisioning.delta.manifests import manifest_commits, read_manifests
from provisioning.delta.snapshots import marked_view, record_view
from provisioning.delta.tables import Commit, TableRef, Transaction
from provisioning.kafka.quotas import ClusterQuotas, quota_states
from provisioning.kafka.tasks.quotas import APPLY, VALIDATE, VERIFY
from provisioning.names import quotas as quota_names
from provisioning.results import utc_now
from provisioning.run.engine import Phase, RunContext, log_counts, recorded, require
from provisioning.run.executors import answered
from provisioning.run.manifest_cache import manifest_rows
from provisioning.run.options import ApplyOptions
from provisioning.run.quotas.executors import send_quotas
from provisioning.run.quotas.state import QuotaSlice
from provisioning.run.state import RunState
from provisioning.run.topics.planning import cut
from provisioning.session import job_label
from provisioning.transforms.quotas.audit import (
    quota_plan_audit,
    quota_plan_outcome,
    quota_result_audit,
    quota_without_answer,
)
from provisioning.transforms.quotas.plan import plan_quotas, unmanaged_quotas
from provisioning.transforms.quotas.policies import QuotaPolicyContext, with_quota_policies
from provisioning.transforms.quotas.validation import (
    with_duplicate_entity_errors,
    with_quota_row_errors,
)
from schemas.quotas import (
    ENTITY_COLUMNS,
    QUOTA_DESIRED,
    QUOTA_KEY,
    QUOTA_LIVE,
    QUOTA_MANIFEST,
    QUOTA_SNAPSHOT,
)

NAME = "quotas"
# The `--allow-*` flag of quota removals (cli.quotas).
REMOVALS = "quota-removals"
_MANIFEST_KIND = "quota manifest"
_TYPES = dict(zip(quota_names.ENTITY_TYPES, ENTITY_COLUMNS, strict=True))


def quotas_managed(ctx: RunContext) -> bool:
    """Whether this run manages client quotas: the conf names quota manifests and the run
    is not narrowed to some topics."""
    scope = getattr(ctx.options, "scope", None)
    return (ctx.conf.section(QuotasConf).manifests is not None and scope is not None
            and scope.topics_glob is None)


def same_quota(left: str, right: str, columns: Sequence[str] = QUOTA_KEY) -> Column:
    """A join condition: the sides aliased `left` and `right` name the same quota (entity
    columns may be null: compared null-safe)."""
    found: Column | None = None
    for c in columns:
        one = F.col(f"{left}.{c}").eqNullSafe(F.col(f"{right}.{c}"))
        found = one if found is None else found & one
    assert found is not None
    return found


def clean(*actions: str) -> Column:
    """QUOTA_PLAN rows of `actions` that are valid and no policy refused."""
    return ((F.size("row_errors") == 0) & (F.size("policy_violations") == 0)
            & F.col("action").isin(*actions))


def quotas_planned(state: RunState, *actions: str) -> int:
    """Clean QUOTA_PLAN rows (outcome planned) of `actions`."""
    return sum(n for (_, action, outcome), n in (state.of(QuotaSlice).counts or {}).items()
               if action in actions and outcome == names.PLANNED)


def validated_rows(ctx: RunContext, tables: Sequence[str],
                   commits: Sequence[tuple[str, Commit]] | None = None) -> DataFrame:
    """The quota manifests' rows (QUOTA_DESIRED), validated as data (`row_errors`)."""
    return (read_manifests(ctx.spark, tables, QUOTA_MANIFEST, QUOTA_DESIRED, ("cluster",),
                           _MANIFEST_KIND, commits)
            .transform(with_quota_row_errors(tuple(ctx.conf.clusters)))
            .transform(with_duplicate_entity_errors))


def live_quotas(ctx: RunContext) -> tuple[Mapping[str, ClusterQuotas], DataFrame]:
    """Every live quota of the run's clusters (DescribeClientQuotas, from the driver), as
    each cluster's state and as QUOTA_LIVE rows (materialized)."""
    found = quota_states(ctx.clusters, ctx.credentials, ctx.conf.kafka)
    rows: list[tuple[Any, ...]] = []
    for cluster, state in sorted(found.items()):
        for entity, quotas in state.quotas.items():
            spelled = {column: (quota_names.table_name(entity[kind]) if kind in entity
                                else None) for kind, column in _TYPES.items()}
            rows += [(cluster, *(spelled[c] for c in ENTITY_COLUMNS), key, float(value))
                     for key, value in sorted(quotas.items())]
    return found, ctx.spark.createDataFrame(rows, QUOTA_LIVE).localCheckpoint(eager=True)


class QuotaManifests(Phase):
    """The quota manifests' rows (QUOTA_DESIRED), validated as data, of the run's clusters
    (rows naming no known cluster stay: they are rejected, whatever was selected); served
    by the shared Connect session's cache when an earlier run left them there."""

    name = "quota manifests"
    kind = NAME
    writes = ("quotas.desired",)

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return quotas_managed(ctx)

    def run(self, ctx: RunContext, state: RunState) -> None:
        known = tuple(ctx.conf.clusters)
        tables = ctx.conf.section(QuotasConf).manifests or ()
        with job_label(ctx.spark, f"{ctx.command}: read quota manifests"):
            commits = manifest_commits(ctx.spark, tables, _MANIFEST_KIND)

            def validated() -> DataFrame:
                return validated_rows(ctx, tables, commits)

            def finish(rows: DataFrame) -> DataFrame:
                selected = (F.col("cluster").isNull() | ~F.col("cluster").isin(*known)
                            | F.col("cluster").isin(*ctx.cluster_names))
                return rows.where(selected).localCheckpoint(eager=True)

            # Validated rows of every cluster: runs of other clusters share them.
            state.of(QuotaSlice).desired = manifest_rows(ctx.spark, _MANIFEST_KIND, commits,
                                                         known, validated, finish)
        ctx.steps.done("quota manifest read")


class QuotaSnapshot(Phase):
    """Every live quota of the run's clusters (DescribeClientQuotas, every entity, from the
    driver); recorded in `tables.quota_snapshots` (only when a cluster changed since its
    last record, unless `always_record`: the view an apply changes Kafka on)."""

    name = "quota snapshot"
    kind = NAME
    reads = ("states", "quotas.desired")
    writes = ("quotas.live", "quotas.problems")

    def __init__(self, always_record: bool = False) -> None:
        self.always_record = always_record

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return state.of(QuotaSlice).desired is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        quotas = state.of(QuotaSlice)
        with job_label(ctx.spark, f"{ctx.command}: snapshot live quotas"):
            found, live = live_quotas(ctx)
            rows = marked_view(live, list(found), QUOTA_LIVE,
                               [f.name for f in QUOTA_SNAPSHOT.fields], ctx.run_id, utc_now())
            table = TableRef(ctx.conf.section(QuotasConf).snapshots)
            txn = Transaction(f"topic-provisioning-quota-snapshots-{ctx.run_id}", 1)
            ctx.commits.record("quota-snapshot-write", lambda: record_view(
                rows, table, txn, sorted(found), "the quota snapshot",
                always=self.always_record))
        quotas.live = live
        quotas.problems = {c: s.problem for c, s in found.items() if s.problem is not None}
        log_counts("quota snapshot", started,
                   {c: sum(len(q) for q in s.quotas.values()) for c, s in found.items()})
        ctx.steps.done("quota snapshot")


class QuotaPlan(Phase):
    """The quota manifests joined with the live quotas (`transforms.quotas.plan`), judged by
    the quota policies; the plan's audit rows are the run's intent."""

    name = "quota plan"
    kind = NAME
    reads = ("quotas.desired", "quotas.live")
    writes = ("quotas.plan", "quotas.counts", "quotas.unmanaged")
    records_view = True
    plans = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return state.of(QuotaSlice).live is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        quotas = state.of(QuotaSlice)
        desired, live = require(quotas.desired, "desired"), require(quotas.live, "live")
        conf = ctx.conf.section(QuotasConf)
        with job_label(ctx.spark, f"{ctx.command}: quota plan, policies"):
            plan = plan_quotas(desired, live, conf.remove_unlisted)
            valid = F.size("row_errors") == 0
            context = QuotaPolicyContext(max_changes_per_cluster=conf.max_changes_per_cluster)
            judged = (with_quota_policies(plan.where(valid), conf.policies, context, cut)
                      .unionByName(plan.where(~valid))).localCheckpoint(eager=True)
            counts = {(r["cluster"], r["action"], r["outcome"]): int(r["n"]) for r in
                      judged.groupBy("cluster", "action",
                                     quota_plan_outcome().alias("outcome"))
                      .agg(F.count(F.lit(1)).alias("n")).collect()}
            ctx.steps.done("quota plan and policies")
            recorded(ctx, quotas, names.PLAN, quota_plan_audit(judged, ctx.run_id, utc_now()))
        by_outcome: dict[str, int] = {}
        for (_, _, outcome), n in counts.items():
            by_outcome[outcome] = by_outcome.get(outcome, 0) + n
        log_counts("quota plan", started, by_outcome)

        def count_unmanaged() -> None:
            with job_label(ctx.spark, f"{ctx.command}: count unmanaged quotas"):
                quotas.unmanaged = {
                    r["cluster"]: int(r["n"]) for r in unmanaged_quotas(live, desired)
                    .groupBy("cluster").agg(F.count(F.lit(1)).alias("n")).collect()}

        ctx.commits.side("quota-unmanaged", count_unmanaged)
        quotas.plan, quotas.counts = judged, counts
        hook = getattr(ctx.options, "hook", lambda _kind: None)(NAME)
        if hook is not None:
            with job_label(ctx.spark, f"{ctx.command}: saved plan (client quotas)"):
                hook(judged)


class QuotaValidate(Phase):
    """The broker's own verdict before anything changes: AlterClientQuotas with
    validateOnly for every clean SET and REMOVE, `quotas.batch_size` entities a request."""

    name = "quota validate"
    kind = NAME
    reads = ("quotas.plan", "quotas.counts")
    writes = ("quotas.validated",)
    runs_tasks = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return quotas_planned(state, quota_names.SET_ACTION, quota_names.REMOVE) > 0

    def run(self, ctx: RunContext, state: RunState) -> None:
        quotas = state.of(QuotaSlice)
        plan = require(quotas.plan, "plan")
        requests = plan.where(clean(quota_names.SET_ACTION, quota_names.REMOVE))
        with job_label(ctx.spark, f"{ctx.command}: validateOnly AlterClientQuotas"):
            validated = answered(
                send_quotas(requests, ctx.clusters, ctx.credentials, ctx.conf.kafka,
                            VALIDATE, ctx.conf.section(QuotasConf).batch_size),
                requests, names.VALIDATE, names.FAILED, quota_without_answer)
            recorded(ctx, quotas, names.VALIDATE,
                     quota_result_audit(validated, plan, ctx.run_id, utc_now()))
        ctx.steps.done("quota validate")
        quotas.validated = validated


class QuotaApply(Phase):
    """AlterClientQuotas for the SETs the validateOnly pass passed, and the REMOVEs with
    --allow-quota-removals; batched per cluster, `quotas.batch_size` entities a request."""

    name = "quota apply"
    kind = NAME
    reads = ("quotas.plan", "quotas.counts", "quotas.validated")
    writes = ("quotas.applied",)
    changes_kafka = True
    runs_tasks = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return (isinstance(ctx.options, ApplyOptions)
                and state.of(QuotaSlice).validated is not None
                and quotas_planned(state, *_sent_actions(ctx)) > 0)

    @staticmethod
    def _requests(ctx: RunContext, state: RunState) -> DataFrame:
        """The plan rows this apply sends: validated, of the actions its flags allow."""
        quotas = state.of(QuotaSlice)
        plan = require(quotas.plan, "plan").alias("p")
        passed = require(quotas.validated, "validated").where(
            F.col("outcome") == names.VALIDATED).alias("v")
        return (plan.where(clean(*_sent_actions(ctx)))
                .join(passed, on=same_quota("p", "v"), how="left_semi"))

    def unreached(self, ctx: RunContext, state: RunState, error_name: str,
                  reason: str) -> DataFrame:
        return quota_result_audit(
            quota_without_answer(self._requests(ctx, state), names.APPLY, names.FAILED,
                                 error_name, reason),
            require(state.of(QuotaSlice).plan, "plan"), ctx.run_id, utc_now())

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        quotas = state.of(QuotaSlice)
        plan = require(quotas.plan, "plan")
        requests = self._requests(ctx, state)
        with job_label(ctx.spark, "apply: AlterClientQuotas"):
            applied = answered(
                send_quotas(requests, ctx.clusters, ctx.credentials, ctx.conf.kafka, APPLY,
                            ctx.conf.section(QuotasConf).batch_size),
                requests, names.APPLY, names.UNKNOWN, quota_without_answer)
            recorded(ctx, quotas, names.APPLY,
                     quota_result_audit(applied, plan, ctx.run_id, utc_now()))
        quotas.applied = applied
        ctx.commits.side("quota-apply-count", lambda: log_counts(
            "quota apply", started, {r["outcome"]: int(r["n"]) for r in applied.groupBy(
                "outcome").agg(F.count(F.lit(1)).alias("n")).collect()}))
        ctx.steps.done("quota apply")


def _sent_actions(ctx: RunContext) -> tuple[str, ...]:
    """The plan actions an apply sends: SET, and REMOVE with --allow-quota-removals."""
    options = ctx.options
    allowed = isinstance(options, ApplyOptions) and options.allows(REMOVALS)
    return (quota_names.SET_ACTION, *((quota_names.REMOVE,) if allowed else ()))


class QuotaVerify(Phase):
    """Every quota set or removed (or `unknown`) read back with DescribeClientQuotas;
    settles the `unknown` outcomes."""

    name = "quota verify"
    kind = NAME
    reads = ("quotas.plan", "quotas.applied")
    runs_tasks = True
    settles = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return state.of(QuotaSlice).applied is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        quotas = state.of(QuotaSlice)
        plan = require(quotas.plan, "plan").alias("p")
        applied = require(quotas.applied, "applied").where(F.col("outcome").isin(
            quota_names.SET, quota_names.REMOVED, names.UNKNOWN)).alias("a")
        requests = plan.join(applied, on=same_quota("p", "a"), how="left_semi")
        with job_label(ctx.spark, "apply: verify client quotas"):
            verified = answered(
                send_quotas(requests, ctx.clusters, ctx.credentials, ctx.conf.kafka, VERIFY,
                            ctx.conf.section(QuotasConf).batch_size),
                requests, names.VERIFY, names.UNKNOWN, quota_without_answer)
            recorded(ctx, quotas, names.VERIFY,
                     quota_result_audit(verified, require(quotas.plan, "plan"), ctx.run_id,
                                        utc_now()))
        ctx.steps.done("quota verify")
