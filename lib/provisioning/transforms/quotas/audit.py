"""AUDIT rows of client quotas: the plan's verdict per quota, and every admin result joined
back to its plan row. A quota's row has `quota` (its entity, key, the value asked for and the
value found) set and `topic` null.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from provisioning import names
from provisioning.names.quotas import REMOVE, SET_ACTION
from provisioning.transforms.audit import (
    phase_order,
    plan_error_message,
    plan_error_name,
    result_columns,
)
from provisioning.transforms.shape import to_schema
from schemas import AUDIT, column_names
from schemas.quotas import ENTITY_COLUMNS, QUOTA_KEY, QUOTA_RESULT

# What tells one quota from another in the audit: the `quota` struct's entity and key (its
# value and found differ from phase to phase).
_QUOTA_IDENTITY = [*ENTITY_COLUMNS, "key"]


def quota_struct(prefix: str, value: Column, found: Column) -> Column:
    """The audit's `quota` struct: the entity and key of the row aliased `prefix` (`""`,
    `"r."`), the value asked for and the value found."""
    return F.struct(*[F.col(f"{prefix}{c}").alias(c) for c in _QUOTA_IDENTITY],
                    value.alias("value"), found.alias("found")).alias("quota")


def quota_plan_outcome() -> Column:
    """The plan phase's outcome of a QUOTA_PLAN row; every row matches exactly one case (an
    unlisted key left alone is `already_present`: it stays as it is)."""
    invalid = F.coalesce(F.size("row_errors") > 0, F.lit(False))
    blocked = ~invalid & F.coalesce(F.size("policy_violations") > 0, F.lit(False))
    clean = ~invalid & ~blocked
    action = F.col("action")
    noop = action == names.NOOP
    absent = F.coalesce(F.col("state") == names.ABSENT, F.lit(False))
    return (F.when(invalid, names.REJECTED)
            .when(blocked, names.BLOCKED)
            .when(clean & action.isin(SET_ACTION, REMOVE), names.PLANNED)
            .when(clean & noop & absent, names.ALREADY_ABSENT)
            .when(clean & noop & ~absent, names.ALREADY_PRESENT))


def quota_plan_audit(plan: DataFrame, run_id: str, recorded_at: dt.datetime) -> DataFrame:
    """One AUDIT row per QUOTA_PLAN row, phase `plan`: `quota.found` is the live value (the
    audit's other columns null)."""
    return to_schema(plan.select(
        F.lit(run_id).alias("run_id"),
        "cluster",
        "action",
        F.lit(names.PLAN).alias("phase"),
        quota_plan_outcome().alias("outcome"),
        plan_error_name(seen_check=False).alias("error_name"),
        plan_error_message(seen_check=False).alias("error_message"),
        "policy_violations",
        "owner",
        "source_table",
        "source_version",
        F.lit(recorded_at).cast("timestamp").alias("recorded_at"),
        quota_struct("", F.col("value"), F.col("live_value")),
        "note",
    ), AUDIT)


def quota_result_audit(results: DataFrame, plan: DataFrame, run_id: str,
                       recorded_at: dt.datetime) -> DataFrame:
    """AUDIT rows for QUOTA_RESULT rows, with the action, owner, source, violations and value
    asked of their plan row (matched by cluster, entity and key, nulls equal). `quota.found`
    is what the broker held when the phase looked: the value verify read back, or the live
    value the plan read for validate and apply (their answers carry no value)."""
    r, p = results.alias("r"), plan.alias("p")
    on = [F.col(f"r.{c}").eqNullSafe(F.col(f"p.{c}")) for c in QUOTA_KEY]
    joined = r.join(p, on=on, how="left")
    return to_schema(joined.select(
        *[column.alias(name) for name, column in result_columns(run_id, recorded_at).items()],
        quota_struct("r.", F.col("p.value"),
                     F.when(F.col("r.phase") == names.VERIFY, F.col("r.result_value"))
                     .otherwise(F.col("p.live_value"))),
        F.col("p.note").alias("note"),
    ), AUDIT)


def quota_final_rows(rows: DataFrame) -> DataFrame:
    """The AUDIT rows of one run's quotas that hold each quota's final outcome: the rows of
    the last phase that recorded it (as `transforms.audit.final_rows` for topics). A quota
    is its cluster, entity and key: the value found changes from phase to phase."""
    identity = [F.col(f"quota.{c}") for c in _QUOTA_IDENTITY]
    return (rows.withColumn("_phase", phase_order())
            .withColumn("_last", F.max("_phase").over(Window.partitionBy("cluster", *identity)))
            .where(F.col("_phase") == F.col("_last"))
            .select(*column_names(AUDIT)))


def is_quota_row() -> Column:
    """AUDIT rows about a client quota (topic rows have no `quota`)."""
    return F.col("quota").isNotNull()


def quota_without_answer(targets: DataFrame, phase: str, outcome: str, error_name: str,
                         message: str, attempts: int = 0) -> DataFrame:
    """QUOTA_RESULT rows of `phase` for the quotas of `targets` (QUOTA_PLAN rows, or any rows
    with the QUOTA_KEY columns) that no broker answer settled: `outcome` with `error_name`
    and `message` (quotas a phase never sent, `failed`; those whose answers a failed Spark
    job lost, `unknown`)."""
    given = {"phase": F.lit(phase), "outcome": F.lit(outcome),
             "error_name": F.lit(error_name), "error_message": F.lit(message),
             "attempts": F.lit(attempts)}
    return targets.select(*[
        F.col(c) if c in QUOTA_KEY
        else given.get(c, F.lit(None)).cast(QUOTA_RESULT[c].dataType).alias(c)
        for c in column_names(QUOTA_RESULT)])
