"""The plan: desired joined with live, one explicit action per row, drift as data."""

from __future__ import annotations

from typing import Any

from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StringType, StructField, StructType

from provisioning.kinds.topics.plan import build_plan, change_columns, prune_candidates
from provisioning.names import FOLLOWER_THROTTLED_REPLICAS, LEADER_THROTTLED_REPLICAS
from provisioning.transforms.scope import glob_to_regex as glob_regex
from provisioning.transforms.scope import in_scope
from tests.builders import desired_df, plan_df, rows_df, snapshot_df

OVERRIDE = "DYNAMIC_TOPIC_CONFIG"
_CREATED = StructType([StructField(n, StringType()) for n in ("cluster", "topic", "topic_id")])


def cfg(name: str, value: str | None, source: str = OVERRIDE) -> dict[str, Any]:
    return {"name": name, "value": value, "source": source, "read_only": False,
            "sensitive": False}


LIVE = {
    "cluster": "local", "topic": "t", "topic_id": "id-t", "internal": False, "partitions": 3,
    "replication_factor": 1, "replica_assignment": {0: [1], 1: [1], 2: [1]},
    "configs": [cfg("retention.ms", "1000"), cfg("cleanup.policy", "delete", "DEFAULT_CONFIG")],
    "consumer_groups": ["g"],
}
LIVE_COLUMNS = {
    "live_topic_id": "id-t", "live_internal": False, "live_partitions": 3,
    "live_replication_factor": 1, "live_replica_assignment": {0: [1], 1: [1], 2: [1]},
    "live_configs": LIVE["configs"], "live_consumer_groups": ["g"],
}


def plan_of(spark: SparkSession, desired: list[dict[str, Any]],
            live: list[dict[str, Any]]) -> DataFrame:
    return build_plan(desired_df(spark, desired), snapshot_df(spark, live))


def expect(spark: SparkSession, actual: DataFrame, rows: list[dict[str, Any]]) -> None:
    defaults = {"source_table": "m", "source_version": 1, "row_errors": [], "drift": [],
                "config_ops": []}
    expected = plan_df(spark, [{**defaults, **r} for r in rows])
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def drift(field: str, desired: str | None, actual: str | None, supported: bool
          ) -> dict[str, Any]:
    return {"field": field, "desired": desired, "actual": actual, "supported": supported}


def test_missing_topic_is_created(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "new", "partitions": 2}
    expect(spark, plan_of(spark, [desired], [LIVE]), [{**desired, "action": "CREATE"}])


def test_matching_topic_is_noop(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t", "partitions": 3, "replication_factor": 1,
               "configs": {"retention.ms": "1000"}}
    expect(spark, plan_of(spark, [desired], [LIVE]),
           [{**desired, **LIVE_COLUMNS, "action": "NOOP"}])


