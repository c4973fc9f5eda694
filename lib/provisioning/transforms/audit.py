"""AUDIT rows: the plan's verdict per topic, and every admin result joined back to its plan row."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from provisioning import names
from provisioning.transforms.drift import override_map
from provisioning.transforms.shape import to_schema
from schemas import tables


def plan_outcome() -> Column:
    """The plan phase's outcome of a PLAN row; every row matches exactly one case."""
    invalid = F.size("row_errors") > 0
    # The job may not see the topic: neither present nor absent can be claimed.
    unseen = ~invalid & F.col("live_error").isNotNull()
    blocked = ~invalid & ~unseen & (F.size("policy_violations") > 0)
    clean = ~invalid & ~unseen & ~blocked
    wants_absent = F.coalesce(F.col("state") == names.ABSENT, F.lit(False))
    action = F.col("action")
    return (
        F.when(invalid, names.REJECTED)
        .when(unseen, names.FAILED)
        .when(blocked, names.BLOCKED)
        .when(clean & (action == names.DRIFT), names.DRIFTED)
        .when(clean & (action == names.NOOP) & ~wants_absent, names.ALREADY_PRESENT)
        .when(clean & (action == names.NOOP) & wants_absent, names.ALREADY_ABSENT)
        # Every other action is a change to make: CREATE, DELETE, ALTER, or the action a
        # kind extending the topics' rows gives a row.
        .when(clean & action.isNotNull(), names.PLANNED)
    )


def plan_outcome_counts(plan: DataFrame) -> DataFrame:
    """PLAN rows counted per cluster, action and plan outcome: cluster, action, outcome, n."""
    return (plan.groupBy("cluster", "action", plan_outcome().alias("outcome"))
            .agg(F.count(F.lit(1)).alias("n"))
            .select("cluster", "action", "outcome", "n"))


def plan_error_message(seen_check: bool = True) -> Column:
    """Why a plan row is not simply planned: its row errors, that the job may not see the
    topic (`live_error`, unless `seen_check` is off: another kind's plan rows have none), its policy
    violations."""
    violations = F.transform("policy_violations",
                             lambda v: F.concat(v["policy"], F.lit(": "), v["message"]))
    invalid = F.when(F.size("row_errors") > 0, F.array_join("row_errors", "; "))
    if seen_check:
        unseen = F.format_string(
            "the job may not see topic %s on cluster %s (%s): it may or may not exist, so "
            "it was neither created, deleted nor compared; grant the job's principal "
            "Describe and DescribeConfigs on it (README: Least privilege)",
            F.col("topic"), F.col("cluster"), F.col("live_error"))
        invalid = invalid.when(F.col("live_error").isNotNull(), unseen)
    return invalid.when(F.size("policy_violations") > 0, F.array_join(violations, "; "))


def plan_error_name(seen_check: bool = True) -> Column:
    """The error name of `plan_error_message`'s reason."""
    name = F.when(F.size("row_errors") > 0, F.lit(names.INVALID_MANIFEST_ROW))
    if seen_check:
        name = name.when(F.col("live_error").isNotNull(), F.col("live_error"))
    return name.when(F.size("policy_violations") > 0, F.lit(names.POLICY_VIOLATION))


def _requested(prefix: str = "") -> dict[str, Column]:
    return {
        "requested_partitions": F.col(f"{prefix}partitions"),
        "requested_replication_factor": F.col(f"{prefix}replication_factor"),
        "requested_configs": F.col(f"{prefix}configs"),
        "requested_assignment": F.col(f"{prefix}replica_assignment"),
    }


def _before_and_ops(prefix: str = "") -> dict[str, Column]:
    """ALTER rows: the live partitions and own overrides before, and the config operations
    to send; null for every other action."""
    alter = F.col(f"{prefix}action") == names.ALTER
    live_configs = F.coalesce(F.col(f"{prefix}live_configs"),
                              F.array().cast(tables.AUDIT["result_configs"].dataType))
    return {
        "before_partitions": F.when(alter, F.col(f"{prefix}live_partitions")),
        "before_configs": F.when(alter, override_map(live_configs)),
        "config_ops": F.when(alter, F.col(f"{prefix}config_ops")),
    }


