"""An entity kind as pure transforms: what it declares, and what follows from that, written
once.

An entity kind manages a set of entities per cluster, each named by its identity (the `key`
columns beside the cluster) and holding attributes. Its model (`EntityModel`, in
`transforms/<kind>/`) declares its tables (`schemas.<kind>`: manifest, desired, live, plan,
result), its nouns, the plan actions that add and remove, its audit column and the struct
it holds there, and its own transforms: its manifest rows' validation, its plan, the live
entities no manifest row names, the manifest rows `import` writes, its policies.

Written here once, from those: each plan row's outcome, the audit rows of the plan and of
every admin result joined back to its plan row, each entity's final rows, the rows of
requests no answer settled, and the policy chain (always-on, then `policies.<prefix>` in
conf order, then the per-cluster cap over what the others let through).

Nothing here touches a session, the network or the disk.
"""

from __future__ import annotations

import datetime as dt
import functools
import operator
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from provisioning import names
from provisioning.conf import PolicySpec
from provisioning.names import Nouns
from provisioning.transforms.audit import (
    final_rows,
    plan_error_message,
    plan_error_name,
    result_columns,
)
from provisioning.transforms.policies import Cut, with_policies
from provisioning.transforms.policies.base import Transform, per_cluster_cap, with_violation
from provisioning.transforms.policies.columns import no_violations_yet
from provisioning.transforms.shape import to_schema
from provisioning.transforms.validation import is_valid
from schemas import column_names

# A policy of an entity kind: (its parameters, the kind's policy context) -> transform.
Factory = Callable[[Mapping[str, Any], Any], Transform]


@dataclass(frozen=True, kw_only=True)
class EntityPolicyContext:
    """What every entity kind's policies may read beside the plan (a kind's context adds its
    own).

    max_changes_per_cluster: `<name>.max_changes_per_cluster` (the cap, `cap_policy`).
    """

    max_changes_per_cluster: int = 200


@dataclass(frozen=True)
class Subject:
    """How an entity kind's policies name the entity of a plan row, and the plan's columns
    their closing select keeps.

    word: how a message names the entity; text: the entity as one line (a column over
    plan rows); schema: the kind's plan rows.
    """

    word: str
    text: Callable[[], Column]
    schema: StructType

    def message(self, text: str, *args: Column) -> Column:
        """"<word> <entity>: <text>" with `args` formatted into `text`."""
        return F.format_string(f"{self.word} %s: {text}", self.text(), *args)

    def violated(self, df: DataFrame, policy: str, refused: Column, message: Column
                 ) -> DataFrame:
        """`df` with `policy`'s violation on the `refused` rows, as the kind's plan rows."""
        return with_violation(df, policy, refused, message).select(
            *column_names(self.schema))


def force_hint(nouns: Nouns) -> str:
    """How a policy's message says it is lifted: by the manifest row's `force`."""
    return f"or set `force: true` on its {nouns.noun} manifest row"


def per_cluster(df: DataFrame) -> dict[str, int]:
    """Rows per cluster (one small Spark job)."""
    return {r["cluster"]: int(r["n"]) for r in
            df.groupBy("cluster").agg(F.count(F.lit(1)).alias("n")).collect()}