def test_unspecified_partitions_and_factor_do_not_drift(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t", "configs": {"retention.ms": "1000"}}
    expect(spark, plan_of(spark, [desired], [LIVE]),
           [{**desired, **LIVE_COLUMNS, "action": "NOOP"}])


def test_absent_and_live_is_delete(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t", "state": "absent"}
    expect(spark, plan_of(spark, [desired], [LIVE]),
           [{**desired, **LIVE_COLUMNS, "action": "DELETE"}])


def test_absent_and_not_live_is_noop(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "gone", "state": "absent"}
    expect(spark, plan_of(spark, [desired], [LIVE]), [{**desired, "action": "NOOP"}])


def test_same_name_on_another_cluster_is_not_a_match(spark: SparkSession) -> None:
    desired = {"cluster": "other", "topic": "t"}
    expect(spark, plan_of(spark, [desired], [LIVE]), [{**desired, "action": "CREATE"}])


def op(name: str, operation: str, value: str | None) -> dict[str, Any]:
    return {"name": name, "op": operation, "value": value}


def test_partition_increase_is_an_alter(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t", "partitions": 6,
               "configs": {"retention.ms": "1000"}}
    expect(spark, plan_of(spark, [desired], [LIVE]), [{
        **desired, **LIVE_COLUMNS, "action": "ALTER",
        "drift": [drift("partitions", "6", "3", True)]}])


def test_partition_decrease_and_factor_change_are_unsupported(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t", "partitions": 2, "replication_factor": 3,
               "configs": {"retention.ms": "1000"}}
    expect(spark, plan_of(spark, [desired], [LIVE]), [{
        **desired, **LIVE_COLUMNS, "action": "DRIFT",
        "drift": [drift("partitions", "2", "3", False),
                  drift("replication_factor", "3", "1", False)]}])


def test_listed_configs_are_set_and_unlisted_overrides_left_alone(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t",
               "configs": {"retention.ms": "5000", "cleanup.policy": "compact"}}
    live = {**LIVE, "configs": [*LIVE["configs"], cfg("segment.ms", "60000")]}
    expect(spark, plan_of(spark, [desired], [live]), [{
        **desired, **LIVE_COLUMNS, "live_configs": live["configs"], "action": "ALTER",
        "drift": [drift("config:cleanup.policy", "compact", None, True),
                  drift("config:retention.ms", "5000", "1000", True),
                  drift("config:segment.ms", None, "60000", False)],
        "config_ops": [op("cleanup.policy", "SET", "compact"),
                       op("retention.ms", "SET", "5000")]}])


def test_unlisted_overrides_are_removed_when_the_conf_says_so(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t", "configs": {}}
    actual = build_plan(desired_df(spark, [desired]), snapshot_df(spark, [LIVE]),
                        remove_unlisted=True)
    expect(spark, actual, [{
        **desired, **LIVE_COLUMNS, "action": "ALTER",
        "drift": [drift("config:retention.ms", None, "1000", True)],
        "config_ops": [op("retention.ms", "DELETE", None)]}])


def test_an_unlisted_override_alone_is_drift(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t", "configs": {}}
    expect(spark, plan_of(spark, [desired], [LIVE]), [{
        **desired, **LIVE_COLUMNS, "action": "DRIFT",
        "drift": [drift("config:retention.ms", None, "1000", False)]}])


def test_null_configs_are_not_managed(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t", "partitions": 3, "configs": None}
    actual = build_plan(desired_df(spark, [desired]), snapshot_df(spark, [LIVE]),
                        remove_unlisted=True)
    expect(spark, actual, [{**desired, **LIVE_COLUMNS, "action": "NOOP"}])


def test_assignment_of_existing_partitions_is_drift(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t", "replica_assignment": {0: [1], 1: [2], 2: [1]},
               "configs": {"retention.ms": "1000"}}
    expect(spark, plan_of(spark, [desired], [LIVE]), [{
        **desired, **LIVE_COLUMNS, "action": "DRIFT",
        "drift": [drift("replica_assignment",
                        '[{"key":0,"value":[1]},{"key":1,"value":[2]},{"key":2,"value":[1]}]',
                        '[{"key":0,"value":[1]},{"key":1,"value":[1]},{"key":2,"value":[1]}]',
                        False)]}])


def test_shorter_assignment_is_a_partition_decrease(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t", "replica_assignment": {0: [1], 1: [1]},
               "configs": {"retention.ms": "1000"}}
    expect(spark, plan_of(spark, [desired], [LIVE]), [{
        **desired, **LIVE_COLUMNS, "action": "DRIFT",
        "drift": [drift("partitions", "2", "3", False),
                  drift("replica_assignment",
                        '[{"key":0,"value":[1]},{"key":1,"value":[1]}]',
                        '[{"key":0,"value":[1]},{"key":1,"value":[1]},{"key":2,"value":[1]}]',
                        False)]}])


def test_longer_assignment_adds_partitions_with_their_replicas(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t",
               "replica_assignment": {0: [1], 1: [1], 2: [1], 3: [2], 4: [1]},
               "configs": {"retention.ms": "1000"}}
    plan = plan_of(spark, [desired], [LIVE])
    expect(spark, plan, [{
        **desired, **LIVE_COLUMNS, "action": "ALTER",
        "drift": [drift("partitions", "5", "3", True)]}])
    assert [tuple(r) for r in plan.select(*change_columns()).collect()] == [(5, [[2], [1]], 3)]


def test_invalid_rows_still_get_an_action(spark: SparkSession) -> None:
    desired = {"cluster": None, "topic": None, "state": "weird", "row_errors": ["x"]}
    expect(spark, plan_of(spark, [desired], [LIVE]), [{**desired, "action": "CREATE"}])


def test_scope_keeps_selected_clusters_glob_and_invalid_rows(spark: SparkSession) -> None:
    rows = [
        {"cluster": "a", "topic": "orders.x"}, {"cluster": "a", "topic": "pay.x"},
        {"cluster": "b", "topic": "orders.y"}, {"cluster": "nope", "topic": "z"},
        {"cluster": None, "topic": "q"},
    ]
    actual = desired_df(spark, rows).transform(in_scope(["a"], "orders.*", ["a", "b"]))
    expected = desired_df(spark, [rows[0], rows[3], rows[4]])
    assert_df_equality(actual, expected, ignore_row_order=True)


def test_glob_regex() -> None:
    assert glob_regex("orders.*") == r"^orders\..*$"
    assert glob_regex("a?c") == r"^a.c$"


def test_prune_only_topics_this_job_created_with_the_same_id(spark: SparkSession) -> None:
    live = [
        {**LIVE, "topic": "kept", "topic_id": "id-kept"},
        {**LIVE, "topic": "ours", "topic_id": "id-ours"},
        {**LIVE, "topic": "recreated", "topic_id": "id-new"},
        {**LIVE, "topic": "foreign", "topic_id": "id-foreign"},
    ]
    desired = desired_df(spark, [{"cluster": "local", "topic": "kept"}])
    created = rows_df(spark, _CREATED, [
        {"cluster": "local", "topic": "kept", "topic_id": "id-kept"},
        {"cluster": "local", "topic": "ours", "topic_id": "id-ours"},
        {"cluster": "local", "topic": "recreated", "topic_id": "id-old"},
    ])
    actual = prune_candidates(snapshot_df(spark, live), desired, created)
    expect(spark, actual, [{
        "cluster": "local", "topic": "ours", "action": "DELETE", "state": "absent",
        "source_table": "prune", "source_version": None,
        **LIVE_COLUMNS, "live_topic_id": "id-ours"}])



# --- topics the job's principal may not describe ----------------------------------------------

HIDDEN = {"cluster": "local", "topic": "h", "error_name": "TOPIC_AUTHORIZATION_FAILED"}


def test_present_topic_that_cannot_be_described_is_not_created(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "h", "partitions": 2}
    expect(spark, plan_of(spark, [desired], [HIDDEN]), [{
        **desired, "action": "NOOP", "live_error": "TOPIC_AUTHORIZATION_FAILED"}])


def test_absent_topic_that_cannot_be_described_is_not_deleted(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "h", "state": "absent"}
    expect(spark, plan_of(spark, [desired], [HIDDEN]), [{
        **desired, "action": "NOOP", "live_error": "TOPIC_AUTHORIZATION_FAILED"}])


def test_a_hidden_topic_does_not_affect_visible_ones(spark: SparkSession) -> None:
    desired = [{"cluster": "local", "topic": "h"}, {"cluster": "local", "topic": "new"},
               {"cluster": "local", "topic": "t", "state": "absent"}]
    expect(spark, plan_of(spark, desired, [HIDDEN, LIVE]), [
        {**desired[0], "action": "NOOP", "live_error": "TOPIC_AUTHORIZATION_FAILED"},
        {**desired[1], "action": "CREATE"},
        {**desired[2], **LIVE_COLUMNS, "action": "DELETE"},
    ])


# A replica move's throttled-replicas lists: the move appends to and subtracts from them.
MOVING = {**LIVE, "configs": [*LIVE["configs"], cfg(LEADER_THROTTLED_REPLICAS, "0:1,1:1"),
                              cfg(FOLLOWER_THROTTLED_REPLICAS, "0:2,1:2")]}


def test_a_moves_throttled_replicas_are_not_drift(spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t", "configs": {"retention.ms": "1000"}}
    expect(spark, plan_of(spark, [desired], [MOVING]), [{
        **desired, **LIVE_COLUMNS, "live_configs": MOVING["configs"], "action": "NOOP"}])


def test_a_moves_throttled_replicas_are_not_removed_with_the_unlisted(
        spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t", "configs": {}}
    actual = build_plan(desired_df(spark, [desired]), snapshot_df(spark, [MOVING]),
                        remove_unlisted=True)
    expect(spark, actual, [{
        **desired, **LIVE_COLUMNS, "live_configs": MOVING["configs"], "action": "ALTER",
        "drift": [drift("config:retention.ms", None, "1000", True)],
        "config_ops": [op("retention.ms", "DELETE", None)]}])


def test_a_row_listing_a_throttled_replicas_config_does_not_set_it(
        spark: SparkSession) -> None:
    desired = {"cluster": "local", "topic": "t",
               "configs": {"retention.ms": "1000", LEADER_THROTTLED_REPLICAS: "*"}}
    actual = build_plan(desired_df(spark, [desired]), snapshot_df(spark, [MOVING]),
                        remove_unlisted=True)
    expect(spark, actual, [{
        **desired, **LIVE_COLUMNS, "live_configs": MOVING["configs"], "action": "NOOP"}])
