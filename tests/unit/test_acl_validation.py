"""ACL manifest rows validated as data: defaults filled, each problem a named reason."""

from __future__ import annotations

from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

from provisioning.kinds.acls.validation import with_acl_row_errors
from tests.builders import acl_desired_df

GOOD = {"cluster": "local", "principal": "User:orders-app", "resource_type": "TOPIC",
        "resource_name": "orders", "operations": ["READ"]}
FILLED = {"host": "*", "pattern_type": "LITERAL", "permission": "ALLOW", "state": "present"}


def check(spark: SparkSession, row: dict[str, Any], *errors: str,
          filled: dict[str, Any] | None = None) -> None:
    """`row` (over GOOD) validated: the defaults filled (or `filled`) and exactly `errors`."""
    given = {**GOOD, **row}
    expected = {**FILLED, **given, **(filled or {}), "row_errors": list(errors)}
    actual = acl_desired_df(spark, [given]).transform(with_acl_row_errors(["local", "other"]))
    assert_df_equality(actual, acl_desired_df(spark, [expected]))


def test_a_good_row_gets_its_defaults_and_no_error(spark: SparkSession) -> None:
    check(spark, {})


def test_given_values_are_kept_and_enums_upper_cased(spark: SparkSession) -> None:
    check(spark, {"host": "10.0.0.1", "resource_type": "topic", "pattern_type": "prefixed",
                  "resource_name": "orders.", "operations": ["Read", "produce"],
                  "permission": "deny", "state": "absent", "owner": "team", "force": True},
          filled={"resource_type": "TOPIC", "pattern_type": "PREFIXED",
                  "operations": ["READ", "PRODUCE"], "permission": "DENY"})


def test_earlier_errors_are_kept(spark: SparkSession) -> None:
    check(spark, {"row_errors": ["read: bad"]}, "read: bad")


def test_cluster_missing_or_unknown(spark: SparkSession) -> None:
    check(spark, {"cluster": None}, "cluster: is missing")
    check(spark, {"cluster": "prod"},
          "cluster: 'prod' is not defined in the conf (known: local, other)")


@pytest.mark.parametrize("principal", ["User:a", "User:CN=app,O=corp", "Group:x:y", "User:*"])
def test_principals_of_form_type_name_pass(spark: SparkSession, principal: str) -> None:
    check(spark, {"principal": principal})


@pytest.mark.parametrize("principal", ["orders-app", "User:", ":x", "User: a", "Us er:a"])
def test_principal_not_type_name(spark: SparkSession, principal: str) -> None:
    check(spark, {"principal": principal},
          f"principal: '{principal}' is not Type:name (e.g. User:orders-app)")


def test_principal_missing(spark: SparkSession) -> None:
    check(spark, {"principal": None}, "principal: is missing")
    check(spark, {"principal": ""}, "principal: is missing")


def test_unknown_resource_type_pattern_permission_and_state(spark: SparkSession) -> None:
    check(spark, {"resource_type": "USER", "pattern_type": "MATCH", "permission": "MAYBE",
                  "state": "gone"},
          "resource_type: 'USER' is not one of TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID",
          "pattern_type: 'MATCH' is not one of LITERAL, PREFIXED",
          "permission: 'MAYBE' is not one of ALLOW, DENY",
          "state: 'gone' must be present or absent")


def test_resource_type_missing(spark: SparkSession) -> None:
    check(spark, {"resource_type": None}, "resource_type: is missing")


def test_prefixed_needs_a_non_empty_name(spark: SparkSession) -> None:
    check(spark, {"pattern_type": "PREFIXED", "resource_name": ""},
          "resource_name: a PREFIXED binding needs a non-empty prefix")
    check(spark, {"pattern_type": "PREFIXED", "resource_name": None},
          "resource_name: a PREFIXED binding needs a non-empty prefix")


def test_literal_needs_a_name(spark: SparkSession) -> None:
    check(spark, {"resource_name": ""}, "resource_name: is missing or empty")


def test_wildcard_is_a_literal_name_only(spark: SparkSession) -> None:
    check(spark, {"resource_name": "*"})
    check(spark, {"resource_name": "*", "pattern_type": "PREFIXED"},
          "resource_name: '*' (every resource) is a LITERAL name only; a PREFIXED '*' would "
          "match only names that start with '*'")


