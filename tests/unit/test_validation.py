"""Manifest rows validated as data: each problem is a named reason, other rows untouched."""

from __future__ import annotations

from typing import Any

from chispa import assert_df_equality
from pyspark.sql import SparkSession

from provisioning.transforms.validation import with_duplicate_errors, with_row_errors
from tests.builders import desired_df


def check(spark: SparkSession, row: dict[str, Any], *errors: str) -> None:
    base = {"cluster": "local", "topic": "t", **row}
    actual = desired_df(spark, [base]).transform(with_row_errors(["local", "other"]))
    assert_df_equality(actual, desired_df(spark, [{**base, "row_errors": list(errors)}]),
                       ignore_nullable=True)


def test_a_good_row_has_no_errors(spark: SparkSession) -> None:
    check(spark, {"topic": "orders.v1_x-y", "partitions": 3, "replication_factor": 1,
                  "configs": {"retention.ms": "1"}})


def test_empty_topic(spark: SparkSession) -> None:
    check(spark, {"topic": ""}, "topic: is missing or empty")


def test_null_topic_and_cluster(spark: SparkSession) -> None:
    check(spark, {"topic": None, "cluster": None},
          "cluster: is missing", "topic: is missing or empty")


def test_dot_and_dot_dot(spark: SparkSession) -> None:
    check(spark, {"topic": "."}, "topic: '.' is not a legal topic name")
    check(spark, {"topic": ".."}, "topic: '..' is not a legal topic name")


def test_illegal_characters(spark: SparkSession) -> None:
    check(spark, {"topic": "a/b"}, "topic: 'a/b' has characters outside [a-zA-Z0-9._-]")


def test_249_characters_pass_and_250_do_not(spark: SparkSession) -> None:
    check(spark, {"topic": "a" * 249})
    check(spark, {"topic": "a" * 250},
          "topic: name is 250 characters long; Kafka allows at most 249")


def test_cluster_not_in_conf(spark: SparkSession) -> None:
    check(spark, {"cluster": "prod"},
          "cluster: 'prod' is not defined in the conf (known: local, other)")


def test_bad_state(spark: SparkSession) -> None:
    check(spark, {"state": "gone"}, "state: 'gone' must be present or absent")


def test_partitions_and_replication_factor_below_one(spark: SparkSession) -> None:
    check(spark, {"partitions": 0, "replication_factor": -1},
          "partitions: must be >= 1 (or null for the broker default), got 0",
          "replication_factor: must be >= 1 (or null for the broker default), got -1")


def test_assignment_excludes_partitions_and_replication_factor(spark: SparkSession) -> None:
    check(spark, {"partitions": 2, "replica_assignment": {0: [1], 1: [1]}},
          "replica_assignment: excludes partitions and replication_factor (KIP-4); "
          "give one or the other")


def test_assignment_partitions_must_be_contiguous(spark: SparkSession) -> None:
    check(spark, {"replica_assignment": {0: [1], 2: [1]}},
          "replica_assignment: partitions must be numbered 0..n-1, got [0, 2]")


def test_assignment_replica_lists_must_be_even(spark: SparkSession) -> None:
    check(spark, {"replica_assignment": {0: [1, 2], 1: [1]}},
          "replica_assignment: every partition needs the same number of replicas, got [1, 2]")


def test_assignment_repeating_a_broker(spark: SparkSession) -> None:
    check(spark, {"replica_assignment": {0: [1, 1]}},
          "replica_assignment: a partition lists the same broker twice")


def test_an_empty_assignment_is_none_as_the_broker_reads_it(spark: SparkSession) -> None:
    row = {"cluster": "local", "topic": "t", "partitions": 2}
    actual = (desired_df(spark, [{**row, "replica_assignment": {}}])
              .transform(with_row_errors(["local"])))
    assert_df_equality(actual, desired_df(spark, [{**row, "row_errors": []}]),
                       ignore_nullable=True)


def test_config_without_value(spark: SparkSession) -> None:
    check(spark, {"configs": {"retention.ms": None, "cleanup.policy": "compact"}},
          "configs: no value given for retention.ms")


def test_existing_reasons_are_kept(spark: SparkSession) -> None:
    base = {"cluster": "local", "topic": "", "row_errors": ["partitions: six is not a valid int"]}
    actual = desired_df(spark, [base]).transform(with_row_errors(["local"]))
    expected = desired_df(spark, [{**base, "row_errors": [
        "partitions: six is not a valid int", "topic: is missing or empty"]}])
    assert_df_equality(actual, expected, ignore_nullable=True)


def test_every_copy_of_a_duplicate_is_rejected(spark: SparkSession) -> None:
    rows = [
        {"cluster": "local", "topic": "dup", "source_table": "a", "source_version": 3},
        {"cluster": "local", "topic": "dup", "source_table": "b", "source_version": 7},
        {"cluster": "other", "topic": "dup", "source_table": "a", "source_version": 3},
        {"cluster": None, "topic": None, "source_table": "a", "source_version": 3},
        {"cluster": None, "topic": None, "source_table": "a", "source_version": 3},
    ]
    reason = "duplicate: (local, dup) appears 2 times, in a@3, b@7; no copy is applied"
    expected = [{**rows[0], "row_errors": [reason]}, {**rows[1], "row_errors": [reason]},
                *rows[2:]]
    assert_df_equality(desired_df(spark, rows).transform(with_duplicate_errors),
                       desired_df(spark, expected), ignore_row_order=True,
                       ignore_nullable=True)
