"""Create policies: each one refuses what it should, lets the rest through, judges only CREATE."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from provisioning.conf import PolicySpec
from provisioning.kinds.topics.policies import with_create_policies
from provisioning.kinds.topics.policies.create import (
    assignment_brokers_exist,
    forbidden_configs,
    min_insync_below_rf,
    min_insync_within_rf,
    name_collision,
    owner_partition_quota,
    partition_budget,
    partitions_range,
    replication_factor_fits_cluster,
    replication_factor_range,
    required_configs,
    topic_name_pattern,
)
from provisioning.transforms.policies import PolicyContext, PolicyError
from tests.builders import cluster_states_df, plan_df, snapshot_df, violation

LOCAL = {"cluster": "local", "cluster_id": "c-local", "broker_ids": [1, 2],
         "default_partitions": 3, "default_replication_factor": 1}
OTHER = {"cluster": "other", "cluster_id": "c-other", "broker_ids": [1, 2, 3],
         "default_partitions": 6, "default_replication_factor": 3}
# A cluster whose broker defaults could not be read.
BLIND = {"cluster": "blind", "cluster_id": "c-blind", "broker_ids": [1, 2, 3],
         "default_partitions": None, "default_replication_factor": None}
NOT_BELOW = ("; with one replica down acks=all producers would stop: lower min.insync.replicas "
             "or raise the replication factor")


def context(spark: SparkSession, live: Sequence[Mapping[str, Any]] = (),
            clusters: Sequence[Mapping[str, Any]] = (LOCAL, OTHER, BLIND)) -> PolicyContext:
    return PolicyContext(clusters=cluster_states_df(spark, clusters),
                         live=snapshot_df(spark, live))


def create(topic: str, *violations: dict[str, str], **cols: Any) -> dict[str, Any]:
    """A CREATE row on cluster local (unless `cluster=` says otherwise)."""
    return {"cluster": "local", "topic": topic, "action": "CREATE", **cols,
            "policy_violations": list(violations)}


def row(action: str, topic: str, *violations: dict[str, str], **cols: Any) -> dict[str, Any]:
    return {"cluster": "local", "topic": topic, "action": action, **cols,
            "policy_violations": list(violations)}


def assert_plan(actual: DataFrame, spark: SparkSession, rows: list[dict[str, Any]]) -> None:
    assert_df_equality(actual, plan_df(spark, rows), ignore_row_order=True)


# --- replication_factor_fits_cluster ----------------------------------------------------------


def test_replication_factor_above_live_brokers_is_refused(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("big", replication_factor=3),
                           create("fits", replication_factor=2)])

    out = plan.transform(replication_factor_fits_cluster({}, context(spark)))

    assert_plan(out, spark, [
        create("big", violation(
            "replication_factor_fits_cluster",
            "replication factor 3 exceeds the 2 live broker(s) of cluster local; lower the "
            "replication factor or add brokers"), replication_factor=3),
        create("fits", replication_factor=2),
    ])


def test_replication_factor_fits_cluster_judges_the_broker_default(spark: SparkSession) -> None:
    clusters = [{**LOCAL, "default_replication_factor": 3}]
    plan = plan_df(spark, [create("defaulted")])

    out = plan.transform(replication_factor_fits_cluster({}, context(spark, clusters=clusters)))

    assert_plan(out, spark, [create("defaulted", violation(
        "replication_factor_fits_cluster",
        "replication factor 3 (the broker default of cluster local) exceeds the 2 live "
        "broker(s) of cluster local; lower the replication factor or add brokers"))])


def test_replication_factor_fits_cluster_counts_assignment_replicas(
        spark: SparkSession) -> None:
    plan = plan_df(spark, [create("assigned", replica_assignment={0: [1, 2, 2]})])

    out = plan.transform(replication_factor_fits_cluster({}, context(spark)))

    assert_plan(out, spark, [create("assigned", violation(
        "replication_factor_fits_cluster",
        "replication factor 3 exceeds the 2 live broker(s) of cluster local; lower the "
        "replication factor or add brokers"), replica_assignment={0: [1, 2, 2]})])


def test_empty_assignment_does_not_fail_the_run(spark: SparkSession) -> None:
    rows = [create("empty", replica_assignment={})]

    out = plan_df(spark, rows).transform(replication_factor_fits_cluster({}, context(spark)))

    assert_plan(out, spark, rows)


def test_unknown_replication_factor_is_not_judged(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("defaulted", cluster="blind")])

    out = plan.transform(replication_factor_fits_cluster({}, context(spark)))

    assert_plan(out, spark, [create("defaulted", cluster="blind")])


def test_cluster_missing_from_context_is_not_judged(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("elsewhere", cluster="unknown", replication_factor=9)])

    out = plan.transform(replication_factor_fits_cluster({}, context(spark)))

    assert_plan(out, spark, [create("elsewhere", cluster="unknown", replication_factor=9)])


# --- assignment_brokers_exist -----------------------------------------------------------------


def test_assignment_naming_unknown_brokers_is_refused(spark: SparkSession) -> None:
    bad = {0: [1, 4], 1: [5, 1]}
    good = {0: [1, 2], 1: [2, 1]}
    plan = plan_df(spark, [create("bad", replica_assignment=bad),
                           create("good", replica_assignment=good)])

    out = plan.transform(assignment_brokers_exist({}, context(spark)))

    assert_plan(out, spark, [
        create("bad", violation(
            "assignment_brokers_exist",
            "replica_assignment names broker(s) 4, 5 that are not live in cluster local "
            "(live brokers: 1, 2); assign only live brokers"), replica_assignment=bad),
        create("good", replica_assignment=good),
    ])


# --- min_insync_within_rf ---------------------------------------------------------------------


def test_min_insync_above_replication_factor_is_refused(spark: SparkSession) -> None:
    plan = plan_df(spark, [
        create("above", replication_factor=2, configs={"min.insync.replicas": "3"}),
        create("equal", replication_factor=2, configs={"min.insync.replicas": "2"}),
    ])

    out = plan.transform(min_insync_within_rf({}, context(spark)))

    assert_plan(out, spark, [
        create("above", violation(
            "min_insync_within_rf",
            "min.insync.replicas 3 exceeds the replication factor 2; acks=all producers could "
            "never write: lower min.insync.replicas or raise the replication factor"),
            replication_factor=2, configs={"min.insync.replicas": "3"}),
        create("equal", replication_factor=2, configs={"min.insync.replicas": "2"}),
    ])


def test_min_insync_that_is_not_a_number_is_left_to_the_broker(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("odd", replication_factor=1,
                                  configs={"min.insync.replicas": "two"})])

    out = plan.transform(min_insync_within_rf({}, context(spark)))

    assert_plan(out, spark, [create("odd", replication_factor=1,
                                    configs={"min.insync.replicas": "two"})])


# --- name_collision ---------------------------------------------------------------------------


def test_create_colliding_with_a_live_topic_is_refused(spark: SparkSession) -> None:
    live = [{"cluster": "local", "topic": "orders_v1", "partitions": 3},
            {"cluster": "other", "topic": "payments_v1", "partitions": 3}]
    plan = plan_df(spark, [create("orders.v1"), create("payments.v1"), create("fresh.v1")])

    out = plan.transform(name_collision({}, context(spark, live)))

    assert_plan(out, spark, [
        create("orders.v1", violation(
            "name_collision",
            "topic orders.v1 collides with live topic(s) orders_v1 of cluster local: Kafka "
            "treats '.' and '_' alike in metric names; rename one of them")),
        create("payments.v1"),
        create("fresh.v1"),
    ])


def test_planned_creates_colliding_with_each_other_are_both_refused(
        spark: SparkSession) -> None:
    plan = plan_df(spark, [create("a.b"), create("a_b"), create("c.d"),
                           create("c_d", cluster="other")])

    out = plan.transform(name_collision({}, context(spark)))

    assert_plan(out, spark, [
        create("a.b", violation(
            "name_collision",
            "topic a.b collides with planned topic(s) a_b of cluster local: Kafka treats '.' "
            "and '_' alike in metric names; rename one of them")),
        create("a_b", violation(
            "name_collision",
            "topic a_b collides with planned topic(s) a.b of cluster local: Kafka treats '.' "
            "and '_' alike in metric names; rename one of them")),
        create("c.d"),
        create("c_d", cluster="other"),
    ])


def test_name_collision_names_live_and_planned_topics_together(spark: SparkSession) -> None:
    live = [{"cluster": "local", "topic": "x_y.z", "partitions": 1}]
    plan = plan_df(spark, [create("x.y.z"), create("x.y_z"),
                           row("NOOP", "x_y.z", live_partitions=1)])

    out = plan.transform(name_collision({}, context(spark, live)))

    assert_plan(out, spark, [
        create("x.y.z", violation(
            "name_collision",
            "topic x.y.z collides with live topic(s) x_y.z; planned topic(s) x.y_z of cluster "
            "local: Kafka treats '.' and '_' alike in metric names; rename one of them")),
        create("x.y_z", violation(
            "name_collision",
            "topic x.y_z collides with live topic(s) x_y.z; planned topic(s) x.y.z of cluster "
            "local: Kafka treats '.' and '_' alike in metric names; rename one of them")),
        row("NOOP", "x_y.z", live_partitions=1),
    ])


# --- always-on together -----------------------------------------------------------------------


def test_always_on_checks_ignore_delete_and_noop_rows(spark: SparkSession) -> None:
    live = [{"cluster": "local", "topic": "a_b", "partitions": 1}]
    rows = [
        row("DELETE", "a.b", replication_factor=5, replica_assignment={0: [7]},
            configs={"min.insync.replicas": "9"}),
        row("NOOP", "a_b", replication_factor=5, configs={"min.insync.replicas": "9"}),
    ]

    out = with_create_policies(plan_df(spark, rows), [], context(spark, live))

    assert_plan(out, spark, rows)


def test_always_on_checks_run_first_then_configured_ones_in_conf_order(
        spark: SparkSession) -> None:
    specs = [
        PolicySpec("partitions_range", {"max": 8}, "policies.create[0]"),
        PolicySpec("topic_name_pattern", {"default": "[a-z]+"}, "policies.create[1]"),
    ]
    plan = plan_df(spark, [create("Bad", partitions=9, replication_factor=3)])

    out = with_create_policies(plan, specs, context(spark))

    assert_plan(out, spark, [create(
        "Bad",
        violation("replication_factor_fits_cluster",
                  "replication factor 3 exceeds the 2 live broker(s) of cluster local; lower "
                  "the replication factor or add brokers"),
        violation("partitions_range", "partitions 9 exceeds the maximum of 8 allowed on create"),
        violation("topic_name_pattern",
                  "topic Bad does not match [a-z]+, the default naming rule; rename the topic"),
        partitions=9, replication_factor=3)])


def test_violations_already_on_a_row_are_kept(spark: SparkSession) -> None:
    earlier = violation("earlier", "from an earlier step")
    plan = plan_df(spark, [create("t", earlier, replication_factor=3)])

    out = plan.transform(replication_factor_fits_cluster({}, context(spark)))

    assert_plan(out, spark, [create(
        "t", earlier,
        violation("replication_factor_fits_cluster",
                  "replication factor 3 exceeds the 2 live broker(s) of cluster local; lower "
                  "the replication factor or add brokers"), replication_factor=3)])


def test_plan_without_the_plan_columns_is_refused_up_front(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("t")]).drop("force")

    with pytest.raises(PolicyError) as err:
        with_create_policies(plan, [], context(spark))

    assert str(err.value) == (
        "the plan given to the create policies does not have exactly the PLAN columns "
        "(names, order, types): missing columns: force")


# --- topic_name_pattern -----------------------------------------------------------------------


OWNER_RULES = {"by_owner": {"payments": r"payments\.[a-z]+"}, "default": r"[a-z]+(\.[a-z]+)*"}


def test_topic_of_an_owner_with_a_rule_must_fully_match_it(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("payments.orders", owner="payments"),
                           create("old.payments.orders", owner="payments")])

    out = plan.transform(topic_name_pattern(OWNER_RULES, context(spark)))

    assert_plan(out, spark, [
        create("payments.orders", owner="payments"),
        create("old.payments.orders", violation(
            "topic_name_pattern",
            r"topic old.payments.orders does not match payments\.[a-z]+, the naming rule of "
            "owner payments; rename the topic"), owner="payments"),
    ])


def test_owner_without_a_rule_gets_the_default_rule(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("search.index", owner="search"),
                           create("Search-Index", owner="search"),
                           create("no_owner")])

    out = plan.transform(topic_name_pattern(OWNER_RULES, context(spark)))

    assert_plan(out, spark, [
        create("search.index", owner="search"),
        create("Search-Index", violation(
            "topic_name_pattern",
            r"topic Search-Index does not match [a-z]+(\.[a-z]+)*, the default naming rule; "
            "rename the topic"), owner="search"),
        create("no_owner", violation(
            "topic_name_pattern",
            r"topic no_owner does not match [a-z]+(\.[a-z]+)*, the default naming rule; "
            "rename the topic")),
    ])


def test_owner_without_a_rule_and_no_default_is_not_judged(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("ANY_name", owner="search")])

    out = plan.transform(topic_name_pattern({"by_owner": {"payments": "payments.*"}},
                                            context(spark)))

    assert_plan(out, spark, [create("ANY_name", owner="search")])


def test_configured_create_policies_ignore_delete_rows(spark: SparkSession) -> None:
    specs = [
        PolicySpec("topic_name_pattern", {"default": "[a-z]+"}, "policies.create[0]"),
        PolicySpec("partitions_range", {"min": 50}, "policies.create[1]"),
        PolicySpec("replication_factor_range", {"min": 3}, "policies.create[2]"),
        PolicySpec("required_configs", {"configs": {"retention.ms": None}}, "policies.create[3]"),
        PolicySpec("forbidden_configs", {"configs": ["cleanup.policy"]}, "policies.create[4]"),
        PolicySpec("min_insync_below_rf", {}, "policies.create[5]"),
        PolicySpec("partition_budget", {"max_partitions": 1}, "policies.create[6]"),
        PolicySpec("owner_partition_quota", {"default": 0}, "policies.create[7]"),
    ]
    rows = [row("DELETE", "BAD_NAME", partitions=1, replication_factor=1, owner="x",
                configs={"cleanup.policy": "compact", "min.insync.replicas": "1"})]

    out = with_create_policies(plan_df(spark, rows), specs, context(spark))

    assert_plan(out, spark, rows)


# --- partitions_range / replication_factor_range ----------------------------------------------


def test_partitions_outside_the_range_are_refused(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("few", partitions=2), create("many", partitions=65),
                           create("ok", partitions=64)])

    out = plan.transform(partitions_range({"min": 3, "max": 64}, context(spark)))

    assert_plan(out, spark, [
        create("few", violation("partitions_range",
                                "partitions 2 is below the minimum of 3 allowed on create"),
               partitions=2),
        create("many", violation("partitions_range",
                                 "partitions 65 exceeds the maximum of 64 allowed on create"),
               partitions=65),
        create("ok", partitions=64),
    ])


def test_partitions_range_counts_the_assignment(spark: SparkSession) -> None:
    assignment = {0: [1], 1: [2]}
    plan = plan_df(spark, [create("assigned", partitions=10, replica_assignment=assignment)])

    out = plan.transform(partitions_range({"min": 3}, context(spark)))

    assert_plan(out, spark, [create(
        "assigned", violation("partitions_range",
                              "partitions 2 is below the minimum of 3 allowed on create"),
        partitions=10, replica_assignment=assignment)])


def test_partitions_range_judges_the_broker_default(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("defaulted"), create("blind", cluster="blind")])

    out = plan.transform(partitions_range({"min": 4}, context(spark)))

    assert_plan(out, spark, [
        create("defaulted", violation(
            "partitions_range",
            "partitions 3 (the broker default of cluster local) is below the minimum of 4 "
            "allowed on create")),
        create("blind", cluster="blind"),
    ])


def test_replication_factor_outside_the_range_is_refused(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("one", replication_factor=1),
                           create("defaulted"),
                           create("three", replication_factor=3, cluster="other")])

    out = plan.transform(replication_factor_range({"min": 2, "max": 3}, context(spark)))

    assert_plan(out, spark, [
        create("one", violation(
            "replication_factor_range",
            "replication factor 1 is below the minimum of 2 allowed on create"),
            replication_factor=1),
        create("defaulted", violation(
            "replication_factor_range",
            "replication factor 1 (the broker default of cluster local) is below the minimum "
            "of 2 allowed on create")),
        create("three", replication_factor=3, cluster="other"),
    ])


def test_range_factory_refuses_bad_params() -> None:
    with pytest.raises(PolicyError) as err:
        partitions_range({"min": 5, "max": 2}, None)  # type: ignore[arg-type]

    assert str(err.value) == "create policy partitions_range: min: must be <= max (5 > 2)"


# --- required_configs / forbidden_configs -----------------------------------------------------


def test_missing_required_config_is_refused(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("bare"), create("set", configs={"retention.ms": "1"})])

    out = plan.transform(required_configs({"configs": {"retention.ms": None}}, context(spark)))

    assert_plan(out, spark, [
        create("bare", violation(
            "required_configs",
            "config retention.ms is required; add it to the topic's configs")),
        create("set", configs={"retention.ms": "1"}),
    ])


def test_required_config_value_must_fully_match_its_pattern(spark: SparkSession) -> None:
    plan = plan_df(spark, [
        create("partial", configs={"cleanup.policy": "compact,delete"}),
        create("exact", configs={"cleanup.policy": "delete"}),
        create("absent", configs={"segment.ms": "1"}),
    ])
    params = {"configs": {"cleanup.policy": "delete|compact"}}

    out = plan.transform(required_configs(params, context(spark)))

    assert_plan(out, spark, [
        create("partial", violation(
            "required_configs",
            "config cleanup.policy=compact,delete does not match the required pattern "
            "delete|compact"), configs={"cleanup.policy": "compact,delete"}),
        create("exact", configs={"cleanup.policy": "delete"}),
        create("absent", violation(
            "required_configs",
            "config cleanup.policy is required (matching delete|compact); add it to the "
            "topic's configs"), configs={"segment.ms": "1"}),
    ])


def test_forbidden_configs_are_refused(spark: SparkSession) -> None:
    configs = {"unclean.leader.election.enable": "true", "retention.ms": "-1", "a": "b"}
    plan = plan_df(spark, [create("bad", configs=configs), create("fine", configs={"a": "b"}),
                           create("none")])
    params = {"configs": ["retention.ms", "unclean.leader.election.enable"]}

    out = plan.transform(forbidden_configs(params, context(spark)))

    assert_plan(out, spark, [
        create("bad", violation(
            "forbidden_configs",
            "config(s) retention.ms, unclean.leader.election.enable may not be set on create; "
            "remove them from the topic's configs"), configs=configs),
        create("fine", configs={"a": "b"}),
        create("none"),
    ])


# --- min_insync_below_rf ----------------------------------------------------------------------


def test_min_insync_not_below_replication_factor_is_refused(spark: SparkSession) -> None:
    plan = plan_df(spark, [
        create("equal", replication_factor=2, configs={"min.insync.replicas": "2"}),
        create("below", replication_factor=3, configs={"min.insync.replicas": "2"}),
        create("unset", replication_factor=1),
    ])

    out = plan.transform(min_insync_below_rf({}, context(spark)))

    assert_plan(out, spark, [
        create("equal", violation(
            "min_insync_below_rf",
            "min.insync.replicas 2 is not below the replication factor 2" + NOT_BELOW),
            replication_factor=2, configs={"min.insync.replicas": "2"}),
        create("below", replication_factor=3, configs={"min.insync.replicas": "2"}),
        create("unset", replication_factor=1),
    ])


def test_min_insync_below_rf_judges_the_broker_default(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("defaulted", configs={"min.insync.replicas": "1"})])

    out = plan.transform(min_insync_below_rf({}, context(spark)))

    assert_plan(out, spark, [create("defaulted", violation(
        "min_insync_below_rf",
        "min.insync.replicas 1 is not below the replication factor 1 (the broker default of "
        "cluster local)" + NOT_BELOW), configs={"min.insync.replicas": "1"})])


# --- partition_budget -------------------------------------------------------------------------


def _budget_message(cluster: str, partitions: int, live: int, planned: int, budget: int) -> str:
    return (f"creating {partitions} partition(s) brings cluster {cluster} to {live + planned} "
            f"partitions ({live} live + {planned} planned by this run up to this topic, in "
            f"topic order), over the budget of {budget}")


LIVE_10 = [
    {"cluster": "local", "topic": "__consumer_offsets", "internal": True, "partitions": 5},
    {"cluster": "local", "topic": "old", "internal": False, "partitions": 5},
]


def test_budget_admits_creates_in_topic_order_until_it_is_spent(spark: SparkSession) -> None:
    plan = plan_df(spark, [
        create("d", partitions=1), create("c", partitions=4), create("b", partitions=4),
        create("a", partitions=4),
        row("NOOP", "old", live_partitions=5),
        row("DELETE", "gone", partitions=50, live_partitions=50),
    ])

    out = plan.transform(partition_budget({"max_partitions": 20}, context(spark, LIVE_10)))

    assert_plan(out, spark, [
        create("a", partitions=4),
        create("b", partitions=4),
        create("c", violation("partition_budget", _budget_message("local", 4, 10, 12, 20)),
               partitions=4),
        create("d", violation("partition_budget", _budget_message("local", 1, 10, 13, 20)),
               partitions=1),
        row("NOOP", "old", live_partitions=5),
        row("DELETE", "gone", partitions=50, live_partitions=50),
    ])


def test_row_refused_earlier_neither_consumes_nor_is_judged_by_the_budget(
        spark: SparkSession) -> None:
    earlier = violation("topic_name_pattern", "bad name")
    plan = plan_df(spark, [create("a", partitions=4), create("b", earlier, partitions=100),
                           create("c", partitions=6)])

    out = plan.transform(partition_budget({"max_partitions": 20}, context(spark, LIVE_10)))

    assert_plan(out, spark, [create("a", partitions=4), create("b", earlier, partitions=100),
                             create("c", partitions=6)])


def test_budget_counts_the_broker_default_partitions(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("a")])

    out = plan.transform(partition_budget({"max_partitions": 12}, context(spark, LIVE_10)))

    assert_plan(out, spark, [
        create("a", violation("partition_budget", _budget_message("local", 3, 10, 3, 12)))])


def test_budget_is_kept_per_cluster(spark: SparkSession) -> None:
    live = [*LIVE_10, {"cluster": "other", "topic": "huge", "partitions": 100}]
    plan = plan_df(spark, [create("a", partitions=4), create("x", partitions=1, cluster="other")])

    out = plan.transform(partition_budget({"max_partitions": 20}, context(spark, live)))

    assert_plan(out, spark, [
        create("a", partitions=4),
        create("x", violation("partition_budget", _budget_message("other", 1, 100, 1, 20)),
               partitions=1, cluster="other"),
    ])


# --- owner_partition_quota --------------------------------------------------------------------


def _quota_message(owner: str, cluster: str, in_use: int, planned: int, quota: int) -> str:
    return (f"owner {owner} would hold {in_use + planned} partition(s) on cluster {cluster} "
            f"({in_use} in its live topics + {planned} planned by this run up to this topic, "
            f"in topic order), over its quota of {quota}")


def test_quota_counts_the_owners_live_topics_then_its_creates_in_topic_order(
        spark: SparkSession) -> None:
    plan = plan_df(spark, [
        row("NOOP", "pay.old", owner="payments", live_partitions=8),
        create("pay.b", owner="payments", partitions=2),
        create("pay.a", owner="payments", partitions=1),
        create("search.a", owner="search", partitions=50),
    ])
    params = {"quotas": {"payments": 10}, "default": 100}

    out = plan.transform(owner_partition_quota(params, context(spark)))

    assert_plan(out, spark, [
        row("NOOP", "pay.old", owner="payments", live_partitions=8),
        create("pay.a", owner="payments", partitions=1),
        create("pay.b", violation("owner_partition_quota",
                                  _quota_message("payments", "local", 8, 3, 10)),
               owner="payments", partitions=2),
        create("search.a", owner="search", partitions=50),
    ])


def test_quota_ignores_other_owners_and_other_clusters(spark: SparkSession) -> None:
    plan = plan_df(spark, [
        row("NOOP", "search.big", owner="search", live_partitions=500),
        row("NOOP", "pay.elsewhere", owner="payments", live_partitions=500, cluster="other"),
        create("pay.a", owner="payments", partitions=10),
    ])

    out = plan.transform(owner_partition_quota({"quotas": {"payments": 10}}, context(spark)))

    assert_plan(out, spark, [
        row("NOOP", "search.big", owner="search", live_partitions=500),
        row("NOOP", "pay.elsewhere", owner="payments", live_partitions=500, cluster="other"),
        create("pay.a", owner="payments", partitions=10),
    ])


def test_row_refused_earlier_consumes_no_quota(spark: SparkSession) -> None:
    earlier = violation("partitions_range", "too many")
    plan = plan_df(spark, [create("a", earlier, owner="payments", partitions=100),
                           create("b", owner="payments", partitions=5)])

    out = plan.transform(owner_partition_quota({"quotas": {"payments": 5}}, context(spark)))

    assert_plan(out, spark, [create("a", earlier, owner="payments", partitions=100),
                             create("b", owner="payments", partitions=5)])


def test_owner_without_quota_and_no_default_is_not_judged(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("a", owner="search", partitions=1000)])

    out = plan.transform(owner_partition_quota({"quotas": {"payments": 5}}, context(spark)))

    assert_plan(out, spark, [create("a", owner="search", partitions=1000)])


def test_rows_without_owner_share_the_default_quota(spark: SparkSession) -> None:
    plan = plan_df(spark, [create("a", partitions=3), create("b", partitions=3)])

    out = plan.transform(owner_partition_quota({"default": 5}, context(spark)))

    assert_plan(out, spark, [
        create("a", partitions=3),
        create("b", violation("owner_partition_quota", _quota_message("(none)", "local", 0, 6, 5)),
               partitions=3),
    ])


# --- custom -----------------------------------------------------------------------------------


EXAMPLE = "tests.unit.custom_policy_example"


def test_custom_create_policy_gets_its_params_and_appends_violations(
        spark: SparkSession) -> None:
    spec = PolicySpec("custom", {"callable": f"{EXAMPLE}:refuse_word", "word": "tmp"},
                      "policies.create[0]")
    plan = plan_df(spark, [create("orders.tmp"), create("orders"), row("DELETE", "old.tmp")])

    out = with_create_policies(plan, [spec], context(spark))

    assert_plan(out, spark, [
        create("orders.tmp", violation("no_word", "topic orders.tmp contains the word 'tmp'")),
        create("orders"),
        row("DELETE", "old.tmp"),
    ])


def test_custom_policy_named_with_dots_only_is_resolved(spark: SparkSession) -> None:
    spec = PolicySpec("custom", {"callable": f"{EXAMPLE}.refuse_word", "word": "x"},
                      "policies.create[0]")
    plan = plan_df(spark, [create("x")])

    out = with_create_policies(plan, [spec], context(spark))

    assert_plan(out, spark, [create("x", violation("no_word", "topic x contains the word 'x'"))])


def test_custom_policy_returning_other_columns_is_a_clear_error(spark: SparkSession) -> None:
    spec = PolicySpec("custom", {"callable": f"{EXAMPLE}:drops_owner"}, "policies.create[1]")

    with pytest.raises(PolicyError) as err:
        with_create_policies(plan_df(spark, [create("t")]), [spec], context(spark))

    assert str(err.value) == (
        f"policies.create[1] (custom): the DataFrame custom create policy "
        f"'{EXAMPLE}:drops_owner' returned does not have exactly the PLAN columns (names, "
        f"order, types): missing columns: owner; extra columns: note")


def test_custom_policy_changing_a_type_is_a_clear_error(spark: SparkSession) -> None:
    spec = PolicySpec("custom", {"callable": f"{EXAMPLE}:retypes_partitions"},
                      "policies.create[0]")

    with pytest.raises(PolicyError) as err:
        with_create_policies(plan_df(spark, [create("t")]), [spec], context(spark))

    assert str(err.value) == (
        f"policies.create[0] (custom): the DataFrame custom create policy "
        f"'{EXAMPLE}:retypes_partitions' returned does not have exactly the PLAN columns "
        f"(names, order, types): wrong types: partitions is bigint, expected int")


def test_custom_policy_returning_no_dataframe_is_a_clear_error(spark: SparkSession) -> None:
    spec = PolicySpec("custom", {"callable": f"{EXAMPLE}:returns_nothing"}, "policies.create[0]")

    with pytest.raises(PolicyError) as err:
        with_create_policies(plan_df(spark, [create("t")]), [spec], context(spark))

    assert str(err.value) == (
        f"policies.create[0] (custom): custom create policy '{EXAMPLE}:returns_nothing' must "
        f"return a DataFrame, got NoneType")


def test_the_cut_hook_runs_every_four_policies_and_changes_no_row(spark: SparkSession) -> None:
    specs = [PolicySpec("partitions_range", {"max": 8}, f"policies.create[{i}]")
             for i in range(5)]  # 4 always-on + 5 configured = 9 policies
    plan = plan_df(spark, [create("big", partitions=9), create("ok", partitions=1)])
    cuts: list[int] = []

    def cut(df: DataFrame) -> DataFrame:
        cuts.append(len(cuts) + 1)
        return df.localCheckpoint(eager=False)

    out = with_create_policies(plan, specs, context(spark), cut)

    assert cuts == [1, 2]  # after policies 4 and 8; none after the last one
    assert_df_equality(out, with_create_policies(plan, specs, context(spark)),
                       ignore_row_order=True)
