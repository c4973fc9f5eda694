"""The client quotas' part of the run room: their slice of the state (`state`), their phases
of `plan` and `apply` (`phases`) and of `import --quotas` and `check` (`adopt`), their admin
I/O (`executors`), their summary (`summary`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from provisioning.conf import Conf
from provisioning.conf.quotas import QuotasConf
from provisioning.delta.tables import JobTable
from provisioning.names import quotas as quota_names
from provisioning.results.quotas import QuotasSummary
from provisioning.run.engine import Phase, RunContext
from provisioning.run.kind import (
    APPLY,
    CHECK,
    IMPORT,
    MANIFESTS,
    PLAN,
    SNAPSHOT,
    VALIDATE,
    PlanCounts,
    RunKind,
)
from provisioning.run.options import ApplyOptions
from provisioning.run.quotas.adopt import Import, QuotaCheck
from provisioning.run.quotas.phases import (
    NAME,
    REMOVALS,
    QuotaApply,
    QuotaManifests,
    QuotaPlan,
    QuotaSnapshot,
    QuotaValidate,
    QuotaVerify,
    quotas_planned,
)
from provisioning.run.quotas.state import QuotaSlice
from provisioning.run.quotas.summary import summarize_quotas
from provisioning.run.state import RunState
from schemas.quotas import QUOTA_SNAPSHOT


class QuotasKind(RunKind):
    name = NAME
    State = QuotaSlice
    planned_reads = ("quotas.counts",)
    findings_field = "quotas.violations"

    def phases(self, step: str) -> Sequence[Phase]:
        return {
            MANIFESTS: (QuotaManifests(),),
            SNAPSHOT: (QuotaSnapshot(),),
            PLAN: (QuotaPlan(),),
            VALIDATE: (QuotaValidate(),),
            APPLY: (QuotaApply(), QuotaVerify()),
            IMPORT: (Import(),),
            # The view `check` judges is recorded, as its topics' is.
            CHECK: (QuotaManifests(), QuotaSnapshot(always_record=True), QuotaCheck()),
        }.get(step, ())

    def relock_phases(self) -> Sequence[Phase]:
        # The view the run changes Kafka on is recorded, changed or not.
        return (QuotaSnapshot(always_record=True), QuotaPlan())

    def sends_changes(self, ctx: RunContext, state: RunState) -> bool:
        removals = isinstance(ctx.options, ApplyOptions) and ctx.options.allows(REMOVALS)
        return quotas_planned(state, quota_names.SET_ACTION,
                              *((quota_names.REMOVE,) if removals else ())) > 0

    def plan_has_changes(self, state: RunState) -> bool:
        return quotas_planned(state, quota_names.SET_ACTION, quota_names.REMOVE) > 0

    def plan_counts(self, state: RunState) -> PlanCounts:
        return state.of(QuotaSlice).counts or {}

    def job_tables(self, conf: Conf, command: str) -> Sequence[JobTable]:
        quotas = conf.section(QuotasConf)
        if command not in ("plan", "apply", "check") or quotas.manifests is None:
            return ()
        return (JobTable(quotas.snapshots, QUOTA_SNAPSHOT),)

    def summary(self, ctx: RunContext, state: RunState) -> QuotasSummary | None:
        quotas = state.of(QuotaSlice)
        if quotas.plan is None:
            return None
        options = ctx.options
        apply = options if isinstance(options, ApplyOptions) else None
        summary = summarize_quotas(quotas.rows, getattr(options, "listing_limit", 500),
                                   removals_allowed=apply is None or apply.allows(REMOVALS))
        summary.clusters_not_readable = {
            c: {"error_name": e, "error_message": m}
            for c, (e, m) in sorted((quotas.problems or {}).items())}
        return summary

    def complete(self, state: RunState, summary: Any) -> None:
        summary.unmanaged = dict(sorted((state.of(QuotaSlice).unmanaged or {}).items()))

    def imported(self, state: RunState) -> Any:
        return state.of(QuotaSlice).imported


KIND = QuotasKind()