def test_a_cluster_binding_is_literal_kafka_cluster(spark: SparkSession) -> None:
    check(spark, {"resource_type": "CLUSTER", "resource_name": "kafka-cluster",
                  "operations": ["IDEMPOTENT_WRITE", "ALTER"]})
    check(spark, {"resource_type": "CLUSTER", "resource_name": "prod",
                  "pattern_type": "PREFIXED", "operations": ["DESCRIBE"]},
          "resource_name: a CLUSTER binding names 'kafka-cluster', got 'prod'",
          "pattern_type: a CLUSTER binding is LITERAL")


@pytest.mark.parametrize(("resource_type", "operations"), [
    ("TOPIC", ["READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS",
               "ALTER_CONFIGS", "ALL", "PRODUCE", "CONSUME"]),
    ("GROUP", ["READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "ALL"]),
    ("TRANSACTIONAL_ID", ["DESCRIBE", "WRITE", "TWO_PHASE_COMMIT", "ALL"]),
])
def test_every_operation_of_kafkas_matrix_passes(spark: SparkSession, resource_type: str,
                                                 operations: list[str]) -> None:
    check(spark, {"resource_type": resource_type, "operations": operations})


def test_every_cluster_operation_passes(spark: SparkSession) -> None:
    check(spark, {"resource_type": "CLUSTER", "resource_name": "kafka-cluster",
                  "operations": ["CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS",
                                 "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "ALTER", "DESCRIBE",
                                 "ALL"]})


def test_operations_outside_the_matrix_are_named(spark: SparkSession) -> None:
    check(spark, {"operations": ["READ", "IDEMPOTENT_WRITE", "CLUSTER_ACTION"]},
          "operations: IDEMPOTENT_WRITE, CLUSTER_ACTION not valid on a TOPIC binding, which "
          "takes READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, "
          "ALTER_CONFIGS, ALL and the shorthands PRODUCE, CONSUME")
    check(spark, {"resource_type": "GROUP", "resource_name": "g", "operations": ["WRITE"]},
          "operations: WRITE not valid on a GROUP binding, which takes READ, DESCRIBE, "
          "DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS, ALL")


def test_shorthands_are_for_topics_only(spark: SparkSession) -> None:
    check(spark, {"resource_type": "TRANSACTIONAL_ID", "resource_name": "tx",
                  "operations": ["PRODUCE"]},
          "operations: PRODUCE not valid on a TRANSACTIONAL_ID binding, which takes "
          "DESCRIBE, WRITE, TWO_PHASE_COMMIT, ALL")


def test_unknown_operations_are_named_apart(spark: SparkSession) -> None:
    check(spark, {"operations": ["READ", "SUPERUSER", "ANY"]},
          "operations: unknown operation(s) SUPERUSER, ANY (Kafka's operations, or the "
          "shorthands PRODUCE and CONSUME)")


def test_operations_empty_or_null(spark: SparkSession) -> None:
    check(spark, {"operations": []}, "operations: name at least one operation")
    check(spark, {"operations": None}, "operations: name at least one operation")
    check(spark, {"operations": ["READ", None]}, "operations: an operation is null")


def test_every_problem_of_a_row_is_named_at_once_and_other_rows_go_on(
        spark: SparkSession) -> None:
    bad = {**GOOD, "cluster": "prod", "principal": "alice", "pattern_type": "PREFIXED",
           "resource_name": "*", "operations": ["WRITE", "IDEMPOTENT_WRITE"]}
    rows = [bad, {**GOOD, "resource_name": "payments"}]
    actual = acl_desired_df(spark, rows).transform(with_acl_row_errors(["local"]))
    expected = acl_desired_df(spark, [
        {**FILLED, **bad, "row_errors": [
            "cluster: 'prod' is not defined in the conf (known: local)",
            "principal: 'alice' is not Type:name (e.g. User:orders-app)",
            "resource_name: '*' (every resource) is a LITERAL name only; a PREFIXED '*' would "
            "match only names that start with '*'",
            "operations: IDEMPOTENT_WRITE not valid on a TOPIC binding, which takes READ, "
            "WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS, ALL and "
            "the shorthands PRODUCE, CONSUME"]},
        {**FILLED, **GOOD, "resource_name": "payments"}])
    assert_df_equality(actual, expected, ignore_row_order=True)


def test_duplicate_rows_are_fine(spark: SparkSession) -> None:
    actual = acl_desired_df(spark, [GOOD, GOOD]).transform(with_acl_row_errors(["local"]))
    assert_df_equality(actual, acl_desired_df(spark, [{**FILLED, **GOOD}] * 2))
