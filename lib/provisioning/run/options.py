"""What each command was asked to do, as frozen, typed options (one class per command)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame

# A hook given the judged PLAN rows once the plan phase is recorded and before any
# validate or apply request; it may raise to stop the run (a stale saved plan).
PlanHook = Callable[[DataFrame], None]


@dataclass(frozen=True)
class Scope:
    """The clusters (all of the conf's when empty) and topics a run looks at."""

    clusters: tuple[str, ...] = ()
    topics_glob: str | None = None


@dataclass(frozen=True, kw_only=True)
class _Pipeline:
    """What `plan` and `apply` share."""

    scope: Scope = Scope()
    on_plan: PlanHook | None = None
    # The same for the judged ACL_PLAN rows (runs that manage ACLs).
    on_acl_plan: PlanHook | None = None
    # Topics listed in the output (the rest are counted; `report --run-id` lists them all).
    listing_limit: int = 500


@dataclass(frozen=True, kw_only=True)
class PlanOptions(_Pipeline):
    """`plan`: compute the plan and, unless `validate` is off, run the validateOnly pass."""

    validate: bool = True
    command: str = "plan"


@dataclass(frozen=True, kw_only=True)
class ApplyOptions(_Pipeline):
    """`apply`: plan, validateOnly (always), then create, and delete and alter when allowed."""

    allow_deletes: bool = False
    allow_alter: bool = False
    # Revoke the ACL bindings the plan revokes (`state: absent`, unlisted removals).
    allow_revokes: bool = False
    # Start (and finish) the replica moves the plan has (REASSIGN, and an ALTER's moves).
    allow_reassign: bool = False
    command: str = "apply"


@dataclass(frozen=True, kw_only=True)
class ImportOptions:
    """`import`: write the live topics in scope as manifest rows to `table`."""

    table: str
    scope: Scope = Scope()
    # Delta save mode: "error" refuses a table that exists, or "append", "overwrite".
    mode: str = "error"
    owner: str | None = None
    with_assignment: bool = False
    include_protected: bool = False
    command: str = "import"


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
