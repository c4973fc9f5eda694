"""Quota plan: each row's keys against the live quotas (SET, REMOVE, NOOP), each key judged
on its own, unlisted keys, unmanaged quotas, import rows and how an entity reads."""

from __future__ import annotations

from typing import Any

from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning.kinds.quotas.plan import (
    UNLISTED_GUARDED,
    UNLISTED_KEPT,
    UNLISTED_REMOVED,
    entity_text,
    plan_quotas,
    quota_manifest_rows,
    unmanaged_quotas,
)
from provisioning.kinds.quotas.schema import QUOTA_MANIFEST
from provisioning.kinds.quotas.validation import with_quota_row_errors
from tests.builders import rows_df
from tests.quota_builders import (
    quota_desired_df,
    quota_live_df,
    quota_manifest_df,
    quota_plan_df,
)

APP = {"cluster": "local", "entity_user": "app"}
IP = {"cluster": "local", "entity_ip": "10.0.0.1"}
KNOWN = ("producer_byte_rate, consumer_byte_rate, request_percentage, "
         "controller_mutation_rate, connection_creation_rate")


def desired(spark: SparkSession, *rows: dict[str, Any]) -> DataFrame:
    """QUOTA_DESIRED rows (of APP unless told), validated."""
    return quota_desired_df(spark, [{**APP, **r} for r in rows]).transform(
        with_quota_row_errors(("local", "other")))


def live(spark: SparkSession, *rows: dict[str, Any]) -> DataFrame:
    return quota_live_df(spark, list(rows))


def held(key: str, value: float, **entity: Any) -> dict[str, Any]:
    """A live quota of APP (or `entity`)."""
    return {**(entity or APP), "key": key, "value": value}


def planned(key: str | None, action: str, value: float | None = None,
            live_value: float | None = None, **cols: Any) -> dict[str, Any]:
    """A plan row of APP from a present row of source q@1 (unless told)."""
    return {**APP, "key": key, "action": action, "state": "present", "value": value,
            "live_value": live_value, "source_table": "q", "source_version": 1, **cols}


def unlisted(key: str, value: float, note: str, action: str = "NOOP",
             **entity: Any) -> dict[str, Any]:
    """A plan row of a live key no row lists."""
    return {**(entity or APP), "key": key, "action": action,
            "state": "absent" if action == "REMOVE" else "present", "live_value": value,
            "note": note}


def assert_plan(actual: DataFrame, spark: SparkSession, rows: list[dict[str, Any]]) -> None:
    assert_df_equality(actual, quota_plan_df(spark, rows), ignore_row_order=True,
                       ignore_nullable=True)


# --- a present row --------------------------------------------------------------------------


def test_a_missing_or_other_value_is_a_set_an_equal_one_a_noop(spark: SparkSession) -> None:
    plan = plan_quotas(
        desired(spark, {"quotas": {"producer_byte_rate": 1e6, "consumer_byte_rate": 2e6,
                                   "request_percentage": 50.0}, "owner": "team"}),
        live(spark, held("consumer_byte_rate", 1e6), held("request_percentage", 50.0)),
        remove_unlisted=False)
    assert_plan(plan, spark, [
        planned("producer_byte_rate", "SET", 1e6, owner="team"),
        planned("consumer_byte_rate", "SET", 2e6, 1e6, owner="team"),
        planned("request_percentage", "NOOP", 50.0, 50.0, owner="team")])


def test_an_entity_is_all_its_types_on_its_cluster(spark: SparkSession) -> None:
    plan = plan_quotas(
        desired(spark, {"quotas": {"producer_byte_rate": 1e6}, "force": True}),
        live(spark, held("producer_byte_rate", 1e6, cluster="local", entity_user="app",
                         entity_client_id="c1"),
             held("producer_byte_rate", 1e6, cluster="other", entity_user="app")),
        remove_unlisted=False)
    assert_plan(plan, spark, [
        planned("producer_byte_rate", "SET", 1e6, force=True),
        unlisted("producer_byte_rate", 1e6, UNLISTED_KEPT, cluster="local",
                 entity_user="app", entity_client_id="c1"),
        unlisted("producer_byte_rate", 1e6, UNLISTED_KEPT, cluster="other",
                 entity_user="app")])


