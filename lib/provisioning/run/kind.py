"""A kind's part of the run package: its slice of the state, its phases per step, what it
reads again under the lock, whether its plan changes anything, its summary.

The command lists (`run.commands`), the re-plan under the lock (`run.relock`) and the run's
summary (`run.summary`) loop over the kinds the command line hands them (`RunContext.kinds`)
through this interface and name none of them.

A kind may extend another kind's rows (`extends`: its changes are changes of them). Its
`layer` then plans on the other kind's plan rows, inside that kind's plan phase (before
and after its policies) and its re-read under the lock; its own phases validate, send and
verify what it planned. The extended kind is given their layers with its phases
(`layers_of`) and names none of them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pyspark.sql import DataFrame
from pyspark.sql.types import StructField

from provisioning.conf import Conf
from provisioning.delta.tables import JobTable
from provisioning.run.engine import Phase, RunContext
from provisioning.run.state import KindState, RunState

# The steps of a command's phase list, in order; each kind gives its phases of a step.
MANIFESTS, SNAPSHOT, PLAN, VALIDATE, APPLY = "manifests", "snapshot", "plan", "validate", "apply"
PIPELINE_STEPS = (MANIFESTS, SNAPSHOT, PLAN, VALIDATE, APPLY)
# `check`, `import`, `snapshot`: each kind's phases of the command, whole.
CHECK, IMPORT, RECORD = "check", "import", "record"

# (cluster, action, plan outcome) -> rows: a kind's plan, counted.
PlanCounts = Mapping[tuple[str, str, str], int]


class PlanLayer(ABC):
    """What a kind that extends another kind's rows does inside that kind's plan.

    reads, writes: the state `attach`, `judge` and `planned` touch, added to the
      declarations of the extended kind's plan phase;
    relock_reads, relock_writes: what `set_aside_first_plan`, `reread` and
      `restore_first_plan` touch besides, added to the extended kind's re-read under the
      lock.
    """

    reads: ClassVar[tuple[str, ...]] = ()
    writes: ClassVar[tuple[str, ...]] = ()
    relock_reads: ClassVar[tuple[str, ...]] = ()
    relock_writes: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def attach(self, ctx: RunContext, state: RunState, rows: DataFrame, counts: PlanCounts,
               live: DataFrame) -> DataFrame:
        """The extended kind's plan rows (before its policies) with what this layer plans
        on them: its own columns added, actions it takes over changed. `live`: every live
        row of the run's clusters."""

    @abstractmethod
    def judge(self, ctx: RunContext, state: RunState, rows: DataFrame, counts: PlanCounts,
              live: DataFrame) -> DataFrame:
        """The plan rows (after the extended kind's policies) judged by the layer's own
        policies."""

    @abstractmethod
    def planned(self, ctx: RunContext, state: RunState, plan: DataFrame,
                counts: PlanCounts) -> None:
        """The plan is final: keep what the layer's later phases need of it."""

    @abstractmethod
    def reread(self, ctx: RunContext, state: RunState) -> tuple[bool, list[tuple[str, str]]]:
        """Under the run's lock, read again what the layer plans on: whether it is as the
        first read had it (else the extended kind plans again), and the keys of the
        extended kind's rows the layer needs read again."""

    @abstractmethod
    def set_aside_first_plan(self, ctx: RunContext, state: RunState) -> Mapping[str, object]:
        """Under the lock, before planning again: what the first pass planned (given back
        to `restore_first_plan` when the first plan is kept); clears it."""

    @abstractmethod
    def restore_first_plan(self, ctx: RunContext, state: RunState,
                           first: Mapping[str, object]) -> None:
        """The first plan is kept under the lock: restore what `set_aside_first_plan`
        returned."""


