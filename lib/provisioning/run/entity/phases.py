"""The phases of an entity kind (see `run.entity`), each named `<prefix> <step>` and
declaring the kind's own fields as `<name>.<field>`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.delta.idempotent import Transaction
from provisioning.delta.manifests import manifest_commits, write_manifest_frame
from provisioning.delta.snapshots import marked_view, record_view, same_rows
from provisioning.delta.tables import TableRef, table_exists
from provisioning.results import utc_now
from provisioning.run.engine import Phase, RunContext, log_counts, recorded, require
from provisioning.run.executors import answered
from provisioning.run.kind import PlanCounts
from provisioning.run.manifest_cache import manifest_rows
from provisioning.run.options import ApplyOptions, ImportOptions
from provisioning.run.phases import cut, record_plan
from provisioning.run.state import RunState
from provisioning.session import job_label
from provisioning.transforms.entity import per_cluster
from schemas import column_names
from schemas.check import VIOLATIONS

if TYPE_CHECKING:
    from provisioning.run.entity import EntityRunKind, EntitySlice


class EntityPhase(Phase):
    """A phase of an entity kind: named `<prefix> <step>`, its declarations `@field` for
    the kind's own fields."""

    step: ClassVar[str]
    own_reads: ClassVar[tuple[str, ...]] = ()
    own_writes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, kind: EntityRunKind, reads: tuple[str, ...] = (),
                 writes: tuple[str, ...] = ()) -> None:
        self.run_kind, self.model = kind, kind.model
        self.nouns = kind.model.nouns
        self.name = f"{self.nouns.prefix} {self.step}"
        self.kind = kind.name

        def own(fields: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(f.replace("@", f"{kind.name}.") for f in fields)

        self.reads = (*own(self.own_reads), *reads)
        self.writes = (*own(self.own_writes), *writes)

    def own(self, state: RunState) -> EntitySlice:
        return self.run_kind.slice(state)

    def answers(self, ctx: RunContext, state: RunState, requests: DataFrame,
                send: Callable[[RunContext, DataFrame], DataFrame], phase: str, lost: str,
                label: str) -> DataFrame:
        """What `send` (one of the kind's requests) got for `requests` (plan rows), the
        rows of a lost job `lost` (`run.executors.answered`), recorded as AUDIT rows of
        `phase` with their plan rows' action, owner and source."""
        own, model = self.own(state), self.model
        with job_label(ctx.spark, label):
            got = answered(send(ctx, requests), requests, phase, lost, model.without_answer)
            recorded(ctx, own, phase, model.result_audit(
                got, require(own.plan, "plan"), ctx.run_id, utc_now(), ctx.audit))
        return got


class Manifests(EntityPhase):
    """The kind's manifest rows, validated as data, of the run's clusters (rows naming no
    known cluster stay: they are rejected, whatever was selected); served by the shared
    Connect session's cache when an earlier run left them there (`run.manifest_cache`)."""

    step = "manifests"
    own_writes = ("@desired",)

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return self.run_kind.managed(ctx)

    def run(self, ctx: RunContext, state: RunState) -> None:
        known = tuple(ctx.conf.clusters)
        tables = self.run_kind.conf(ctx).manifests or ()
        what = f"{self.nouns.noun} manifest"
        with job_label(ctx.spark, f"{ctx.command}: read {what}s"):
            commits = manifest_commits(ctx.spark, tables, what)

            def validated() -> DataFrame:
                return self.run_kind.validated_rows(ctx, tables, commits)

            def finish(rows: DataFrame) -> DataFrame:
                selected = (F.col("cluster").isNull() | ~F.col("cluster").isin(*known)
                            | F.col("cluster").isin(*ctx.cluster_names))
                return rows.where(selected).localCheckpoint(eager=True)

            # Validated rows of every cluster: runs of other clusters share them.
            self.own(state).desired = manifest_rows(ctx.spark, what, commits, known,
                                                    validated, finish)
        ctx.steps.done(f"{what} read")


class Snapshot(EntityPhase):
    """Every live entity of the run's clusters (from the driver), and why the job may not
    read or change a cluster's; recorded in `tables.<prefix>_snapshots` before anything
    changes (only when a cluster changed since its last record, unless `always_record`:
    the view an apply changes Kafka on, or `check` judges)."""

    step = "snapshot"
    own_reads = ("@desired",)
    own_writes = ("@live", "@problems")

    def __init__(self, kind: EntityRunKind, always_record: bool = False) -> None:
        super().__init__(kind, reads=("states",))
        self.always_record = always_record

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return self.own(state).desired is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        own, prefix = self.own(state), self.nouns.prefix
        with job_label(ctx.spark, f"{ctx.command}: snapshot live {self.nouns.many}"):
            found, live = self.run_kind.read_for_plan(ctx, state)
            rows = marked_view(live, list(found), self.model.live,
                               column_names(self.model.snapshot), ctx.run_id, utc_now())
            table = TableRef(self.run_kind.conf(ctx).snapshots)
            txn = Transaction(f"topic-provisioning-{prefix}-snapshots-{ctx.run_id}", 1)
            ctx.commits.record(f"{prefix}-snapshot-write", lambda: record_view(
                rows, table, txn, sorted(found), f"the {self.nouns.noun} snapshot",
                always=self.always_record))
        own.live = live
        own.problems = {c: r.problem for c, r in found.items() if r.problem is not None}
        log_counts(self.name, started, {c: r.entities for c, r in found.items()},
                   self.nouns.one)
        ctx.steps.done(f"{self.nouns.noun} snapshot")


class Plan(EntityPhase):
    """The kind's manifest rows joined with the live entities (`EntityModel.plan`), judged
    by its policies; the plan's audit rows are the run's intent."""

    step = "plan"
    own_reads = ("@desired", "@live")
    own_writes = ("@plan", "@counts", "@unmanaged")
    records_view = True
    plans = True

    def __init__(self, kind: EntityRunKind) -> None:
        super().__init__(kind, kind.plan_reads, kind.plan_writes)

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return self.own(state).live is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        own, run_kind, model = self.own(state), self.run_kind, self.model
        desired, live = require(own.desired, "desired"), require(own.live, "live")
        noun = self.nouns.noun
        with job_label(ctx.spark, f"{ctx.command}: {noun} plan, policies"):
            plan = run_kind.planned_rows(ctx, state, desired, live)
            judged = model.judged(plan, run_kind.conf(ctx).policies,
                                  run_kind.policy_context(ctx, state), cut
                                  ).localCheckpoint(eager=True)
            counts = model.plan_counts(judged)
            ctx.steps.done(f"{noun} plan and policies")

        def count_left_alone() -> None:
            with job_label(ctx.spark, f"{ctx.command}: count unmanaged {self.nouns.many}"):
                own.unmanaged = per_cluster(model.unmanaged(live, desired))
                run_kind.count_left_alone(ctx, state, live)

        self._record(ctx, state, judged, counts, started,
                     (f"{self.nouns.prefix}-unmanaged", count_left_alone))

    def keep(self, ctx: RunContext, state: RunState, plan: DataFrame,
             counts: PlanCounts) -> None:
        """`plan` (with its `counts`) as this phase's plan, recorded as `run` records one:
        an apply's first plan, when the view read under its lock is the view it was made
        on (`ReplanUnderLock`); what the first pass counted off the run's path stands."""
        self._record(ctx, state, plan, counts, time.monotonic(), None)

    def _record(self, ctx: RunContext, state: RunState, plan: DataFrame, counts: PlanCounts,
                started: float, side: tuple[str, Callable[[], None]] | None) -> None:
        audit = self.model.plan_audit(plan, ctx.run_id, utc_now(), ctx.audit)
        record_plan(ctx, self.run_kind.name, self.own(state), plan, counts, audit, started,
                    self.name,
                    f"{ctx.command}: saved plan ({self.nouns.title})", side, self.nouns.one)


class ReplanUnderLock(EntityPhase):
    """Under an apply's lock (`run.relock`): the live entities read again and recorded (the
    view the run changes Kafka on, changed or not), then the first plan kept when that view
    is the one it was made on (every cluster's rows the same, compared by digest in one
    Spark job; the same clusters unreadable, for the same reason) and every kind whose
    state the plan reads kept its own first plan; else planned again whole. A kept plan is
    recorded as the plan phase records one; what the first pass counted off the run's path
    (the live entities no manifest names) stands."""

    step = "under the lock"
    own_reads = ("@desired", "@live", "@problems", "@plan", "@counts")
    own_writes = ("@kept_first_plan",)

    def __init__(self, kind: EntityRunKind) -> None:
        self._snapshot = Snapshot(kind, always_record=True)
        self._plan = Plan(kind)
        # The kinds whose state the plan reads: their first plans must stand too.
        self._upstream = tuple(dict.fromkeys(f.split(".")[0] for f in kind.plan_reads))
        super().__init__(
            kind,
            reads=tuple(dict.fromkeys([*self._snapshot.reads, *self._plan.reads,
                                       *(f"{k}.kept_first_plan" for k in self._upstream)])),
            writes=tuple(dict.fromkeys([*self._snapshot.writes, *self._plan.writes])))

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return self._snapshot.needed(ctx, state)

    def run(self, ctx: RunContext, state: RunState) -> None:
        own = self.own(state)
        first_live, first_problems = own.live, own.problems
        first_plan, first_counts = own.plan, own.counts
        self._snapshot.run(ctx, state)
        same = (first_live is not None and first_plan is not None
                and first_counts is not None and own.problems == first_problems
                and all(state.slice(k).kept_first_plan for k in self._upstream))
        if same:
            with job_label(ctx.spark, f"{ctx.command}: {self.nouns.noun} rows read again "
                                      "against the first read"):
                same = same_rows(require(first_live, "live"), require(own.live, "live"))
        own.kept_first_plan = same
        if not same:
            self._plan.run(ctx, state)
            return
        self._plan.keep(ctx, state, require(first_plan, "plan"),
                        require(first_counts, "counts"))
        ctx.steps.done(f"{self.nouns.noun} first plan kept under the lock")


class Validate(EntityPhase):
    """Before anything changes, every clean change checked (`EntityRunKind.validate`)."""

    step = "validate"
    own_reads = ("@plan", "@counts")
    own_writes = ("@validated",)
    runs_tasks = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return self.run_kind.planned(state, *self.model.changes) > 0

    def run(self, ctx: RunContext, state: RunState) -> None:
        own, model = self.own(state), self.model
        requests = require(own.plan, "plan").where(model.clean(*model.changes))
        own.validated = self.answers(
            ctx, state, requests, self.run_kind.validate, names.VALIDATE, names.FAILED,
            f"{ctx.command}: {self.run_kind.requests_named[0]}")
        ctx.steps.done(f"{self.nouns.noun} validate")


class Apply(EntityPhase):
    """The additions validate passed, and the removals the flags allow; batched per
    cluster (`<name>.batch_size` a request)."""

    step = "apply"
    own_reads = ("@plan", "@counts", "@validated")
    own_writes = ("@applied",)
    changes_kafka = True
    runs_tasks = True

    def __init__(self, kind: EntityRunKind) -> None:
        super().__init__(kind, kind.apply_reads)

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return (isinstance(ctx.options, ApplyOptions)
                and self.own(state).validated is not None
                and (self.run_kind.sends_changes(ctx, state)
                     or self.run_kind.removes_with_another_kind(ctx, state)))

    def requests(self, ctx: RunContext, state: RunState) -> DataFrame:
        """The plan rows this apply sends: validated, of the changes its flags allow."""
        own, model = self.own(state), self.model
        plan = require(own.plan, "plan").alias("p")
        passed = require(own.validated, "validated").where(
            F.col("outcome") == names.VALIDATED).alias("v")
        ok = plan.join(passed, on=model.same("p", "v"), how="left_semi")
        adds = ok.where(model.clean(model.adds))
        if model.adds not in self.run_kind.sent_actions(ctx):
            adds = adds.limit(0)
        return adds.unionByName(
            self.run_kind.removals_sent(ctx, state, ok.where(model.clean(model.removes))))

    def unreached(self, ctx: RunContext, state: RunState, error_name: str,
                  reason: str) -> DataFrame:
        model = self.model
        return model.result_audit(
            model.without_answer(self.requests(ctx, state), names.APPLY, names.FAILED,
                                 error_name, reason),
            require(self.own(state).plan, "plan"), ctx.run_id, utc_now(), ctx.audit)

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        own = self.own(state)
        applied = self.answers(ctx, state, self.requests(ctx, state), self.run_kind.change,
                               names.APPLY, names.UNKNOWN,
                               f"apply: {self.run_kind.requests_named[1]}")
        own.applied = applied
        ctx.commits.side(f"{self.nouns.prefix}-apply-count", lambda: log_counts(
            self.name, started, {r["outcome"]: int(r["n"]) for r in applied.groupBy(
                "outcome").agg(F.count(F.lit(1)).alias("n")).collect()}, self.nouns.one))
        ctx.steps.done(f"{self.nouns.noun} apply")


class Verify(EntityPhase):
    """Every change made (or `unknown`) read back; settles the `unknown` outcomes."""

    step = "verify"
    own_reads = ("@plan", "@applied")
    runs_tasks = True
    settles = True

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return self.own(state).applied is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        own, model = self.own(state), self.model
        plan = require(own.plan, "plan")
        applied = require(own.applied, "applied").where(F.col("outcome").isin(
            model.added, model.removed, names.UNKNOWN)).select(
            *model.key, F.col("outcome").alias("applied_outcome"))
        # Each request with apply's outcome beside it: a change whose apply went unanswered
        # may not be told from the read-back alone (a password rotation: it stays unknown).
        requests = plan.alias("p").join(applied.alias("a"), on=model.same("p", "a"),
                                        how="inner").select("p.*", "a.applied_outcome")
        self.answers(ctx, state, requests, self.run_kind.read_back, names.VERIFY, names.UNKNOWN,
                     f"apply: {self.run_kind.requests_named[2]}")
        ctx.steps.done(f"{self.nouns.noun} verify")


class Import(EntityPhase):
    """`import --<name>`: the live entities of the selected clusters that the conf's
    manifests do not name yet, as manifest rows (`EntityModel.manifest_rows`), written in
    one commit; Kafka is only read. Per cluster: rows and entities written, entities left
    out, and why a cluster had none to give."""

    step = "import"
    own_writes = ("@live", "@imported")

    def __init__(self, kind: EntityRunKind) -> None:
        super().__init__(kind, reads=("states",))

    def run(self, ctx: RunContext, state: RunState) -> None:
        options = ctx.options
        if not isinstance(options, ImportOptions):
            raise TypeError("the import phase needs ImportOptions")
        own, model, many = self.own(state), self.model, self.nouns.many
        table, mode = options.table, options.mode
        with job_label(ctx.spark, f"import: read live {many}"):
            found, live = self.run_kind.read_live(ctx)
        tables = [t for t in (self.run_kind.conf(ctx).manifests or ())
                  if t != table or mode == "append"]
        tables = [t for t in dict.fromkeys(tables) if table_exists(ctx.spark, TableRef(t))]
        kept = model.importable(live, self.run_kind.validated_rows(ctx, tables)).localCheckpoint(
            eager=True)
        rows = model.manifest_rows(kept, options.owner)
        with job_label(ctx.spark, f"import: write {table}"):
            version = write_manifest_frame(rows, table, mode)
        written = {r["cluster"]: (int(r["rows"]), int(r["entities"])) for r in
                   rows.groupBy("cluster").agg(F.count(F.lit(1)).alias("rows"),
                                               F.sum(model.row_entities()).alias("entities"))
                   .collect()}
        summary: list[dict[str, Any]] = []
        for c in ctx.clusters:
            read = found[c.name]
            n_rows, n = written.get(c.name, (0, 0))
            # A cluster that gave nothing says why.
            why = read.problem if read.problem is not None and not read.entities else None
            summary.append({"cluster": c.name, "rows_written": n_rows, f"{many}_written": n,
                            "left_out_managed": read.entities - n,
                            "error_name": why[0] if why else None,
                            "error_message": why[1] if why else None})
        ctx.record.outcome_counts = {"rows_written": sum(s["rows_written"] for s in summary),
                                     "table_version": version}
        own.live = live
        own.imported = {"table": table, "table_version": version, "clusters": summary}


class Check(EntityPhase):
    """`check`: every live entity no manifest row names, as a finding of the kind's rule
    (severity `info` unless `checks.severity` says otherwise; `off`: not judged). Nothing
    is sent to Kafka."""

    step = "check"
    own_reads = ("@desired", "@live")
    own_writes = ("@violations",)

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return self.own(state).live is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        own, rule = self.own(state), str(self.run_kind.check_rule)
        severity = ctx.conf.checks.severity.get(rule, names.INFO)
        if severity == names.OFF:
            return
        loose = self.model.unmanaged(require(own.live, "live"), require(own.desired,
                                                                        "desired"))
        own.violations = findings(ctx, loose, rule, severity, self.run_kind.finding()
                                  ).localCheckpoint(eager=True)
        ctx.steps.done(f"{self.nouns.noun} check")


def findings(ctx: RunContext, rows: DataFrame, rule: str, severity: str, detail: Column
             ) -> DataFrame:
    """VIOLATIONS rows of `rule` for `rows` (any rows with a `cluster`), each's `detail` a
    column over them: findings about no topic, of nothing the job manages."""
    now = utc_now()
    given = {
        "run_id": F.lit(ctx.run_id), "cluster": F.col("cluster"), "topic": F.lit(None),
        "rule": F.lit(rule), "severity": F.lit(severity), "detail": detail,
        "managed": F.lit(False), "owner": F.lit(None), "snapshot_at": F.lit(now),
        "recorded_at": F.lit(now),
    }
    return rows.select(*[given[f.name].cast(f.dataType).alias(f.name)
                         for f in VIOLATIONS.fields])
