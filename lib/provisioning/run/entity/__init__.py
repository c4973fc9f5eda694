"""An entity kind's part of the run package, written once (see `transforms.entity`): its slice
of the state, its phases per step, what it reads again under the lock, whether its plan
changes anything, its summary, its `import` and its finding in `check`.

    <prefix> manifests -> <prefix> snapshot -> <prefix> plan -> <prefix> validate
      -> <prefix> apply -> <prefix> verify

A kind (`EntityRunKind`) brings its model and its requests: read the live entities (from
the driver), validate (the broker's validateOnly where the API has one, else the kind's own
check), change, read back (Spark tasks through `run.executors`). Its phases run only when
the conf names its manifests (`tables.<prefix>_manifests`) and the run is not narrowed to
some topics (`--topics`). Its AUDIT rows carry the entity in its audit column (topic null).
Additions are made by every apply; removals only with the kind's `--allow-*` flag
(`names.Nouns.removals`): a plan whose only changes are removals the flags do not
allow sends nothing and takes no lock.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructField

from provisioning import names
from provisioning.conf.entity import EntityConf
from provisioning.delta.manifests import read_validated
from provisioning.delta.tables import Commit
from provisioning.results import EntitySummary
from provisioning.run.engine import Phase, RunContext
from provisioning.run.entity.phases import (
    Apply,
    Check,
    Import,
    Manifests,
    Plan,
    ReplanUnderLock,
    Snapshot,
    Validate,
    Verify,
)
from provisioning.run.executors import on_executors
from provisioning.run.kind import (
    APPLY,
    CHECK,
    IMPORT,
    MANIFESTS,
    PLAN,
    SNAPSHOT,
    VALIDATE,
    PlanCounts,
    PlanLayer,
    RunKind,
)
from provisioning.run.options import ApplyOptions
from provisioning.run.state import KindState, RunState
from provisioning.run.summary import by_cluster_and_action, counted_and_listed, tally
from provisioning.transforms.entity import EntityModel

# The columns of a listed entity (beside its audit struct's fields and its text).
LISTED_COLUMNS = ("cluster", "action", "phase", "outcome", "error_name", "error_message",
                  "policy_violations", "note", "owner", "source_table", "source_version")


@dataclass
class EntitySlice(KindState):
    """What an entity kind's phases hand each other (each kind's slice is a subclass of its
    own); a field is None until a phase writes it."""

    desired: DataFrame | None = None        # manifest rows, validated
    live: DataFrame | None = None           # live rows
    plan: DataFrame | None = None           # judged plan rows
    # Plan rows per (cluster, action, plan outcome).
    counts: Mapping[tuple[str, str, str], int] | None = None
    validated: DataFrame | None = None      # validate's result rows
    applied: DataFrame | None = None        # apply's result rows
    # Live entities no manifest row names, per cluster.
    unmanaged: Mapping[str, int] | None = None
    # Why the job may not read or change a cluster's entities (error name, message).
    problems: Mapping[str, tuple[str, str]] | None = None
    imported: Mapping[str, Any] | None = None       # what `import` wrote
    violations: DataFrame | None = None             # `check`'s findings


@dataclass(frozen=True)
class ClusterRead:
    """What a kind read of one cluster: its live entities, and why the job may not read
    or change them there (error name, message), if so."""

    entities: int
    problem: tuple[str, str] | None


# A kind's work on one cluster's rows inside a Spark task: (rows, that cluster by name, its
# credentials by cluster, what the task is given of that cluster alone) -> result rows.
TaskWork = Callable[..., Iterator[tuple[Any, ...]]]


class EntityRunKind(RunKind):
    """An entity kind's part of the run package (see the module docstring)."""

    model: ClassVar[EntityModel]
    conf_class: ClassVar[type[EntityConf]]
    # The job labels of its requests: validate's, apply's, verify's.
    requests_named: ClassVar[tuple[str, str, str]]
    # The state of other kinds its plan reads (its own plan rows read theirs), what else of
    # its own its plan writes, and what of others its apply reads.
    plan_reads: ClassVar[tuple[str, ...]] = ()
    plan_writes: ClassVar[tuple[str, ...]] = ()
    apply_reads: ClassVar[tuple[str, ...]] = ()
    # The summary's words (its JSON keys) for the removals the flags did not allow, and for
    # why a cluster's entities could not be read or changed.
    summary_keys: ClassVar[tuple[str, str]]
    # Its rule in `check` (the live entities no manifest row names), or None: `check` does
    # not judge it.
    check_rule: ClassVar[str | None] = None

    def __init__(self) -> None:
        self.planned_reads = (f"{self.name}.counts",)
        self.findings_field = f"{self.name}.violations" if self.check_rule else None

    @property
    def audit_column(self) -> StructField:
        return self.model.audit_column

    # -- what the kind declares ---------------------------------------------------------

    @abstractmethod
    def read_live(self, ctx: RunContext) -> tuple[Mapping[str, ClusterRead], DataFrame]:
        """Every live entity of the run's clusters (from the driver), as what was read of
        each cluster and as live rows (materialized): `live_frame`."""

    def live_frame(self, ctx: RunContext, found: Mapping[str, tuple[Sequence[tuple[Any, ...]],
                                                                    tuple[str, str] | None]]
                   ) -> tuple[Mapping[str, ClusterRead], DataFrame]:
        """cluster -> (its live rows, cluster first; why they could not be read, if so) as
        `read_live` returns them."""
        rows = [row for _, (got, _) in sorted(found.items()) for row in got]
        return ({c: ClusterRead(len(got), problem) for c, (got, problem) in found.items()},
                ctx.spark.createDataFrame(rows, self.model.live).localCheckpoint(eager=True))

    def read_for_plan(self, ctx: RunContext, state: RunState
                      ) -> tuple[Mapping[str, ClusterRead], DataFrame]:
        """What the snapshot phase reads (its manifest rows are in the kind's slice): every
        live entity (`read_live`), unless the kind reads only what its rows name."""
        return self.read_live(ctx)

    @abstractmethod
    def validate(self, ctx: RunContext, requests: DataFrame) -> DataFrame:
        """The validate phase's result rows for the clean changes (plan rows)."""

    @abstractmethod
    def change(self, ctx: RunContext, requests: DataFrame) -> DataFrame:
        """The apply phase's result rows for the changes to make (plan rows)."""

    @abstractmethod
    def read_back(self, ctx: RunContext, requests: DataFrame) -> DataFrame:
        """The verify phase's result rows for the changes made (plan rows)."""

    def planned_rows(self, ctx: RunContext, state: RunState, desired: DataFrame,
                     live: DataFrame) -> DataFrame:
        """The plan rows before the policies."""
        return self.model.plan(desired, live, self.conf(ctx).remove_unlisted)

    @abstractmethod
    def policy_context(self, ctx: RunContext, state: RunState) -> Any:
        """What the kind's policies may read beside the plan."""

    def count_left_alone(self, ctx: RunContext, state: RunState, live: DataFrame) -> None:
        """Count, off the run's path, what else of the live entities the run leaves alone
        (into the fields of `plan_writes`)."""

    def removals_sent(self, ctx: RunContext, state: RunState, removals: DataFrame
                      ) -> DataFrame:
        """The validated removals this apply sends: all with the kind's flag, else none."""
        allowed = self.allows(ctx, self.model.nouns.removals)
        return removals if allowed else removals.limit(0)

    def removes_with_another_kind(self, ctx: RunContext, state: RunState) -> bool:
        """Whether this apply may send removals the kind's own flag does not cover (made
        with another kind's change, under that kind's flag and lock)."""
        return False

    def finding(self) -> Column:
        """The `detail` of a `check` finding about a live row no manifest row names."""
        raise NotImplementedError

    # -- written once --------------------------------------------------------------------

    def slice(self, state: RunState) -> EntitySlice:
        return cast(EntitySlice, state.slice(self.name))

    def conf(self, ctx: RunContext) -> EntityConf:
        return ctx.conf.section(self.conf_class)

    @staticmethod
    def allows(ctx: RunContext, change: str) -> bool:
        return isinstance(ctx.options, ApplyOptions) and ctx.options.allows(change)

    def managed(self, ctx: RunContext) -> bool:
        """Whether this run manages the kind: the conf names its manifests and the run is
        not narrowed to some subjects (`Scope.narrowed`)."""
        scope = getattr(ctx.options, "scope", None)
        return (self.conf(ctx).manifests is not None and scope is not None
                and not scope.narrowed)

    def planned(self, state: RunState, *actions: str) -> int:
        """Clean plan rows (outcome planned) of `actions`."""
        return sum(n for (_, action, outcome), n in (self.slice(state).counts or {}).items()
                   if action in actions and outcome == names.PLANNED)

    def sent_actions(self, ctx: RunContext) -> tuple[str, ...]:
        """The plan actions an apply sends: additions, and removals with the kind's flag."""
        model = self.model
        allowed = self.allows(ctx, model.nouns.removals)
        return tuple(a for a in model.changes if allowed or a not in model.flagged)

    def validated_rows(self, ctx: RunContext, tables: Sequence[str],
                       commits: Sequence[tuple[str, Commit]] | None = None) -> DataFrame:
        """The kind's manifest rows, validated as data (`row_errors`)."""
        return read_validated(ctx.spark, tables, self.model, tuple(ctx.conf.clusters), commits)

    def tasks(self, ctx: RunContext, rows: DataFrame, work: TaskWork,
              per_cluster: Mapping[str, Mapping[str, Any]] | None = None) -> DataFrame:
        """`work` over `rows` as Spark tasks, one per cluster, each given its own cluster's
        credentials only, and what `per_cluster` holds of its cluster as keyword arguments
        (`run.executors.on_executors`): one result row per row."""
        return on_executors(rows, work, ctx.clusters, ctx.credentials, self.model.result,
                            order=self.model.key, per_cluster=per_cluster)

    def phases(self, step: str, layers: Sequence[PlanLayer] = ()) -> Sequence[Phase]:
        checks = ((Manifests(self), Snapshot(self, always_record=True), Check(self))
                  if self.check_rule else ())
        return {
            MANIFESTS: (Manifests(self),),
            SNAPSHOT: (Snapshot(self),),
            PLAN: (Plan(self),),
            VALIDATE: (Validate(self),),
            APPLY: (Apply(self), Verify(self)),
            IMPORT: (Import(self),),
            # The view `check` judges is recorded, as its topics' is.
            CHECK: checks,
        }.get(step, ())

    def relock_phases(self, layers: Sequence[PlanLayer] = ()) -> Sequence[Phase]:
        return (ReplanUnderLock(self),)

    def sends_changes(self, ctx: RunContext, state: RunState) -> bool:
        return self.planned(state, *self.sent_actions(ctx)) > 0

    def plan_has_changes(self, state: RunState) -> bool:
        return self.planned(state, *self.model.changes) > 0

    def plan_counts(self, state: RunState) -> PlanCounts:
        return self.slice(state).counts or {}

    def summary(self, ctx: RunContext, state: RunState) -> EntitySummary | None:
        own = self.slice(state)
        if own.plan is None:
            return None
        options = ctx.options
        apply = options if isinstance(options, ApplyOptions) else None
        made = summarize(self, own.rows, getattr(options, "listing_limit", 500),
                         removals_allowed=apply is None or apply.allows(
                             self.model.nouns.removals))
        made.problems = {c: {"error_name": e, "error_message": m}
                         for c, (e, m) in sorted((own.problems or {}).items())}
        return made

    def complete(self, state: RunState, summary: Any) -> None:
        summary.unmanaged = dict(sorted((self.slice(state).unmanaged or {}).items()))

    def imported(self, state: RunState) -> Any:
        return self.slice(state).imported


