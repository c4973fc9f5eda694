"""Quota manifest rows validated per entity, and two rows naming one entity."""

from __future__ import annotations

from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

from provisioning.kinds.quotas.validation import (
    with_duplicate_entity_errors,
    with_quota_row_errors,
)
from tests.quota_builders import quota_desired_df

GOOD: dict[str, Any] = {"cluster": "local", "entity_user": "orders-app",
                        "quotas": {"producer_byte_rate": 1e6}, "state": "present"}
NO_ENTITY = ("entity: names no entity type; set entity_user, entity_client_id or entity_ip "
             "(`<default>` for a type's default entity)")


def check(spark: SparkSession, row: dict[str, Any], *errors: str) -> None:
    """`row` (over GOOD) validated: unchanged but for exactly `errors`."""
    given = {**GOOD, **row}
    actual = quota_desired_df(spark, [given]).transform(with_quota_row_errors(("local", "b")))
    expected = quota_desired_df(spark, [{**given, "row_errors": list(errors)}])
    assert_df_equality(actual, expected)


@pytest.mark.parametrize("entity", [
    {"entity_user": "orders-app"},
    {"entity_user": "<default>"},
    {"entity_client_id": "app"},
    {"entity_user": "<default>", "entity_client_id": "<default>"},
    {"entity_user": "CN=app,O=corp", "entity_client_id": "app-1"},
])
def test_user_and_client_entities_pass(spark: SparkSession, entity: dict[str, str]) -> None:
    check(spark, {"entity_user": None, **entity})


GOOD_IPS = ["<default>", "10.0.0.1", "0.0.0.0", "255.255.255.255", "::1", "::",
            "2001:db8::8a2e:370:7334", "FE80::1", "1:2:3:4:5:6:7:8", "::ffff:192.168.0.1",
            "1:2:3:4:5:6:10.0.0.1"]
# Host names (the broker would resolve them), ranges, leading zeros, short forms, zone ids,
# brackets, blanks.
BAD_IPS = ["localhost", "kafka.example.com", "300.1.1.1", "10.0.0.0/8", "010.0.0.1",
           "10.0.1", "1.2.3.4.5", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::1", "[::1]",
           "fe80::1%eth0", " 10.0.0.1", "default"]


def _ip_rows(ips: list[str]) -> list[dict[str, Any]]:
    return [{**GOOD, "entity_user": None, "entity_ip": ip,
             "quotas": {"connection_creation_rate": 10.0}} for ip in ips]


def test_ip_literals_and_the_default_ip_pass(spark: SparkSession) -> None:
    rows = _ip_rows(GOOD_IPS)
    actual = quota_desired_df(spark, rows).transform(with_quota_row_errors(("local",)))
    assert_df_equality(actual, quota_desired_df(spark, rows), ignore_row_order=True)


def test_an_ip_that_is_not_an_ip_literal_is_refused(spark: SparkSession) -> None:
    rows = _ip_rows(BAD_IPS)
    actual = quota_desired_df(spark, rows).transform(with_quota_row_errors(("local",)))
    expected = quota_desired_df(spark, [
        {**row, "row_errors": [
            f"entity_ip: '{row['entity_ip']}' is not an IPv4 or IPv6 address nor `<default>`; "
            "name one address (host names and CIDR ranges are refused)"]} for row in rows])
    assert_df_equality(actual, expected, ignore_row_order=True)


def test_earlier_errors_are_kept(spark: SparkSession) -> None:
    check(spark, {"row_errors": ["read: bad"]}, "read: bad")


def test_cluster_missing_or_unknown(spark: SparkSession) -> None:
    check(spark, {"cluster": None}, "cluster: is missing")
    check(spark, {"cluster": "prod"},
          "cluster: 'prod' is not defined in the conf (known: b, local)")


def test_state_other_than_present_or_absent(spark: SparkSession) -> None:
    check(spark, {"state": "gone"}, "state: 'gone' must be present or absent")


def test_a_null_state_reads_as_present(spark: SparkSession) -> None:
    check(spark, {"state": None})
    check(spark, {"state": None, "quotas": None},
          "quotas: a present row asks for at least one quota (e.g. {producer_byte_rate: "
          "1048576}); to remove the entity's quotas, say `state: absent`")


def test_an_entity_names_at_least_one_type(spark: SparkSession) -> None:
    check(spark, {"entity_user": None}, NO_ENTITY)


def test_an_ip_stands_alone(spark: SparkSession) -> None:
    check(spark, {"entity_ip": "10.0.0.1"},
          "entity: user=orders-app ip=10.0.0.1 combines an ip with a user or client-id, "
          "which Kafka refuses; an ip entity stands alone: split it into an ip row and a "
          "user / client-id row")
    check(spark, {"entity_user": None, "entity_client_id": "<default>",
                  "entity_ip": "<default>"},
          "entity: client-id=<default> ip=<default> combines an ip with a user or client-id, "
          "which Kafka refuses; an ip entity stands alone: split it into an ip row and a "
          "user / client-id row")


