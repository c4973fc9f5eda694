"""Quota audit rows: the plan's verdict per quota, admin results joined to their plan row,
each quota's final rows, and the results of quotas no answer settled."""

from __future__ import annotations

import datetime as dt
from typing import Any

from chispa import assert_df_equality
from pyspark.sql import SparkSession

from provisioning.kinds.quotas.model import MODEL
from provisioning.kinds.quotas.plan import UNLISTED_KEPT, UNLISTED_REMOVED
from provisioning.registry import AUDIT
from tests.builders import audit_df, violation
from tests.quota_builders import quota, quota_plan_df, quota_result_df

# The audit rows of quotas, on the entity base.
quota_plan_audit, quota_result_audit = MODEL.plan_audit, MODEL.result_audit
quota_final_rows = MODEL.final_rows
quota_without_answer = MODEL.without_answer
AT = dt.datetime(2026, 11, 22, 3, 0, 0)
APP = {"entity_user": "app"}
PAIR = {"entity_user": "<default>", "entity_client_id": "c1"}


def plan_row(key: str, action: str, value: float | None = None,
             live_value: float | None = None, entity: dict[str, str] | None = None,
             **cols: Any) -> dict[str, Any]:
    """A plan row of cluster local from a present row of q@4 by team (unless told)."""
    return {"cluster": "local", **(entity or APP), "key": key, "action": action,
            "state": "present", "value": value, "live_value": live_value, "owner": "team",
            "source_table": "q", "source_version": 4, **cols}


def audit(phase: str, outcome: str, q: dict[str, Any] | None, action: str | None = None,
          **cols: Any) -> dict[str, Any]:
    return {"run_id": "r1", "cluster": "local", "action": action, "phase": phase,
            "outcome": outcome, "owner": "team", "source_table": "q", "source_version": 4,
            "policy_violations": [], "recorded_at": AT, "quota": q, **cols}


def test_plan_outcome_of_every_kind_of_quota_row(spark: SparkSession) -> None:
    blocked = violation("quota_range", "too much")
    unsourced = {"owner": None, "source_table": None, "source_version": None}
    plan = quota_plan_df(spark, [
        plan_row("producer_byte_rate", "SET", 1e6, 5e5),
        plan_row("consumer_byte_rate", "REMOVE", None, 1e6, state="absent"),
        plan_row("foo_rate", "SET", 1.0, row_errors=["quotas.foo_rate: x", "cluster: y"]),
        plan_row("request_percentage", "SET", 900.0, policy_violations=[blocked]),
        plan_row("request_percentage", "NOOP", 50.0, 50.0, entity=PAIR),
        plan_row("controller_mutation_rate", "NOOP", state="absent"),
        plan_row("connection_creation_rate", "NOOP", None, 5.0, {"entity_ip": "<default>"},
                 note=UNLISTED_KEPT, **unsourced),
        plan_row("producer_byte_rate", "REMOVE", None, 7.0, {"entity_user": "old"},
                 state="absent", note=UNLISTED_REMOVED, **unsourced),
    ])
    expected = audit_df(spark, [
        audit("plan", "planned", quota(APP, "producer_byte_rate", 1e6, 5e5), "SET"),
        audit("plan", "planned", quota(APP, "consumer_byte_rate", None, 1e6), "REMOVE"),
        audit("plan", "rejected", quota(APP, "foo_rate", 1.0), "SET",
              error_name="INVALID_MANIFEST_ROW", error_message="quotas.foo_rate: x; cluster: y"),
        audit("plan", "blocked", quota(APP, "request_percentage", 900.0), "SET",
              error_name="POLICY_VIOLATION", error_message="quota_range: too much",
              policy_violations=[blocked]),
        audit("plan", "already_present", quota(PAIR, "request_percentage", 50.0, 50.0),
              "NOOP"),
        audit("plan", "already_absent", quota(APP, "controller_mutation_rate"), "NOOP"),
        audit("plan", "already_present",
              quota({"entity_ip": "<default>"}, "connection_creation_rate", None, 5.0), "NOOP",
              note=UNLISTED_KEPT, **unsourced),
        audit("plan", "planned", quota({"entity_user": "old"}, "producer_byte_rate", None, 7.0),
              "REMOVE", note=UNLISTED_REMOVED, **unsourced),
    ])
    assert_df_equality(quota_plan_audit(plan, "r1", AT, AUDIT), expected, ignore_row_order=True,
                       ignore_nullable=True)


