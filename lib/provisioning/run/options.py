"""What each command was asked to do, as frozen, typed options (one class per command).

What a kind adds to a command (an apply's `--allow-*` flags, its saved-plan hook, its
import's switches) is keyed by the kind's own names, so these classes name no kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame

# A hook given a kind's judged plan rows once its plan phase is recorded and before any
# validate or apply request; it may raise to stop the run (a stale saved plan).
PlanHook = Callable[[DataFrame], None]


@dataclass(frozen=True)
class Scope:
    """The clusters (all of the conf's when empty) and topics a run looks at."""

    clusters: tuple[str, ...] = ()
    topics_glob: str | None = None

    @property
    def narrowed(self) -> bool:
        """Whether the run looks at some subjects of its clusters only (`--topics`): a
        kind whose subjects the narrowing does not name is not managed by such a run."""
        return self.topics_glob is not None


@dataclass(frozen=True, kw_only=True)
class _Pipeline:
    """What `plan` and `apply` share."""

    scope: Scope = Scope()
    # kind name -> the hook its plan phase calls with its judged plan rows.
    on_plan: Mapping[str, PlanHook] = field(default_factory=dict)
    # Called once the run's plan is final, before any request (the saved plan's check
    # that every kind's section was compared).
    plans_done: Callable[[], None] | None = None
    # Subjects listed in the output (the rest are counted; `report --run-id` lists them
    # all).
    listing_limit: int = 500
    # kind name -> the ids of its manifest rows the run is narrowed to (a kind's own
    # command run on one of its rows); a kind not named here: every row.
    subjects: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def hook(self, kind: str) -> PlanHook | None:
        return self.on_plan.get(kind)


@dataclass(frozen=True, kw_only=True)
class PlanOptions(_Pipeline):
    """`plan`: compute the plan and, unless `validate` is off, run the validateOnly pass."""

    validate: bool = True
    command: str = "plan"

    def allows(self, change: str) -> bool:
        """A plan makes no change; it plans (and validates) every kind of change."""
        return False


@dataclass(frozen=True, kw_only=True)
class ApplyOptions(_Pipeline):
    """`apply`: plan, validateOnly (always), then create and grant; the changes `allowed`
    names (each kind's `--allow-*` flags: cli.<kind>) as well."""

    allowed: frozenset[str] = frozenset()
    command: str = "apply"

    def allows(self, change: str) -> bool:
        """Whether `--allow-<change>` was given (`deletes`, `alter`, ...)."""
        return change in self.allowed


@dataclass(frozen=True, kw_only=True)
class ImportOptions:
    """`import`: write the live `kind` in scope as manifest rows to `table`."""

    kind: str
    table: str
    scope: Scope = Scope()
    # Delta save mode: "error" refuses a table that exists, or "append", "overwrite".
    mode: str = "error"
    owner: str | None = None
    # The kind's own switches of its import (cli.<kind>), by name.
    switches: Mapping[str, Any] = field(default_factory=dict)
    command: str = "import"

    def switch(self, name: str) -> Any:
        return self.switches.get(name)


@dataclass(frozen=True, kw_only=True)
class SnapshotOptions:
    """`snapshot`: record every live topic of the selected clusters."""

    scope: Scope = Scope()
    command: str = "snapshot"


@dataclass(frozen=True, kw_only=True)
class CheckOptions:
    """`check`: judge every live topic of the selected clusters (and `scope`'s topics)."""

    scope: Scope = Scope()
    command: str = "check"


RunOptions = PlanOptions | ApplyOptions
AnyOptions = RunOptions | ImportOptions | SnapshotOptions | CheckOptions
IMPORT_MODES = ("error", "append", "overwrite")
