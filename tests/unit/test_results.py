"""A topic the broker says already exists is judged by the plan's own drift definition."""

from __future__ import annotations

from typing import Any

from chispa import assert_df_equality
from pyspark.sql import SparkSession

from provisioning.kinds.topics.plan import build_plan, settle_existing, without_answer
from schemas import TOPIC_RESULT
from tests.builders import desired_df, plan_df, rows_df, snapshot_df


def cfg(name: str, value: str, source: str = "DYNAMIC_TOPIC_CONFIG") -> dict[str, Any]:
    return {"name": name, "value": value, "source": source, "read_only": False,
            "sensitive": False}


# The live topic: 3 partitions, RF 1, retention.ms set on the topic, a broker-level default.
LIVE = {"result_partitions": 3, "result_replication_factor": 1,
        "result_assignment": {0: [1], 1: [1], 2: [1]},
        "result_configs": [cfg("retention.ms", "1000"),
                           cfg("compression.type", "lz4", "DYNAMIC_BROKER_CONFIG")]}
EXISTS = {"cluster": "local", "phase": "apply", "outcome": "already_present",
          "topic_id": "id-x", "error_code": 36, "error_name": "TOPIC_ALREADY_EXISTS",
          "error_message": "the topic exists as requested", "attempts": 1, **LIVE}


def requested(topic: str, **fields: Any) -> dict[str, Any]:
    return {"cluster": "local", "topic": topic, "action": "CREATE", "source_table": "m",
            "source_version": 1, "row_errors": [], "drift": [], **fields}


def test_existing_topics_are_compared_with_their_request(spark: SparkSession) -> None:
    plan = plan_df(spark, [
        # asks for exactly what is live
        requested("same", partitions=3, replication_factor=1,
                  configs={"retention.ms": "1000"}),
        # manages configs and lists none, but the live topic overrides retention.ms
        requested("unlisted", partitions=3, configs={}),
        # does not manage configs (null): the live override is not compared
        requested("unmanaged", partitions=3),
        # asks for more partitions and another retention
        requested("differs", partitions=6, configs={"retention.ms": "2000"}),
        # created by an earlier attempt of the task, as asked
        requested("retried", configs={"retention.ms": "1000"}),
        requested("undescribed", partitions=9),
        requested("validated", partitions=9),
    ])
    results = rows_df(spark, TOPIC_RESULT, [
        {**EXISTS, "topic": "same"},
        {**EXISTS, "topic": "unlisted"},
        {**EXISTS, "topic": "unmanaged"},
        {**EXISTS, "topic": "differs"},
        {**EXISTS, "topic": "retried", "outcome": "created",
         "error_message": "created by an earlier attempt of this Spark task"},
        {**EXISTS, "topic": "undescribed", "result_partitions": None,
         "result_replication_factor": None, "result_assignment": None,
         "result_configs": None, "error_message": "Topic 'undescribed' already exists."},
        {"cluster": "local", "topic": "validated", "phase": "validate",
         "outcome": "validated", "error_code": 0, "error_name": "NONE", "attempts": 1},
    ])

    expected = rows_df(spark, TOPIC_RESULT, [
        {**EXISTS, "topic": "same"},
        # The plan calls a live-only override drift; so does the apply phase.
        {**EXISTS, "topic": "unlisted", "outcome": "drift",
         "error_message": "the topic exists and differs: config retention.ms: 1000 -> "
                          "(not set)"},
        {**EXISTS, "topic": "unmanaged"},
        {**EXISTS, "topic": "differs", "outcome": "drift",
         "error_message": "the topic exists and differs: partitions: 3 -> 6; "
                          "config retention.ms: 1000 -> 2000"},
        {**EXISTS, "topic": "retried", "outcome": "created",
         "error_message": "created by an earlier attempt of this Spark task"},
        {**EXISTS, "topic": "undescribed", "result_partitions": None,
         "result_replication_factor": None, "result_assignment": None,
         "result_configs": None, "error_message": "Topic 'undescribed' already exists."},
        {"cluster": "local", "topic": "validated", "phase": "validate",
         "outcome": "validated", "error_code": 0, "error_name": "NONE", "attempts": 1},
    ])
    assert_df_equality(settle_existing(results, plan), expected, ignore_row_order=True,
                       ignore_nullable=True)


def test_the_plan_judges_the_same_live_topic_the_same_way(spark: SparkSession) -> None:
    live = snapshot_df(spark, [{
        "cluster": "local", "topic": "unlisted", "topic_id": "id-x", "internal": False,
        "partitions": 3, "replication_factor": 1, "replica_assignment": LIVE["result_assignment"],
        "configs": LIVE["result_configs"], "consumer_groups": []}])
    planned = build_plan(desired_df(spark, [{"cluster": "local", "topic": "unlisted",
                                             "partitions": 3, "configs": {}}]), live)
    assert [(r["action"], [d.asDict() for d in r["drift"]]) for r in planned.collect()] == [
        ("DRIFT", [{"field": "config:retention.ms", "desired": None, "actual": "1000",
                    "supported": False}])]


def test_unreached_topics_are_failed_with_the_reason_and_no_attempt(spark: SparkSession
                                                                    ) -> None:
    targets = spark.createDataFrame([("local", "a"), ("mirror", "b")], "cluster string, "
                                    "topic string")
    expected = rows_df(spark, TOPIC_RESULT, [
        {"cluster": c, "topic": t, "phase": "apply", "outcome": "failed",
         "error_name": "LOCK_LOST", "error_message": "lock lost: taken over", "attempts": 0}
        for c, t in (("local", "a"), ("mirror", "b"))])
    assert_df_equality(without_answer(targets, "apply", "failed", "LOCK_LOST",
                                      "lock lost: taken over"), expected,
                       ignore_row_order=True, ignore_nullable=True)
