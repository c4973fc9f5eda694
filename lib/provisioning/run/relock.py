"""The lock of an `apply`, taken only when its plan has something to change.

An apply reads the manifests, snapshots its clusters and plans without its lock. When that
plan gives no phase anything to send (a no-op run), the run ends there: it never writes the
lock table, and its plan is its record. Otherwise `Relock` takes the lock of every cluster
of the run (LockHeld, exit 4, when another run holds one; nothing of the first plan is
recorded then) and, holding it, reads everything again (the live topics and their configs,
the moves in flight, the live ACL bindings) and plans again on that view; the phases after
it see only the second plan, which alone is recorded.

Why it is safe: every request an apply sends is planned on a view read after the run held
the lock of the request's cluster, as when the lock came first. The first, unlocked plan
decides only whether to take the lock; nothing it planned is ever sent. A change made
between the first plan and the lock (by another run, or by hand) is in the second view and
planned on, or, when it leaves nothing to change, nothing is sent. A saved plan given to
`apply --plan FILE` is compared with the plan made under the lock too.
"""

from __future__ import annotations

from provisioning import names
from provisioning.run.acl_phases import AclPlan, AclSnapshot, acl_planned
from provisioning.run.engine import Phase, RunContext, RunState
from provisioning.run.options import ApplyOptions
from provisioning.run.phases import Plan, Snapshot, apply_actions, planned
from provisioning.run.reassign_phases import moves_count


def changes_planned(ctx: RunContext, state: RunState) -> bool:
    """Whether the plan gives an apply's changing phases anything to send (or a move in
    flight to settle): topics to create, delete or alter as the flags allow, replica moves
    (with --allow-reassign), ACL bindings to grant or revoke."""
    options = ctx.options
    if not isinstance(options, ApplyOptions):
        return False
    topics = sum(planned(state, action) for action in apply_actions(options))
    moves = moves_count(state) if options.allow_reassign else 0
    acls = acl_planned(state, names.GRANT, names.REVOKE)
    return topics + moves + acls > 0


class Relock(Phase):
    """Take the run's lock, then snapshot and plan again under it (see the module
    docstring)."""

    name = "lock"
    reads = ("states", "desired", "plan", "plan_counts")
    writes = ("live", "in_flight", "unlisted", "plan", "plan_rows", "plan_counts",
              "acl_live", "acl_problems", "acl_plan", "acl_counts")
    needs_lock = True
    records_view = True
    replans = True

    def __init__(self) -> None:
        # The view the run changes Kafka on is recorded, changed or not.
        self._again = (Snapshot(always_record=True), AclSnapshot(always_record=True), Plan(),
                       AclPlan())

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return changes_planned(ctx, state)

    def run(self, ctx: RunContext, state: RunState) -> None:
        # The first pass's view is gone (the engine dropped its records): what the phases
        # after this one read comes from the view read under the lock.
        for stale in ("live", "in_flight", "unlisted", "plan", "plan_rows", "plan_counts",
                      "move_counts", "unmanaged", "acl_live", "acl_problems", "acl_plan",
                      "acl_counts", "acl_unmanaged", "acl_orphaned"):
            setattr(state, stale, None)
        state.audit_rows.clear()
        state.acl_audit_rows.clear()
        for phase in self._again:
            if phase.needed(ctx, state):
                phase.run(ctx, state)
        ctx.steps.done("plan again under the lock")