def test_default_entities_match_their_live_quotas(spark: SparkSession) -> None:
    pair = {"cluster": "local", "entity_user": "<default>", "entity_client_id": "<default>"}
    plan = plan_quotas(
        desired(spark, {**pair, "entity_user": "<default>",
                        "quotas": {"request_percentage": 25.5}},
                {**IP, "entity_user": None, "entity_ip": "<default>",
                 "quotas": {"connection_creation_rate": 10.0}}),
        live(spark, held("request_percentage", 25.5, **pair),
             held("connection_creation_rate", 5.0, cluster="local", entity_ip="<default>")),
        remove_unlisted=True)
    assert_plan(plan, spark, [
        planned("request_percentage", "NOOP", 25.5, 25.5, **pair),
        planned("connection_creation_rate", "SET", 10.0, 5.0, entity_user=None,
                entity_ip="<default>")])


def test_a_bad_key_rejects_its_own_row_and_the_other_keys_go_on(spark: SparkSession) -> None:
    plan = plan_quotas(
        desired(spark, {"quotas": {"producer_byte_rate": 1e6, "foo_rate": 1.0,
                                   "connection_creation_rate": 5.0}},
                {**IP, "entity_user": None, "quotas": {"connection_creation_rate": 5.0,
                                                       "consumer_byte_rate": 1e6}}),
        live(spark, held("foo_rate", 2.0)), remove_unlisted=False)
    assert_plan(plan, spark, [
        planned("producer_byte_rate", "SET", 1e6),
        planned("foo_rate", "SET", 1.0, 2.0, row_errors=[
            f"quotas.foo_rate: unknown quota key (Kafka's: {KNOWN})"]),
        planned("connection_creation_rate", "SET", 5.0, row_errors=[
            "quotas.connection_creation_rate: only an ip entity takes it, and user=app is "
            "not one"]),
        planned("connection_creation_rate", "SET", 5.0, entity_user=None,
                entity_ip="10.0.0.1"),
        planned("consumer_byte_rate", "SET", 1e6, entity_user=None, entity_ip="10.0.0.1",
                row_errors=["quotas.consumer_byte_rate: an ip entity takes only "
                            "connection_creation_rate"]),
    ])


def test_values_at_or_below_zero_are_refused_per_key_the_broker_judges_the_rest(
        spark: SparkSession) -> None:
    # A fraction of a byte rate, a value too large for the broker's LONG or INT: the
    # broker's own verdict, at validateOnly.
    quotas = {"producer_byte_rate": 1.5, "consumer_byte_rate": 1e19,
              "request_percentage": 0.0, "controller_mutation_rate": -2.0}
    ip_quotas = {"connection_creation_rate": 3e9 + 0.5}
    plan = plan_quotas(desired(spark, {"quotas": quotas},
                               {**IP, "entity_user": None, "quotas": ip_quotas}),
                       live(spark), remove_unlisted=False)
    assert_plan(plan, spark, [
        planned("producer_byte_rate", "SET", 1.5),
        planned("consumer_byte_rate", "SET", 1e19),
        planned("request_percentage", "SET", 0.0, row_errors=[
            "quotas.request_percentage: must be > 0, got 0 (to drop a quota, list it in a "
            "`state: absent` row)"]),
        planned("controller_mutation_rate", "SET", -2.0, row_errors=[
            "quotas.controller_mutation_rate: must be > 0, got -2 (to drop a quota, list it "
            "in a `state: absent` row)"]),
        planned("connection_creation_rate", "SET", 3e9 + 0.5, entity_user=None,
                entity_ip="10.0.0.1"),
    ])


def test_a_missing_or_non_finite_value_is_refused(spark: SparkSession) -> None:
    quotas = {"producer_byte_rate": None, "consumer_byte_rate": float("nan"),
              "request_percentage": float("inf"), "controller_mutation_rate": float("-inf")}
    plan = plan_quotas(desired(spark, {"quotas": quotas}), live(spark),
                       remove_unlisted=False)
    actual = plan.select("key", "action", "row_errors")
    expected = rows_df(spark, actual.schema, [
        {"key": "producer_byte_rate", "action": "SET",
         "row_errors": ["quotas.producer_byte_rate: no value given"]},
        {"key": "consumer_byte_rate", "action": "SET",
         "row_errors": ["quotas.consumer_byte_rate: NaN is not a finite number"]},
        {"key": "request_percentage", "action": "SET",
         "row_errors": ["quotas.request_percentage: Infinity is not a finite number"]},
        {"key": "controller_mutation_rate", "action": "SET",
         "row_errors": ["quotas.controller_mutation_rate: -Infinity is not a finite number"]}])
    assert_df_equality(actual, expected, ignore_row_order=True)


