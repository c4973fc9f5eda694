"""The ACL bindings' part of the run room: their slice of the state (`state`), their phases
of `plan` and `apply` (`phases`) and of `import --acls` (`adopt`), their admin I/O
(`executors`), their summary (`summary`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from provisioning.conf import Conf
from provisioning.conf.acls import AclsConf
from provisioning.delta.tables import JobTable
from provisioning.names import acls as acl_names
from provisioning.results.acls import AclsSummary
from provisioning.run.acls.adopt import Import
from provisioning.run.acls.phases import (
    NAME,
    REVOKES,
    AclApply,
    AclManifests,
    AclPlan,
    AclSnapshot,
    AclValidate,
    AclVerify,
    acl_planned,
    sent_actions,
)
from provisioning.run.acls.state import AclSlice
from provisioning.run.acls.summary import summarize_acls
from provisioning.run.engine import Phase, RunContext
from provisioning.run.kind import (
    APPLY,
    IMPORT,
    MANIFESTS,
    PLAN,
    SNAPSHOT,
    VALIDATE,
    PlanCounts,
    RunKind,
)
from provisioning.run.options import ApplyOptions
from provisioning.run.state import RunState
from schemas import ACL_SNAPSHOT


class AclsKind(RunKind):
    name = NAME
    State = AclSlice
    planned_reads = ("acls.counts",)

    def phases(self, step: str) -> Sequence[Phase]:
        return {
            MANIFESTS: (AclManifests(),),
            SNAPSHOT: (AclSnapshot(),),
            PLAN: (AclPlan(),),
            VALIDATE: (AclValidate(),),
            APPLY: (AclApply(), AclVerify()),
            IMPORT: (Import(),),
        }.get(step, ())

    def relock_phases(self) -> Sequence[Phase]:
        # The view the run changes Kafka on is recorded, changed or not.
        return (AclSnapshot(always_record=True), AclPlan())

    def sends_changes(self, ctx: RunContext, state: RunState) -> bool:
        # Grants are made by every apply, revokes only with --allow-revokes (a deleted
        # topic's bindings go with it under --allow-deletes: the topics' deletions take
        # the lock).
        return acl_planned(state, *sent_actions(ctx)) > 0

    def plan_has_changes(self, state: RunState) -> bool:
        return acl_planned(state, acl_names.GRANT, acl_names.REVOKE) > 0

    def plan_counts(self, state: RunState) -> PlanCounts:
        return state.of(AclSlice).counts or {}

    def job_tables(self, conf: Conf, command: str) -> Sequence[JobTable]:
        acls = conf.section(AclsConf)
        if command not in ("plan", "apply") or acls.manifests is None:
            return ()
        return (JobTable(acls.snapshots, ACL_SNAPSHOT),)

    def summary(self, ctx: RunContext, state: RunState) -> AclsSummary | None:
        acls = state.of(AclSlice)
        if acls.plan is None:
            return None
        options = ctx.options
        apply = options if isinstance(options, ApplyOptions) else None
        summary = summarize_acls(acls.rows, getattr(options, "listing_limit", 500),
                                 revokes_allowed=apply is None or apply.allows(REVOKES))
        summary.clusters_not_changeable = {
            c: {"error_name": e, "error_message": m}
            for c, (e, m) in sorted((acls.problems or {}).items())}
        return summary

    def complete(self, state: RunState, summary: Any) -> None:
        acls = state.of(AclSlice)
        summary.unmanaged = dict(sorted((acls.unmanaged or {}).items()))
        summary.orphaned = dict(sorted((acls.orphaned or {}).items()))

    def imported(self, state: RunState) -> Any:
        return state.of(AclSlice).imported


KIND = AclsKind()