def test_an_empty_name_is_refused(spark: SparkSession) -> None:
    check(spark, {"entity_user": "", "entity_client_id": ""},
          "entity_user: is empty; name the user, or `<default>` for the default user",
          "entity_client_id: is empty; name the client-id, or `<default>` for the default "
          "client-id")
    check(spark, {"entity_user": None, "entity_ip": ""},
          "entity_ip: is empty; name the ip, or `<default>` for the default ip")


def test_a_present_row_asks_for_a_quota(spark: SparkSession) -> None:
    message = ("quotas: a present row asks for at least one quota (e.g. {producer_byte_rate: "
               "1048576}); to remove the entity's quotas, say `state: absent`")
    check(spark, {"quotas": {}}, message)
    check(spark, {"quotas": None}, message)


def test_an_absent_row_may_list_no_quota(spark: SparkSession) -> None:
    check(spark, {"state": "absent", "quotas": None})
    check(spark, {"state": "absent", "quotas": {}})


def test_keys_and_values_are_left_to_the_plan(spark: SparkSession) -> None:
    check(spark, {"quotas": {"foo_rate": -1.0, "connection_creation_rate": float("inf")}})


def test_every_problem_of_a_row_is_named_at_once_and_other_rows_go_on(
        spark: SparkSession) -> None:
    bad = {**GOOD, "cluster": "prod", "entity_ip": "host", "state": "on", "quotas": {}}
    other = {**GOOD, "entity_user": "billing"}
    actual = quota_desired_df(spark, [bad, other]).transform(with_quota_row_errors(("local",)))
    expected = quota_desired_df(spark, [
        {**bad, "row_errors": [
            "cluster: 'prod' is not defined in the conf (known: local)",
            "entity: user=orders-app ip=host combines an ip with a user or client-id, which "
            "Kafka refuses; an ip entity stands alone: split it into an ip row and a user / "
            "client-id row",
            "entity_ip: 'host' is not an IPv4 or IPv6 address nor `<default>`; name one "
            "address (host names and CIDR ranges are refused)",
            "state: 'on' must be present or absent",
            "quotas: a present row asks for at least one quota (e.g. {producer_byte_rate: "
            "1048576}); to remove the entity's quotas, say `state: absent`"]},
        other])
    assert_df_equality(actual, expected, ignore_row_order=True)


# --- duplicates ---------------------------------------------------------------------------


def test_two_rows_naming_one_entity_are_both_refused_each_naming_the_other(
        spark: SparkSession) -> None:
    default_pair = {"entity_user": "<default>", "entity_client_id": "app"}
    rows: list[dict[str, Any]] = [{**GOOD, "source_table": "q", "source_version": 3},
            {**GOOD, "state": "absent", "source_table": "p", "source_version": 7},
            {**GOOD, "entity_user": None, **default_pair},
            {**GOOD, "entity_user": None, **default_pair, "row_errors": ["earlier"]},
            {**GOOD, "entity_client_id": "app"},
            {**GOOD, "cluster": "b"}]
    actual = with_duplicate_entity_errors(quota_desired_df(spark, rows))
    expected = quota_desired_df(spark, [
        {**rows[0], "row_errors": [
            "duplicate: entity user=orders-app on cluster local is also named by p@7; no copy "
            "is applied (one row per entity)"]},
        {**rows[1], "row_errors": [
            "duplicate: entity user=orders-app on cluster local is also named by q@3; no copy "
            "is applied (one row per entity)"]},
        {**rows[2], "row_errors": [
            "duplicate: entity user=<default> client-id=app on cluster local is also named by "
            "q@1; no copy is applied (one row per entity)"]},
        {**rows[3], "row_errors": [
            "earlier",
            "duplicate: entity user=<default> client-id=app on cluster local is also named by "
            "q@1; no copy is applied (one row per entity)"]},
        rows[4], rows[5]])
    assert_df_equality(actual, expected, ignore_row_order=True)


def test_three_copies_each_name_the_two_others(spark: SparkSession) -> None:
    rows = [{**GOOD, "source_table": t, "source_version": 1} for t in ("c", "a", "b")]
    actual = with_duplicate_entity_errors(quota_desired_df(spark, rows))
    expected = quota_desired_df(spark, [
        {**row, "row_errors": [
            f"duplicate: entity user=orders-app on cluster local is also named by {others}; "
            "no copy is applied (one row per entity)"]}
        for row, others in zip(rows, ("a@1, b@1", "b@1, c@1", "a@1, c@1"), strict=True)])
    assert_df_equality(actual, expected, ignore_row_order=True)


def test_rows_without_a_cluster_or_an_entity_type_are_not_compared(
        spark: SparkSession) -> None:
    rows = [{**GOOD, "cluster": None}, {**GOOD, "cluster": None},
            {**GOOD, "entity_user": None}, {**GOOD, "entity_user": None}]
    actual = with_duplicate_entity_errors(quota_desired_df(spark, rows))
    assert_df_equality(actual, quota_desired_df(spark, rows), ignore_row_order=True)
