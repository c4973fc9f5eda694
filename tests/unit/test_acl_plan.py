"""ACL plan: rows expanded to bindings, merged (present wins), joined with the live bindings;
unmanaged, orphaned and deleted topics' bindings."""

from __future__ import annotations

from typing import Any

from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from provisioning.kinds.acls.plan import (
    UNLISTED_NOTE,
    deleted_topic_bindings,
    expand_bindings,
    orphaned_bindings,
    plan_acls,
    unmanaged_bindings,
)
from provisioning.kinds.acls.validation import with_acl_row_errors
from tests.builders import acl_binding_df, acl_desired_df, acl_plan_df, rows_df, snapshot_df

APP = "User:orders-app"


def desired(spark: SparkSession, *rows: dict[str, Any]) -> DataFrame:
    """ACL_DESIRED rows on cluster local, validated (defaults filled)."""
    base = {"cluster": "local", "principal": APP, "resource_type": "TOPIC",
            "resource_name": "orders"}
    return acl_desired_df(spark, [{**base, **r} for r in rows]).transform(
        with_acl_row_errors(["local", "other"]))


def binding(operation: str, **cols: Any) -> dict[str, Any]:
    """A binding of APP on topic orders on cluster local."""
    return {"cluster": "local", "principal": APP, "resource_type": "TOPIC",
            "resource_name": "orders", "operation": operation, **cols}


def live(spark: SparkSession, *rows: dict[str, Any]) -> DataFrame:
    return acl_binding_df(spark, list(rows))


def planned(operation: str, action: str, live_now: bool, **cols: Any) -> dict[str, Any]:
    """A plan row of a binding from source a@1 that wants it present (unless told)."""
    return {**binding(operation), "action": action, "state": "present",
            "source_table": "a", "source_version": 1, "force": False, "live": live_now,
            **cols}


def assert_plan(actual: DataFrame, spark: SparkSession, rows: list[dict[str, Any]]) -> None:
    assert_df_equality(actual, acl_plan_df(spark, rows), ignore_row_order=True,
                       ignore_nullable=True)


# --- expansion ----------------------------------------------------------------------------


def test_one_row_is_one_binding_per_operation_with_shorthands_spelled_out(
        spark: SparkSession) -> None:
    rows = desired(spark, {"operations": ["PRODUCE", "CONSUME", "ALTER_CONFIGS"],
                           "owner": "orders"})
    common = {"state": "present", "owner": "orders", "force": None, "source_table": "a",
              "source_version": 1, "row_errors": []}
    schema = expand_bindings(rows).schema
    expected = rows_df(spark, schema, [
        {**binding(op, host="*", pattern_type="LITERAL", permission="ALLOW"), **common}
        for op in ("WRITE", "DESCRIBE", "READ", "ALTER_CONFIGS")])
    assert_df_equality(expand_bindings(rows), expected, ignore_row_order=True)


# --- the plan join -------------------------------------------------------------------------


def test_wanted_and_missing_is_a_grant_wanted_and_live_a_noop(spark: SparkSession) -> None:
    plan = plan_acls(desired(spark, {"operations": ["READ", "DESCRIBE"]}),
                     live(spark, binding("DESCRIBE")))
    assert_plan(plan, spark, [planned("READ", "GRANT", False),
                              planned("DESCRIBE", "NOOP", True)])


def test_absent_and_live_is_a_revoke_absent_and_missing_a_noop(spark: SparkSession) -> None:
    plan = plan_acls(desired(spark, {"operations": ["READ", "WRITE"], "state": "absent"}),
                     live(spark, binding("WRITE")))
    assert_plan(plan, spark, [planned("READ", "NOOP", False, state="absent"),
                              planned("WRITE", "REVOKE", True, state="absent")])


def test_every_part_of_a_binding_must_match_the_live_one(spark: SparkSession) -> None:
    plan = plan_acls(desired(spark, {"operations": ["READ"], "pattern_type": "PREFIXED",
                                     "host": "10.0.0.1", "permission": "DENY"}),
                     live(spark, binding("READ", pattern_type="PREFIXED", host="10.0.0.1"),
                          binding("READ", pattern_type="LITERAL", host="10.0.0.1",
                                  permission="DENY"),
                          binding("READ", pattern_type="PREFIXED", permission="DENY"),
                          binding("READ", pattern_type="PREFIXED", host="10.0.0.1",
                                  permission="DENY", cluster="other")))
    assert_plan(plan, spark, [planned("READ", "GRANT", False, pattern_type="PREFIXED",
                                      host="10.0.0.1", permission="DENY")])


def test_a_binding_two_rows_imply_is_one_binding(spark: SparkSession) -> None:
    plan = plan_acls(desired(spark, {"operations": ["PRODUCE"], "owner": "b"},
                             {"operations": ["CONSUME"], "owner": "a", "force": True}),
                     live(spark))
    assert_plan(plan, spark, [
        planned("WRITE", "GRANT", False, owner="b"),
        planned("READ", "GRANT", False, owner="a", force=True),
        # both rows want DESCRIBE: the first owner's row gives the source; force needs both
        planned("DESCRIBE", "GRANT", False, owner="a", force=False),
    ])


