"""The lock of an `apply`, taken only when its plan has something to change.

An apply reads the manifests, snapshots its clusters and plans without its lock. When that
plan gives no phase anything to send (no kind plans a change: `RunKind.sends_changes`), the
run ends there: it never writes the lock table, and its plan is its record. Otherwise
`Relock` takes the lock of every cluster of the run (LockHeld, exit 4, when another run
holds one; nothing of the first plan is recorded then) and, holding it, has every kind read
again what the run may change and plan it again (`RunKind.relock_phases`: the topics read
again their listing and the topics the run changes, `kinds.topics.relock`; an entity kind
reads its live entities again whole, `run.entity.phases.ReplanUnderLock`). A kind whose view
under the lock is the first keeps its first plan (the same plan, not made twice). The
phases after it see only the plans made under the lock, which alone are recorded, with the
views they were made on.

Why it is safe: every request an apply sends names a subject (a topic, or another kind's) whose
state was read after the run held the lock of its cluster, and was judged on a listing read
then, as when the lock came first. The first, unlocked plan decides only whether to take
the lock and what to read again; nothing it planned is ever sent. A change made between
the first plan and the lock to a topic the run changes is in the second view and planned
on; a change to a topic's partitions, replicas or existence shows in the listing and is
planned on too. A change made then only to the configs of a topic the run does not touch
is not seen: nothing is sent for that topic, and the next run plans it, as it would a
change made after the lock. A saved plan given to `apply --plan FILE` is compared with the
plans made under the lock.
"""

from __future__ import annotations

from collections.abc import Sequence

from provisioning.run.engine import Phase, RunContext
from provisioning.run.kind import RunKind, layers_of
from provisioning.run.state import RunState


class Relock(Phase):
    """Take the run's lock, then have every kind read again what the run may change and
    plan it again under the lock (see the module docstring)."""

    name = "lock"
    needs_lock = True
    records_view = True
    replans = True

    def __init__(self, kinds: Sequence[RunKind]) -> None:
        self._kinds = tuple(kinds)
        self._phases = [(k, tuple(k.relock_phases(layers_of(self._kinds, k.name))))
                        for k in self._kinds]
        # What a phase reads that an earlier one of these writes is this phase's own doing
        # (a kind's plan kept or not, read by the kinds planned on its plan).
        reads: list[str] = ["states", *(f for k in self._kinds for f in k.planned_reads)]
        written: set[str] = set()
        for _, phases in self._phases:
            for phase in phases:
                reads += [f for f in phase.reads if f not in written]
                written.update(phase.writes)
        self.reads = tuple(dict.fromkeys(reads))
        self.writes = tuple(dict.fromkeys(
            [*(f"{k.name}.rows" for k in self._kinds),
             *(f for _, phases in self._phases for p in phases for f in p.writes)]))

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return any(k.sends_changes(ctx, state) for k in self._kinds)

    def run(self, ctx: RunContext, state: RunState) -> None:
        # The first pass's rows are gone with its records (the engine dropped them).
        for kind in self._kinds:
            state.slice(kind.name).rows.clear()
        for _, phases in self._phases:
            for phase in phases:
                if phase.needed(ctx, state):
                    phase.run(ctx, state)
