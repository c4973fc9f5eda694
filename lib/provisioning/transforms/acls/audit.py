"""AUDIT rows of ACL bindings: the plan's verdict per binding, and every admin result joined
back to its plan row. A binding's row has `acl` (the binding) set and `topic` null.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from provisioning import names
from provisioning.names import acls as acl_names
from provisioning.transforms.audit import (
    phase_order,
    plan_error_message,
    plan_error_name,
    result_columns,
)
from provisioning.transforms.shape import to_schema
from schemas import ACL_BINDING_STRUCT, ACL_RESULT, AUDIT, BINDING_KEY, column_names

_BINDING = column_names(ACL_BINDING_STRUCT)


def acl_struct(prefix: str = "") -> Column:
    """The binding columns of an ACL_PLAN / ACL_RESULT row as the audit's `acl` struct."""
    return F.struct(*[F.col(f"{prefix}{c}").alias(c) for c in _BINDING]).alias("acl")


def acl_plan_outcome() -> Column:
    """The plan phase's outcome of an ACL_PLAN row; every row matches exactly one case."""
    invalid = F.coalesce(F.size("row_errors") > 0, F.lit(False))
    blocked = ~invalid & (F.size("policy_violations") > 0)
    clean = ~invalid & ~blocked
    action = F.col("action")
    return (F.when(invalid, names.REJECTED)
            .when(blocked, names.BLOCKED)
            .when(clean & action.isin(acl_names.GRANT, acl_names.REVOKE), names.PLANNED)
            .when(clean & (action == names.NOOP) & (F.col("state") == names.ABSENT),
                  names.ALREADY_ABSENT)
            .otherwise(names.ALREADY_PRESENT))


def acl_plan_audit(plan: DataFrame, run_id: str, recorded_at: dt.datetime) -> DataFrame:
    """One AUDIT row per ACL_PLAN row, phase `plan` (the audit's other columns null)."""
    return to_schema(plan.select(
        F.lit(run_id).alias("run_id"),
        "cluster",
        "action",
        F.lit(names.PLAN).alias("phase"),
        acl_plan_outcome().alias("outcome"),
        plan_error_name(seen_check=False).alias("error_name"),
        plan_error_message(seen_check=False).alias("error_message"),
        "policy_violations",
        "owner",
        "source_table",
        "source_version",
        F.lit(recorded_at).cast("timestamp").alias("recorded_at"),
        acl_struct(),
        "note",
    ), AUDIT)


def acl_result_audit(results: DataFrame, plan: DataFrame, run_id: str,
                     recorded_at: dt.datetime) -> DataFrame:
    """AUDIT rows for ACL_RESULT rows, with the action, owner and source of their plan row."""
    r, p = results.alias("r"), plan.alias("p")
    on = [F.col(f"r.{c}").eqNullSafe(F.col(f"p.{c}")) for c in ("cluster", *_BINDING)]
    joined = r.join(p, on=on, how="left")
    return to_schema(joined.select(
        *[column.alias(name) for name, column in result_columns(run_id, recorded_at).items()],
        acl_struct("r."),
        F.col("p.note").alias("note"),
    ), AUDIT)


def acl_final_rows(rows: DataFrame) -> DataFrame:
    """The AUDIT rows of one run's bindings that hold each binding's final outcome: the
    rows of the last phase that recorded it (as `transforms.audit.final_rows` for topics)."""
    return (rows.withColumn("_phase", phase_order())
            .withColumn("_last", F.max("_phase").over(Window.partitionBy("cluster", "acl")))
            .where(F.col("_phase") == F.col("_last"))
            .select(*column_names(AUDIT)))


def is_binding_row() -> Column:
    """AUDIT rows about an ACL binding (topic rows have no `acl`)."""
    return F.col("acl").isNotNull()


def acl_without_answer(targets: DataFrame, phase: str, outcome: str, error_name: str,
                       message: str, attempts: int = 0) -> DataFrame:
    """ACL_RESULT rows of `phase` for the bindings of `targets` (ACL_PLAN or ACL_BINDING
    rows) that no broker answer settled: `outcome` with `error_name` and `message` (bindings
    a phase never sent, `failed`; those whose answers a failed Spark job lost, `unknown`)."""
    given = {"phase": F.lit(phase), "outcome": F.lit(outcome),
             "error_name": F.lit(error_name), "error_message": F.lit(message),
             "attempts": F.lit(attempts)}
    return targets.select(*[
        F.col(c) if c in BINDING_KEY
        else given.get(c, F.lit(None)).cast(ACL_RESULT[c].dataType).alias(c)
        for c in column_names(ACL_RESULT)])
