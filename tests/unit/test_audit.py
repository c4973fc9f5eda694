"""Audit rows: the plan's verdict per row, and admin results joined to their plan row."""

from __future__ import annotations

import datetime as dt
from typing import Any

from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning.registry import AUDIT
from provisioning.run.summary import counted_and_listed
from provisioning.transforms.audit import final_rows, plan_audit, result_audit
from schemas import TOPIC_RESULT
from tests.builders import audit_df, plan_df, rows_df, violation

AT = dt.datetime(2026, 11, 22, 3, 0, 0)


def row(topic: str, action: str, **cols: Any) -> dict[str, Any]:
    return {"cluster": "local", "topic": topic, "action": action, "source_table": "m",
            "source_version": 4, "owner": "team", "row_errors": [], "drift": [], **cols}


def audit(topic: str, action: str, phase: str, outcome: str, **cols: Any) -> dict[str, Any]:
    return {"run_id": "r1", "cluster": "local", "topic": topic, "action": action,
            "phase": phase, "outcome": outcome, "owner": "team", "source_table": "m",
            "source_version": 4, "drift": [], "policy_violations": [], "recorded_at": AT,
            **cols}


def test_plan_outcome_of_every_kind_of_row(spark: SparkSession) -> None:
    v = violation("partitions_range", "too many")
    plan = plan_df(spark, [
        row("new", "CREATE", partitions=3, configs={"a": "b"}),
        row("old", "DELETE", state="absent", live_topic_id="id-old"),
        row("bad", "CREATE", row_errors=["topic: x", "partitions: y"]),
        row("big", "CREATE", policy_violations=[v]),
        row("same", "NOOP", live_topic_id="id-same"),
        row("gone", "NOOP", state="absent"),
        row("moved", "DRIFT", drift=[{"field": "partitions", "desired": "2", "actual": "1",
                                      "supported": True}]),
    ])
    expected = audit_df(spark, [
        audit("new", "CREATE", "plan", "planned", requested_partitions=3,
              requested_configs={"a": "b"}),
        audit("old", "DELETE", "plan", "planned", topic_id="id-old"),
        audit("bad", "CREATE", "plan", "rejected", error_name="INVALID_MANIFEST_ROW",
              error_message="topic: x; partitions: y"),
        audit("big", "CREATE", "plan", "blocked", error_name="POLICY_VIOLATION",
              error_message="partitions_range: too many", policy_violations=[v]),
        audit("same", "NOOP", "plan", "already_present", topic_id="id-same"),
        audit("gone", "NOOP", "plan", "already_absent"),
        audit("moved", "DRIFT", "plan", "drift", drift=[
            {"field": "partitions", "desired": "2", "actual": "1", "supported": True}]),
    ])
    assert_df_equality(plan_audit(plan, "r1", AT, AUDIT), expected, ignore_row_order=True,
                       ignore_nullable=True)


def test_results_take_the_request_from_the_plan(spark: SparkSession) -> None:
    plan = plan_df(spark, [row("new", "CREATE", partitions=3, configs={"a": "b"})])
    returned = [{"name": "a", "value": "b", "source": "DYNAMIC_TOPIC_CONFIG",
                 "read_only": False, "sensitive": False}]
    results = rows_df(spark, TOPIC_RESULT, [{
        "cluster": "local", "topic": "new", "phase": "apply", "outcome": "created",
        "topic_id": "id-new", "error_code": 0, "error_name": "NONE", "result_partitions": 3,
        "result_replication_factor": 1, "result_configs": returned, "attempts": 1}])
    expected = audit_df(spark, [audit(
        "new", "CREATE", "apply", "created", topic_id="id-new", error_code=0,
        error_name="NONE", requested_partitions=3, requested_configs={"a": "b"},
        result_partitions=3, result_replication_factor=1, result_configs=returned,
        attempts=1)])
    assert_df_equality(result_audit(results, plan, "r1", AT, AUDIT), expected, ignore_nullable=True)


def test_topic_the_job_may_not_see_fails_in_the_plan_whatever_the_manifest_says(
        spark: SparkSession) -> None:
    hidden = "TOPIC_AUTHORIZATION_FAILED"
    plan = plan_df(spark, [
        row("h1", "NOOP", partitions=2, live_error=hidden),
        row("h2", "NOOP", state="absent", live_error=hidden),
        row("h3", "NOOP", row_errors=["partitions: 0 is not > 0"], live_error=hidden),
    ])

    def message(topic: str) -> str:
        return (f"the job may not see topic {topic} on cluster local ({hidden}): it may or may "
                "not exist, so it was neither created, deleted nor compared; grant the job's "
                "principal Describe and DescribeConfigs on it (README: Least privilege)")

    expected = audit_df(spark, [
        audit("h1", "NOOP", "plan", "failed", error_name=hidden, error_message=message("h1"),
              requested_partitions=2),
        audit("h2", "NOOP", "plan", "failed", error_name=hidden, error_message=message("h2")),
        # a bad manifest row is reported as such first
        audit("h3", "NOOP", "plan", "rejected", error_name="INVALID_MANIFEST_ROW",
              error_message="partitions: 0 is not > 0"),
    ])
    assert_df_equality(plan_audit(plan, "r1", AT, AUDIT), expected, ignore_row_order=True,
                       ignore_nullable=True)