class OneTaskKind(EntityRunKind):
    """An entity kind whose validate, change and read back are one executor function, told
    which by its phase's name (`names.VALIDATE`, `APPLY`, `VERIFY`): `results(rows, clusters
    by name, credentials, kafka conf, that name, batch size)` over the plan rows'
    `request_columns`, one result row per row."""

    request_columns: ClassVar[tuple[str, ...]]
    # The kind's executor work: a module-level function (pickled by reference), set as
    # `results = staticmethod(function)`.
    results: ClassVar[Callable[..., Iterator[tuple[Any, ...]]]]

    def send(self, ctx: RunContext, requests: DataFrame, phase: str) -> DataFrame:
        """`results` over the requests as Spark tasks, one per cluster."""
        kafka, size, results = ctx.conf.kafka, self.conf(ctx).batch_size, self.results
        return self.tasks(ctx, requests.select(*self.request_columns),
                          lambda rows, named, creds: results(rows, named, creds, kafka, phase,
                                                             size))

    def validate(self, ctx: RunContext, requests: DataFrame) -> DataFrame:
        return self.send(ctx, requests, names.VALIDATE)

    def change(self, ctx: RunContext, requests: DataFrame) -> DataFrame:
        return self.send(ctx, requests, names.APPLY)

    def read_back(self, ctx: RunContext, requests: DataFrame) -> DataFrame:
        return self.send(ctx, requests, names.VERIFY)