class RunKind(ABC):
    """One kind's part of the run package."""

    name: ClassVar[str]
    State: ClassVar[type[KindState]]
    # The kind whose rows this one extends (its `layer` plans on them), or None.
    extends: ClassVar[str | None] = None
    layer: PlanLayer | None = None
    # The state `sends_changes` reads (the re-plan under the lock declares it).
    planned_reads: tuple[str, ...] = ()
    # An extending kind: the audit columns of its rows the extended kind's listing of a
    # run shows.
    listed_columns: ClassVar[tuple[str, ...]] = ()

    @property
    def audit_column(self) -> StructField | None:
        """The kind's own column of the audit table (`RunContext.audit`); None: its rows
        fill the shared columns alone."""
        return None

    def phases(self, step: str, layers: Sequence[PlanLayer] = ()) -> Sequence[Phase]:
        """The kind's phases of `step` (PIPELINE_STEPS, or CHECK, IMPORT, RECORD); `layers`:
        those of the kinds that extend this one (`layers_of`)."""
        return ()

    def relock_phases(self, layers: Sequence[PlanLayer] = ()) -> Sequence[Phase]:
        """What the kind reads again and plans again under an apply's lock; `layers` as for
        `phases`."""
        return ()

    def sends_changes(self, ctx: RunContext, state: RunState) -> bool:
        """Whether an apply with this run's flags sends this kind anything (or has a change
        under way to settle): what takes the run's lock. A change the flags do not allow
        is not sent, and takes no lock."""
        return False

    def plan_has_changes(self, state: RunState) -> bool:
        """Whether the kind's plan has anything to change, whatever the flags allow: a run
        whose kinds plan nothing records only its findings (`run.commits`). `state` is
        unguarded."""
        return False

    def plan_counts(self, state: RunState) -> PlanCounts:
        """The kind's plan rows per (cluster, action, plan outcome), as the runs row keeps
        them (empty when it planned nothing). `state` is unguarded."""
        return {}

    def job_tables(self, conf: Conf, command: str) -> Sequence[JobTable]:
        """The kind's own tables that `command` ("plan", "apply", "check", "import",
        "snapshot") reads before it writes them, made when missing as its run starts
        (`run.commands.job_tables`); its other tables are made by their first append."""
        return ()

    def imported(self, state: RunState) -> object:
        """What the kind's `import` wrote (its IMPORT phases ran), for the CLI to show."""
        return None

    def recorded(self, ctx: RunContext, state: RunState) -> object:
        """What the kind's `snapshot` phases (RECORD) recorded, for the CLI to show."""
        return None

    # The state field that holds the kind's `check` findings (VIOLATIONS rows), if any.
    findings_field: str | None = None

    def findings(self, state: RunState) -> DataFrame | None:
        """The VIOLATIONS rows of the kind's `check` phases (None: it judged nothing)."""
        field = self.findings_field
        if field is None:
            return None
        found: DataFrame | None = getattr(state.slice(self.name), field.split(".")[1])
        return found

    def summary(self, ctx: RunContext, state: RunState) -> object | None:
        """The kind's typed summary of the run (`results.<kind>`), or None when the run
        did not manage it. Made while the last commits land; `state` is unguarded."""
        return None

    def complete(self, state: RunState, summary: Any) -> None:
        """Fill what the run's side queries counted (they are done now) into the kind's
        `summary`."""
        return


def slices(kinds: Sequence[RunKind]) -> dict[str, type[KindState]]:
    """kind name -> its slice class, of each of `kinds`."""
    return {k.name: k.State for k in kinds}


def layers_of(kinds: Sequence[RunKind], name: str) -> tuple[PlanLayer, ...]:
    """The layers of the kinds (of `kinds`) that extend the kind `name`, in their order."""
    return tuple(k.layer for k in kinds if k.extends == name and k.layer is not None)


def layer_declarations(layers: Sequence[PlanLayer], relock: bool = False
                       ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(reads, writes) of `layers`: of their plan, or (`relock`) of their plan and their
    re-read under the lock."""
    return (tuple(f for layer in layers
                  for f in (*layer.reads, *(layer.relock_reads if relock else ()))),
            tuple(f for layer in layers
                  for f in (*layer.writes, *(layer.relock_writes if relock else ()))))