def test_final_rows_are_each_topics_last_phase(spark: SparkSession) -> None:
    rows = [
        audit("created", "CREATE", "plan", "planned"),
        audit("created", "CREATE", "validate", "validated"),
        audit("created", "CREATE", "apply", "created"),
        audit("created", "CREATE", "verify", "created"),
        audit("refused", "CREATE", "plan", "planned"),
        audit("refused", "CREATE", "validate", "rejected"),
        audit("failed", "CREATE", "plan", "planned"),
        audit("failed", "CREATE", "validate", "validated"),
        audit("failed", "CREATE", "apply", "failed"),
        audit("kept", "DELETE", "plan", "planned"),
        audit("same", "NOOP", "plan", "already_present"),
        # two copies of one topic, both rejected in the plan: each is a final row
        audit("twice", "CREATE", "plan", "rejected", source_version=1),
        audit("twice", "CREATE", "plan", "rejected", source_version=2),
        # rows without a topic never leave the plan either
        {**audit("", "CREATE", "plan", "rejected"), "topic": None},
        {**audit("", "CREATE", "plan", "rejected", source_version=5), "topic": None},
    ]
    expected = [rows[3], rows[5], rows[8], *rows[9:]]
    assert_df_equality(final_rows(audit_df(spark, rows)), audit_df(spark, expected),
                       ignore_row_order=True, ignore_nullable=True)


def test_an_alter_that_moves_replicas_ends_with_its_alter_and_its_moves(
        spark: SparkSession) -> None:
    rows = [
        audit("both", "ALTER", "plan", "planned"),
        audit("both", "ALTER", "validate", "validated"),
        audit("both", "REASSIGN", "validate", "validated"),
        audit("both", "ALTER", "apply", "altered"),
        audit("both", "ALTER", "verify", "altered"),
        # the moves were not made (no --allow-reassign): checked is where they ended
        audit("moved", "REASSIGN", "plan", "planned"),
        audit("moved", "REASSIGN", "validate", "validated"),
        audit("moved", "REASSIGN", "apply", "reassigning"),
        audit("moved", "REASSIGN", "verify", "reassigning"),
    ]
    assert_df_equality(final_rows(audit_df(spark, rows)),
                       audit_df(spark, [rows[2], rows[4], rows[8]]),
                       ignore_row_order=True, ignore_nullable=True)


def test_final_rows_are_counted_and_the_unsettled_listed_in_order(
        spark: SparkSession) -> None:
    final = spark.createDataFrame(
        [("c2", f"t{i:02d}", "ALTER", "verify", "altered" if i % 3 else "failed")
         for i in range(12)]
        + [("c1", "z", "NOOP", "plan", "already_present"), (None, None, "CREATE", "plan",
                                                            "rejected")],
        "cluster string, topic string, action string, phase string, outcome string",
    ).repartition(4)

    def listed(rows: DataFrame) -> DataFrame:
        return (rows.where(F.col("outcome") != "already_present")
                .orderBy(F.col("cluster").asc_nulls_first(), "topic").select("cluster", "topic"))

    grouped, shown = counted_and_listed(final, listed, 5)
    assert sorted(map(tuple, grouped), key=repr) == sorted([
        ("c2", "ALTER", "verify", "altered", 8), ("c2", "ALTER", "verify", "failed", 4),
        ("c1", "NOOP", "plan", "already_present", 1), (None, "CREATE", "plan", "rejected", 1),
    ], key=repr)
    assert {tuple(r.asDict()) for r in grouped} == {("cluster", "action", "phase",
                                                     "outcome", "n")}
    assert [tuple(r) for r in shown] == [(None, None), ("c2", "t00"), ("c2", "t01"),
                                         ("c2", "t02"), ("c2", "t03")]
    counted, none = counted_and_listed(final, None, 5)
    assert (sorted(map(tuple, counted), key=repr), none) == (sorted(map(tuple, grouped),
                                                                    key=repr), [])
    settled = final.where(F.col("outcome") == "already_present")
    assert [tuple(r) for r in counted_and_listed(settled, listed, 5)[0]] == [
        ("c1", "NOOP", "plan", "already_present", 1)]
    assert counted_and_listed(settled, listed, 5)[1] == []