def test_results_take_the_action_owner_source_value_asked_and_value_before_from_the_plan(
        spark: SparkSession) -> None:
    blocked = violation("quota_range", "too much")
    plan = quota_plan_df(spark, [
        plan_row("producer_byte_rate", "SET", 1e6, 5e5, entity=PAIR),
        plan_row("producer_byte_rate", "SET", 2e6, entity={"entity_user": "<default>"},
                 owner="other", policy_violations=[blocked]),
        plan_row("consumer_byte_rate", "REMOVE", None, 1e6, entity=PAIR, state="absent",
                 note="why")])
    results = quota_result_df(spark, [
        {"cluster": "local", **PAIR, "key": "producer_byte_rate", "phase": "verify",
         "outcome": "set", "attempts": 1, "result_value": 1e6},
        {"cluster": "local", **PAIR, "key": "consumer_byte_rate", "phase": "apply",
         "outcome": "failed", "error_code": 42, "error_name": "INVALID_REQUEST",
         "error_message": "no", "attempts": 2},
        {"cluster": "local", "entity_user": "nobody", "key": "producer_byte_rate",
         "phase": "apply", "outcome": "unknown"}])
    expected = audit_df(spark, [
        audit("verify", "set", quota(PAIR, "producer_byte_rate", 1e6, 1e6), "SET",
              attempts=1),
        audit("apply", "failed", quota(PAIR, "consumer_byte_rate", None, 1e6), "REMOVE",
              error_code=42,
              error_name="INVALID_REQUEST", error_message="no", attempts=2, note="why"),
        audit("apply", "unknown", quota({"entity_user": "nobody"}, "producer_byte_rate"),
              owner=None, source_table=None, source_version=None, policy_violations=None),
    ])
    assert_df_equality(quota_result_audit(results, plan, "r1", AT, AUDIT), expected,
                       ignore_row_order=True, ignore_nullable=True)


def test_each_quota_ends_at_the_last_phase_that_recorded_it(spark: SparkSession) -> None:
    set_rate = quota(APP, "producer_byte_rate", 1e6)
    rows = [
        audit("plan", "planned", {**set_rate, "found": 5e5}, "SET"),
        audit("validate", "validated", set_rate, "SET"),
        audit("apply", "set", set_rate, "SET"),
        audit("verify", "set", {**set_rate, "found": 1e6}, "SET"),
        audit("plan", "rejected", quota(APP, "foo_rate", 1.0), "SET"),
        audit("plan", "planned", quota(PAIR, "producer_byte_rate", 1e6), "SET"),
        audit("validate", "failed", quota(PAIR, "producer_byte_rate", 1e6), "SET"),
        audit("plan", "planned", quota(APP, "producer_byte_rate", 1e6), "SET",
              cluster="other"),
    ]
    final = quota_final_rows(audit_df(spark, rows))
    assert_df_equality(final, audit_df(spark, [rows[3], rows[4], rows[6], rows[7]]),
                       ignore_row_order=True)



def test_quotas_no_answer_settled_get_a_result_of_their_own(spark: SparkSession) -> None:
    targets = quota_plan_df(spark, [
        plan_row("producer_byte_rate", "SET", 1e6),
        plan_row("consumer_byte_rate", "REMOVE", entity=PAIR, state="absent")])
    actual = quota_without_answer(targets, "apply", "failed", "NOT_SENT",
                                  "the run stopped first", attempts=0)
    common = {"cluster": "local", "phase": "apply", "outcome": "failed",
              "error_name": "NOT_SENT", "error_message": "the run stopped first",
              "attempts": 0}
    assert_df_equality(actual, quota_result_df(spark, [
        {**common, **APP, "key": "producer_byte_rate"},
        {**common, **PAIR, "key": "consumer_byte_rate"}]), ignore_row_order=True,
        ignore_nullable=True)