def summarize(kind: EntityRunKind, audit_rows: Sequence[DataFrame], listing_limit: int,
              removals_allowed: bool) -> EntitySummary:
    """What a run did with a kind's entities, from their AUDIT rows: outcome counts,
    entities per cluster and action, and the first `listing_limit` entities that are not
    simply settled (each with its one-line text).

    removals_allowed: False for an apply without the kind's removal flag (its validated
      or planned removals are counted as not made).
    """
    model, nouns = kind.model, kind.model.nouns
    final = model.final_rows(functools.reduce(DataFrame.unionByName, audit_rows))
    grouped, listed = counted_and_listed(
        final, lambda rows: rows.where(~F.col("outcome").isin(*names.SETTLED))
        .select(*LISTED_COLUMNS, f"{model.column}.*")
        .withColumn(model.text_column, model.text())
        .orderBy(*model.listing_order), listing_limit)
    counts, actions, total = tally(grouped)
    not_allowed = sum(int(r["n"]) for r in grouped
                      if not removals_allowed and r["action"] in model.flagged
                      and (r["phase"], r["outcome"]) in ((names.VALIDATE, names.VALIDATED),
                                                         (names.PLAN, names.PLANNED)))
    return EntitySummary(
        kind=nouns.name, many=nouns.many, removals_key=kind.summary_keys[0],
        problems_key=kind.summary_keys[1], counts=counts,
        actions=by_cluster_and_action(actions, nouns.many),
        listed=[r.asDict(recursive=True) for r in listed],
        not_listed=max(0, total - len(listed)),
        removals_not_allowed=not_allowed)