class EntityModel(ABC):
    """One entity kind's model (see the module docstring)."""

    nouns: ClassVar[Nouns]
    # Its tables: a manifest table's columns, its rows as read (source, row_errors), one live
    # entity, a snapshot row (a live one with its run and time), a plan row, an admin result.
    manifest: ClassVar[StructType]
    desired: ClassVar[StructType]
    live: ClassVar[StructType]
    snapshot: ClassVar[StructType]
    plan_schema: ClassVar[StructType]
    result: ClassVar[StructType]
    # The columns a manifest table must hold (`delta.manifests.read_manifests`).
    manifest_keys: ClassVar[tuple[str, ...]]
    # The cluster and the identity columns: what names one entity in every table above.
    key: ClassVar[tuple[str, ...]]
    # A live column null only on a snapshot's marker rows (one per cluster).
    marker: ClassVar[str]
    # Its plan actions: what adds or changes an entity's state, what removes it.
    adds: ClassVar[str]
    removes: ClassVar[str]
    # Its outcomes of an addition and of a removal made (the broker's word).
    added: ClassVar[str]
    removed: ClassVar[str]
    # Its column of the audit table (`RunKind.audit_column`), and the fields of the struct
    # there that name the entity (the others, values asked for or found, change from phase
    # to phase).
    audit_column: ClassVar[StructField]
    identity: ClassVar[tuple[str, ...]]
    # The manifest column whose size is how many entities a manifest row stands for (None:
    # a row stands for one).
    entity_list: ClassVar[str | None]
    # An entity as one line (a column over rows with its identity columns), the name of
    # that column in listings, and the order of listed rows.
    text: ClassVar[staticmethod[[], Column]]
    text_column: ClassVar[str]
    listing_order: ClassVar[tuple[str, ...]]
    # Its policies: those `policies.<prefix>` may name, the always-on ones (run first), and
    # what the per-cluster cap (run last, `Nouns.cap`) refuses, in its message.
    policies: ClassVar[Mapping[str, Factory]]
    always_on: ClassVar[tuple[tuple[str, Factory], ...]] = ()
    cap_refuses: ClassVar[str]
    # Whether its additions too are made only with its `--allow-*` flag (a request that
    # moves what consumers read is made only when asked for), not its removals alone.
    flag_adds: ClassVar[bool] = False

    # -- what the kind declares -------------------------------------------------------

    @abstractmethod
    def validation(self, known_clusters: tuple[str, ...]) -> Transform:
        """Manifest rows as read -> the same rows with `row_errors` (defaults filled)."""

    @abstractmethod
    def plan(self, desired: DataFrame, live: DataFrame, remove_unlisted: bool) -> DataFrame:
        """Plan rows (`plan_schema`, no violation yet) of the desired and live entities;
        with `remove_unlisted`, the live ones no manifest row names are planned removed."""

    @abstractmethod
    def unmanaged(self, live: DataFrame, desired: DataFrame) -> DataFrame:
        """The live rows no manifest row names (counted, listed, `check`'s finding)."""

    def importable(self, live: DataFrame, desired: DataFrame) -> DataFrame:
        """The live rows `import` writes: those the conf's manifests do not name yet."""
        return self.unmanaged(live, desired)

    @abstractmethod
    def manifest_rows(self, live: DataFrame, owner: str | None) -> DataFrame:
        """Manifest rows (`manifest`) for live rows: a plan over them changes nothing (each
        row's `entity_list` column holds the entities it stands for)."""

    def row_entities(self) -> Column:
        """How many entities a manifest row stands for (`entity_list`)."""
        return F.lit(1) if self.entity_list is None else F.size(self.entity_list)

    def plan_struct(self) -> Column:
        """The audit struct of a plan row: its identity."""
        return F.struct(*[F.col(c) for c in self.identity])

    def result_struct(self) -> Column:
        """The audit struct of an admin result (aliased `r`) joined to its plan row (`p`):
        the result's identity."""
        return F.struct(*[F.col(f"r.{c}").alias(c) for c in self.identity])

    # -- written once ------------------------------------------------------------------

    @property
    def changes(self) -> tuple[str, str]:
        return (self.adds, self.removes)

    @property
    def flagged(self) -> tuple[str, ...]:
        """The plan actions an apply makes only with the kind's `--allow-*` flag."""
        return self.changes if self.flag_adds else (self.removes,)

    def clean(self, *actions: str) -> Column:
        """Plan rows of `actions` that are valid and no policy refused."""
        return ((F.size("row_errors") == 0) & (F.size("policy_violations") == 0)
                & F.col("action").isin(*actions))

    def same(self, left: str, right: str) -> Column:
        """A join condition: the sides aliased `left` and `right` name the same entity (an
        identity column may be null: compared null-safe)."""
        return functools.reduce(operator.and_, [
            F.col(f"{left}.{c}").eqNullSafe(F.col(f"{right}.{c}")) for c in self.key])

    def plan_outcome(self) -> Column:
        """The plan phase's outcome of a plan row; every row matches exactly one case."""
        invalid = F.coalesce(F.size("row_errors") > 0, F.lit(False))
        blocked = ~invalid & F.coalesce(F.size("policy_violations") > 0, F.lit(False))
        clean = ~invalid & ~blocked
        noop = F.col("action") == names.NOOP
        absent = F.coalesce(F.col("state") == names.ABSENT, F.lit(False))
        return (F.when(invalid, names.REJECTED)
                .when(blocked, names.BLOCKED)
                .when(clean & F.col("action").isin(*self.changes), names.PLANNED)
                .when(clean & noop & absent, names.ALREADY_ABSENT)
                .when(clean & noop & ~absent, names.ALREADY_PRESENT))

    def plan_counts(self, plan: DataFrame) -> dict[tuple[str, str, str], int]:
        """Plan rows per (cluster, action, plan outcome): one small Spark job."""
        return {(r["cluster"], r["action"], r["outcome"]): int(r["n"]) for r in
                plan.groupBy("cluster", "action", self.plan_outcome().alias("outcome"))
                .agg(F.count(F.lit(1)).alias("n")).collect()}

    @property
    def column(self) -> str:
        """The name of its column of the audit table."""
        return self.audit_column.name

    def plan_audit(self, plan: DataFrame, run_id: str, recorded_at: dt.datetime,
                   audit: StructType) -> DataFrame:
        """One `audit` row per plan row, phase `plan` (the audit's other columns null)."""
        return to_schema(plan.select(
            F.lit(run_id).alias("run_id"),
            "cluster",
            "action",
            F.lit(names.PLAN).alias("phase"),
            self.plan_outcome().alias("outcome"),
            plan_error_name(seen_check=False).alias("error_name"),
            plan_error_message(seen_check=False).alias("error_message"),
            "policy_violations",
            "owner",
            "source_table",
            "source_version",
            F.lit(recorded_at).cast("timestamp").alias("recorded_at"),
            self.plan_struct().alias(self.column),
            "note",
        ), audit)

    def result_audit(self, results: DataFrame, plan: DataFrame, run_id: str,
                     recorded_at: dt.datetime, audit: StructType) -> DataFrame:
        """`audit` rows for admin results, with the action, owner, source, violations and note
        of their plan row (matched by the key, nulls equal)."""
        joined = results.alias("r").join(plan.alias("p"), on=self.same("r", "p"), how="left")
        return to_schema(joined.select(
            *[column.alias(name) for name, column in result_columns(run_id,
                                                                    recorded_at).items()],
            self.result_struct().alias(self.column),
            F.col("p.note").alias("note"),
        ), audit)

    def final_rows(self, rows: DataFrame) -> DataFrame:
        """The audit rows of one run's entities that hold each one's final outcome: the rows
        of the last phase that recorded it (`transforms.audit.final_rows`)."""
        return final_rows(rows, "cluster", *(F.col(f"{self.column}.{c}") for c in self.identity))

    def without_answer(self, targets: DataFrame, phase: str, outcome: str, error_name: str,
                       message: str, attempts: int = 0) -> DataFrame:
        """Result rows of `phase` for the entities of `targets` (any rows with the key
        columns) that no broker answer settled: `outcome` with `error_name` and `message`
        (never sent, `failed`; answers a failed Spark job lost, `unknown`)."""
        given = {"phase": F.lit(phase), "outcome": F.lit(outcome),
                 "error_name": F.lit(error_name), "error_message": F.lit(message),
                 "attempts": F.lit(attempts)}
        return targets.select(*[
            F.col(c) if c in self.key
            else given.get(c, F.lit(None)).cast(self.result[c].dataType).alias(c)
            for c in column_names(self.result)])

    # -- policies ----------------------------------------------------------------------

    def cap_policy(self, params: Mapping[str, Any], context: Any) -> Transform:
        """Over the per-run cap (`<name>.max_changes_per_cluster`), none of a cluster's
        changes is made (`transforms.policies.base.per_cluster_cap`); counts only the valid
        changes every other policy let through."""
        nouns = self.nouns
        return per_cluster_cap(
            nouns.cap, F.col("action").isin(*self.changes) & is_valid() & no_violations_yet(),
            context.max_changes_per_cluster, f"{nouns.noun} changes", self.cap_refuses,
            f"{nouns.name}.max_changes_per_cluster", column_names(self.plan_schema))

    def judged(self, plan: DataFrame, specs: Sequence[PolicySpec], context: Any,
               cut: Cut | None = None) -> DataFrame:
        """The valid plan rows with the violations of the always-on, the configured
        (`specs`, in order) and the cap policy appended; the rows with `row_errors` come
        back as they were.

        cut: applied to the judged rows after every few policies but the last ones (a plan
          too deep for Spark Connect, see `transforms.policies.Cut`).
        """
        prefix = self.nouns.prefix
        judged = with_policies(
            plan.where(is_valid()), specs, context, prefix, self.policies, self.always_on, cut,
            last=((self.nouns.cap, self.cap_policy),),
            schema=self.plan_schema, table=f"{prefix.upper()}_PLAN",
            who=f"the plan given to the {self.nouns.noun} policies")
        columns = column_names(self.plan_schema)
        return judged.select(*columns).unionByName(plan.where(~is_valid()).select(*columns))