def test_entity_errors_reject_every_key_row_which_keeps_its_action(
        spark: SparkSession) -> None:
    plan = plan_quotas(
        desired(spark, {"cluster": "prod", "quotas": {"producer_byte_rate": 1e6,
                                                      "foo_rate": 1.0}},
                {"entity_user": None, "quotas": {}}),
        live(spark, held("producer_byte_rate", 1e6, cluster="prod", entity_user="app")),
        remove_unlisted=False)
    cluster = "cluster: 'prod' is not defined in the conf (known: local, other)"
    assert_plan(plan, spark, [
        planned("producer_byte_rate", "NOOP", 1e6, 1e6, cluster="prod", row_errors=[cluster]),
        planned("foo_rate", "SET", 1.0, cluster="prod", row_errors=[
            cluster, f"quotas.foo_rate: unknown quota key (Kafka's: {KNOWN})"]),
        planned(None, "SET", entity_user=None, row_errors=[
            "entity: names no entity type; set entity_user, entity_client_id or entity_ip "
            "(`<default>` for a type's default entity)",
            "quotas: a present row asks for at least one quota (e.g. {producer_byte_rate: "
            "1048576}); to remove the entity's quotas, say `state: absent`"]),
    ])


# --- an absent row ------------------------------------------------------------------------


def test_an_absent_row_removes_the_live_keys_it_lists(spark: SparkSession) -> None:
    plan = plan_quotas(
        desired(spark, {"state": "absent", "quotas": {"producer_byte_rate": 1.0,
                                                      "consumer_byte_rate": 0.0}}),
        live(spark, held("producer_byte_rate", 1e6), held("request_percentage", 50.0)),
        remove_unlisted=False)
    assert_plan(plan, spark, [
        planned("producer_byte_rate", "REMOVE", None, 1e6, state="absent"),
        planned("consumer_byte_rate", "NOOP", state="absent"),
        unlisted("request_percentage", 50.0, UNLISTED_KEPT)])


def test_an_absent_row_listing_no_key_removes_every_live_key(spark: SparkSession) -> None:
    plan = plan_quotas(
        desired(spark, {"state": "absent"},
                {"entity_user": "gone", "state": "absent", "quotas": {}}),
        live(spark, held("producer_byte_rate", 1e6), held("request_percentage", 50.0),
             held("producer_byte_rate", 1e6, cluster="local", entity_user="app",
                  entity_client_id="c1")),
        remove_unlisted=False)
    assert_plan(plan, spark, [
        planned("producer_byte_rate", "REMOVE", None, 1e6, state="absent"),
        planned("request_percentage", "REMOVE", None, 50.0, state="absent"),
        planned(None, "NOOP", state="absent", entity_user="gone"),
        unlisted("producer_byte_rate", 1e6, UNLISTED_KEPT, cluster="local",
                 entity_user="app", entity_client_id="c1")])


def test_an_absent_row_judges_its_keys_but_not_their_values(spark: SparkSession) -> None:
    plan = plan_quotas(
        desired(spark, {"state": "absent", "quotas": {"foo_rate": None,
                                                      "connection_creation_rate": -1.0}}),
        live(spark), remove_unlisted=False)
    assert_plan(plan, spark, [
        planned("foo_rate", "NOOP", state="absent", row_errors=[
            f"quotas.foo_rate: unknown quota key (Kafka's: {KNOWN})"]),
        planned("connection_creation_rate", "NOOP", state="absent", row_errors=[
            "quotas.connection_creation_rate: only an ip entity takes it, and user=app is "
            "not one"])])


# --- unlisted ------------------------------------------------------------------------------


LIVE = [held("producer_byte_rate", 1e6), held("request_percentage", 50.0),
        held("consumer_byte_rate", 5e5, cluster="local", entity_client_id="batch"),
        {"cluster": "local", "key": None, "value": None}]


def test_unlisted_keys_are_left_alone_by_default(spark: SparkSession) -> None:
    plan = plan_quotas(desired(spark, {"quotas": {"producer_byte_rate": 1e6}}),
                       live(spark, *LIVE), remove_unlisted=False)
    assert_plan(plan, spark, [
        planned("producer_byte_rate", "NOOP", 1e6, 1e6),
        unlisted("request_percentage", 50.0, UNLISTED_KEPT),
        unlisted("consumer_byte_rate", 5e5, UNLISTED_KEPT, cluster="local",
                 entity_client_id="batch")])


def test_remove_unlisted_removes_them(spark: SparkSession) -> None:
    plan = plan_quotas(desired(spark, {"quotas": {"producer_byte_rate": 1e6}}),
                       live(spark, *LIVE), remove_unlisted=True)
    assert_plan(plan, spark, [
        planned("producer_byte_rate", "NOOP", 1e6, 1e6),
        unlisted("request_percentage", 50.0, UNLISTED_REMOVED, "REMOVE"),
        unlisted("consumer_byte_rate", 5e5, UNLISTED_REMOVED, "REMOVE", cluster="local",
                 entity_client_id="batch")])