def plan_audit(plan: DataFrame, run_id: str, recorded_at: dt.datetime, audit: StructType
               ) -> DataFrame:
    """One `audit` row (the run's audit schema, `RunContext.audit`) per PLAN row, phase
    `plan`; the columns a kind extending the topics' rows added to the plan (and the audit
    has) carried as they are, the rest null."""
    return to_schema(plan, audit, {
        "run_id": F.lit(run_id),
        "topic_id": F.col("live_topic_id"),
        "phase": F.lit(names.PLAN),
        "outcome": plan_outcome(),
        "error_code": F.lit(None),
        "error_name": plan_error_name(),
        "error_message": plan_error_message(),
        **_requested(),
        "recorded_at": F.lit(recorded_at),
        **_before_and_ops(),
    })


def result_columns(run_id: str, recorded_at: dt.datetime) -> dict[str, Column]:
    """The AUDIT columns every admin result row takes alike, of any kind: from the
    result (aliased `r`) and the plan row it was joined to (aliased `p`)."""
    return {
        "run_id": F.lit(run_id),
        "cluster": F.col("r.cluster"),
        "action": F.col("p.action"),
        "phase": F.col("r.phase"),
        "outcome": F.col("r.outcome"),
        "error_code": F.col("r.error_code"),
        "error_name": F.col("r.error_name"),
        "error_message": F.col("r.error_message"),
        "policy_violations": F.col("p.policy_violations"),
        "attempts": F.col("r.attempts"),
        "owner": F.col("p.owner"),
        "source_table": F.col("p.source_table"),
        "source_version": F.col("p.source_version"),
        "recorded_at": F.lit(recorded_at),
    }


def result_audit(results: DataFrame, plan: DataFrame, run_id: str, recorded_at: dt.datetime,
                 audit: StructType, action: str | None = None) -> DataFrame:
    """`audit` rows (as `plan_audit`) for TOPIC_RESULT rows, with the request taken from
    their PLAN row; the audit's other columns from the result row when it has them, else
    from the plan row (what a kind extending the topics' rows added to either), else null.

    action: the rows' action instead of their plan row's (a kind extending the topics'
      rows gives its own rows of an ALTER row its own action).
    """
    r = results.alias("r")
    p = plan.alias("p")
    joined = r.join(p, on=[F.col("r.cluster") == F.col("p.cluster"),
                           F.col("r.topic") == F.col("p.topic")], how="left")
    given = {
        **result_columns(run_id, recorded_at),
        "topic": F.col("r.topic"),
        "topic_id": F.coalesce("r.topic_id", "p.live_topic_id"),
        **_requested("p."),
        **_before_and_ops("p."),
    }
    if action is not None:
        given["action"] = F.lit(action)
    # The sides' columns from their own DataFrames: the plan's schema is asked once a run.
    return to_schema(joined, audit, given, sources=("r.", "p."),
                     known={"r.": results.columns, "p.": plan.columns})


def phase_order() -> Column:
    """A phase's position in a run (plan 0 ... verify 3), for ordering audit rows."""
    order = F.create_map(*[F.lit(x) for i, phase in enumerate(names.PHASES) for x in (phase, i)])
    return order[F.col("phase")]


def final_rows(rows: DataFrame, *subject: str | Column) -> DataFrame:
    """The audit rows of one run that hold each subject's final outcome: for every
    `subject` (the topics': cluster, topic, action; an entity kind's: the cluster and the
    entity), the rows of the last phase that recorded it (an ALTER that is also changed by
    a kind extending the topics' rows ends twice: its ALTER rows and that kind's rows).

    A subject's later phases pick up where its earlier ones stopped (a planned CREATE is
    validated, a validated one applied, an applied one verified), so the last phase's row
    is where it ended. Rows of invalid or duplicate manifest rows never leave the plan
    phase, so each of them stays a final row of its own.
    """
    by = subject or ("cluster", "topic", "action")
    return (rows.withColumn("_phase", phase_order())
            .withColumn("_last", F.max("_phase").over(Window.partitionBy(*by)))
            .where(F.col("_phase") == F.col("_last"))
            .drop("_phase", "_last"))