def test_present_wins_over_absent_and_the_note_names_the_losing_rows(
        spark: SparkSession) -> None:
    plan = plan_acls(
        desired(spark,
                {"operations": ["CONSUME"], "owner": "readers"},
                {"operations": ["DESCRIBE"], "state": "absent", "owner": "cleanup",
                 "source_table": "b", "source_version": 7},
                {"operations": ["DESCRIBE", "READ"], "state": "absent", "source_table": "c",
                 "source_version": 2}),
        live(spark, binding("DESCRIBE")))
    assert_plan(plan, spark, [
        planned("READ", "GRANT", False, owner="readers",
                note="also asked absent by c@2; present wins"),
        planned("DESCRIBE", "NOOP", True, owner="readers",
                note="also asked absent by b@7 (owner cleanup), c@2; present wins"),
    ])


def test_invalid_rows_are_planned_alone_with_their_reasons(spark: SparkSession) -> None:
    plan = plan_acls(desired(spark, {"operations": ["READ"]},
                             {"operations": ["READ", "IDEMPOTENT_WRITE"], "owner": "x"},
                             {"operations": [], "resource_name": "empty"}),
                     live(spark))
    wrong = ["operations: IDEMPOTENT_WRITE not valid on a TOPIC binding, which takes READ, "
             "WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS, ALL and "
             "the shorthands PRODUCE, CONSUME"]
    assert_plan(plan, spark, [
        planned("READ", "GRANT", False),
        planned("READ", "GRANT", False, owner="x", force=None, row_errors=wrong),
        planned("IDEMPOTENT_WRITE", "GRANT", False, owner="x", force=None, row_errors=wrong),
        planned(None, "GRANT", False, resource_name="empty", force=None,  # type: ignore[arg-type]
                row_errors=["operations: name at least one operation"]),
    ])


def test_unlisted_live_bindings_stay_out_of_the_plan_by_default(spark: SparkSession) -> None:
    plan = plan_acls(desired(spark, {"operations": ["READ"]}),
                     live(spark, binding("READ"), binding("WRITE", principal="User:other")))
    assert_plan(plan, spark, [planned("READ", "NOOP", True)])


def test_remove_unlisted_plans_a_revoke_for_every_unnamed_live_binding(
        spark: SparkSession) -> None:
    plan = plan_acls(
        desired(spark, {"operations": ["READ"]},
                # invalid, yet it names its bindings: they are not unlisted
                {"principal": "User:typo", "operations": ["READ", "CLUSTER_ACTION"]}),
        live(spark, binding("READ"), binding("WRITE", principal="User:other"),
             binding("READ", principal="User:typo")),
        remove_unlisted=True)
    wrong = ["operations: CLUSTER_ACTION not valid on a TOPIC binding, which takes READ, "
             "WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS, ALL and "
             "the shorthands PRODUCE, CONSUME"]
    assert_plan(plan, spark, [
        planned("READ", "NOOP", True),
        planned("READ", "NOOP", True, principal="User:typo", force=None, row_errors=wrong),
        planned("CLUSTER_ACTION", "GRANT", False, principal="User:typo", force=None,
                row_errors=wrong),
        {**binding("WRITE", principal="User:other"), "action": "REVOKE", "state": "absent",
         "live": True, "note": UNLISTED_NOTE},
    ])


# --- unmanaged, orphaned, deleted topics ---------------------------------------------------


def test_unmanaged_bindings_are_the_live_ones_no_row_names(spark: SparkSession) -> None:
    rows = desired(spark, {"operations": ["PRODUCE"]},
                   {"operations": ["READ"], "state": "absent"})
    got = unmanaged_bindings(live(spark, binding("WRITE"), binding("DESCRIBE"),
                                  binding("READ"), binding("READ", host="10.0.0.9"),
                                  binding("READ", cluster="other")), rows)
    assert_df_equality(got, live(spark, binding("READ", host="10.0.0.9"),
                                 binding("READ", cluster="other")), ignore_row_order=True)


def test_orphaned_bindings_are_literal_topic_ones_naming_no_live_topic(
        spark: SparkSession) -> None:
    bindings = live(
        spark,
        binding("READ", resource_name="gone"),
        binding("READ", resource_name="orders"),
        binding("READ", resource_name="gone", cluster="other"),
        binding("READ", resource_name="gon", pattern_type="PREFIXED"),
        binding("READ", resource_name="*"),
        binding("READ", resource_name="gone", resource_type="GROUP"))
    topics = snapshot_df(spark, [{"cluster": "local", "topic": "orders"},
                                 {"cluster": "other", "topic": "gone"}])
    assert_df_equality(orphaned_bindings(bindings, topics),
                       live(spark, binding("READ", resource_name="gone")))


def test_deleted_topics_take_their_literal_bindings_with_them(spark: SparkSession) -> None:
    bindings = live(
        spark,
        binding("READ", resource_name="old"),
        binding("WRITE", resource_name="old", principal="User:w", permission="DENY"),
        binding("READ", resource_name="ol", pattern_type="PREFIXED"),
        binding("READ", resource_name="old", resource_type="GROUP"),
        binding("READ", resource_name="old", cluster="other"),
        binding("READ", resource_name="orders"))
    deleted = snapshot_df(spark, [{"cluster": "local", "topic": "old"},
                                  {"cluster": "local", "topic": "old"}])
    note = ("topic old is deleted by this run; its literal bindings go with it "
            "(acls.revoke_with_deleted_topics)")
    assert_plan(deleted_topic_bindings(bindings, deleted), spark, [
        {**binding("READ", resource_name="old"), "action": "REVOKE", "state": "absent",
         "live": True, "note": note},
        {**binding("WRITE", resource_name="old", principal="User:w", permission="DENY"),
         "action": "REVOKE", "state": "absent", "live": True, "note": note},
    ])