def test_a_rejected_row_never_lets_its_entitys_live_keys_be_removed(
        spark: SparkSession) -> None:
    plan = plan_quotas(desired(spark, {"quotas": {"producer_byte_rate": 1e6,
                                                  "foo_rate": 1.0}, "state": "presnt"}),
                       live(spark, *LIVE), remove_unlisted=True)
    state = "state: 'presnt' must be present or absent"
    assert_plan(plan, spark, [
        planned("producer_byte_rate", "NOOP", 1e6, 1e6, state="presnt", row_errors=[state]),
        planned("foo_rate", "SET", 1.0, state="presnt", row_errors=[
            state, f"quotas.foo_rate: unknown quota key (Kafka's: {KNOWN})"]),
        unlisted("request_percentage", 50.0, UNLISTED_GUARDED),
        unlisted("consumer_byte_rate", 5e5, UNLISTED_REMOVED, "REMOVE", cluster="local",
                 entity_client_id="batch")])


def test_unmanaged_quotas_are_the_live_keys_no_valid_row_lists(spark: SparkSession) -> None:
    rows = desired(spark, {"quotas": {"producer_byte_rate": 1e6}},
                   {"entity_user": "gone", "state": "absent"},
                   {"entity_user": "typo", "cluster": "prod",
                    "quotas": {"producer_byte_rate": 1.0}})
    live_rows = [*LIVE, held("consumer_byte_rate", 1.0, cluster="local", entity_user="gone"),
                 held("producer_byte_rate", 1.0, cluster="prod", entity_user="typo")]
    assert_df_equality(unmanaged_quotas(live(spark, *live_rows), rows), live(spark, *[
        held("request_percentage", 50.0),
        held("consumer_byte_rate", 5e5, cluster="local", entity_client_id="batch"),
        held("producer_byte_rate", 1.0, cluster="prod", entity_user="typo")]),
        ignore_row_order=True)


# --- import, entity text ---------------------------------------------------------------------


def test_import_makes_one_present_row_per_live_entity(spark: SparkSession) -> None:
    rows = quota_manifest_rows(live(spark, *LIVE), "platform")
    assert_df_equality(rows, quota_manifest_df(spark, [
        {**APP, "quotas": {"producer_byte_rate": 1e6, "request_percentage": 50.0},
         "state": "present", "owner": "platform"},
        {"cluster": "local", "entity_client_id": "batch",
         "quotas": {"consumer_byte_rate": 5e5}, "state": "present", "owner": "platform"},
    ]), ignore_row_order=True, ignore_nullable=True)
    assert rows.schema.simpleString() == QUOTA_MANIFEST.simpleString()


def test_a_plan_over_imported_rows_is_all_noop(spark: SparkSession) -> None:
    live_rows = live(spark, *LIVE, held("connection_creation_rate", 20.0, **IP),
                     held("request_percentage", 0.25, cluster="other",
                          entity_user="<default>", entity_client_id="<default>"))
    imported = quota_manifest_rows(live_rows, None).select(
        "*", F.lit("imported").alias("source_table"), F.lit(1).cast("long")
        .alias("source_version"), F.array().cast("array<string>").alias("row_errors"))
    validated = imported.transform(with_quota_row_errors(("local", "other")))
    assert_df_equality(validated, imported)
    plan = plan_quotas(validated, live_rows, remove_unlisted=True)
    actions = plan.select(*["cluster", "entity_user", "entity_client_id", "entity_ip", "key",
                            "action"])
    assert_df_equality(actions, rows_df(spark, actions.schema, [
        {**APP, "key": "producer_byte_rate", "action": "NOOP"},
        {**APP, "key": "request_percentage", "action": "NOOP"},
        {"cluster": "local", "entity_client_id": "batch", "key": "consumer_byte_rate",
         "action": "NOOP"},
        {**IP, "key": "connection_creation_rate", "action": "NOOP"},
        {"cluster": "other", "entity_user": "<default>", "entity_client_id": "<default>",
         "key": "request_percentage", "action": "NOOP"}]), ignore_row_order=True)


def test_an_entity_reads_as_its_types_in_kafkas_order(spark: SparkSession) -> None:
    entities = quota_desired_df(spark, [
        {"entity_user": "orders-app"}, {"entity_user": "<default>", "entity_client_id": "app"},
        {"entity_ip": "10.0.0.1"}, {"entity_client_id": "c", "entity_ip": "::1"}, {}])
    assert [r[0] for r in entities.select(entity_text()).collect()] == [
        "user=orders-app", "user=<default> client-id=app", "ip=10.0.0.1",
        "client-id=c ip=::1", "(no entity)"]
