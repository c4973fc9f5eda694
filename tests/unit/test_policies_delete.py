"""Delete policies: protected and in-use topics, the per-cluster cap, configured policies."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning.conf import PolicySpec
from provisioning.kinds.topics.conf import DEFAULT_PROTECTED_TOPICS
from provisioning.kinds.topics.policies import with_delete_policies
from provisioning.kinds.topics.policies.delete import (
    ALWAYS_PROTECTED,
    max_deletes_per_cluster,
    protected_patterns,
    protected_topics,
    topic_in_use,
)
from provisioning.transforms.policies import PolicyContext, PolicyError
from provisioning.transforms.scope import glob_to_regex
from tests.builders import cluster_states_df, plan_df, snapshot_df, violation

EXAMPLE = "tests.unit.custom_policy_example"


def context(spark: SparkSession, protected: Sequence[str] = DEFAULT_PROTECTED_TOPICS,
            deny_list: Sequence[str] = (), cap: int = 10,
            live: Sequence[Mapping[str, Any]] = ()) -> PolicyContext:
    clusters = [{"cluster": "local", "broker_ids": [1]}, {"cluster": "other", "broker_ids": [1]}]
    return PolicyContext(clusters=cluster_states_df(spark, clusters),
                         live=snapshot_df(spark, live), protected=tuple(protected),
                         deny_list=tuple(deny_list), max_deletes_per_cluster=cap)


def delete(topic: str, *violations: dict[str, str], **cols: Any) -> dict[str, Any]:
    """A DELETE row on cluster local (unless `cluster=` says otherwise), no consumer group."""
    return {"cluster": "local", "topic": topic, "action": "DELETE", "state": "absent",
            "live_consumer_groups": [], **cols, "policy_violations": list(violations)}


def create(topic: str, **cols: Any) -> dict[str, Any]:
    return {"cluster": "local", "topic": topic, "action": "CREATE", **cols}


def assert_plan(actual: DataFrame, spark: SparkSession, rows: list[dict[str, Any]]) -> None:
    assert_df_equality(actual, plan_df(spark, rows), ignore_row_order=True)


def _protected(topic: str, reasons: str) -> dict[str, str]:
    return violation("protected_topics", f"topic {topic} may not be deleted: {reasons}; drop its "
                                         "`state: absent` manifest row")


def _in_use(topic: str, groups: str) -> dict[str, str]:
    return violation("topic_in_use",
                     f"topic {topic} is in use: consumer group(s) {groups} have committed "
                     "offsets on it; stop them and delete the groups, or set `force: true` on "
                     "its manifest row to delete it anyway")


def _groups_unknown(topic: str) -> dict[str, str]:
    return violation("topic_in_use",
                     f"cannot tell whether topic {topic} is in use: the job's principal may not "
                     "see every consumer group; grant it Describe on Group '*' (or on the "
                     "cluster), or set `force: true` on its manifest row to delete it anyway")


def _capped(planned: int, cluster: str, cap: int) -> dict[str, str]:
    return violation("max_deletes_per_cluster",
                     f"{planned} deletions planned on cluster {cluster} exceed the per-run cap "
                     f"of {cap}; no deletion is made on this cluster (split the change or raise "
                     "deletes.max_per_cluster)")


# --- globs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("glob", "regex"), [
    ("__*", "^__.*$"),
    ("_schemas", "^_schemas$"),
    ("connect-*", "^connect\\-.*$"),
    ("a.b?c", "^a\\.b.c$"),
    ("x[1]+(y)|z$^", "^x\\[1\\]\\+\\(y\\)\\|z\\$\\^$"),
    ("", "^$"),
])
def test_glob_to_regex(glob: str, regex: str) -> None:
    assert glob_to_regex(glob) == regex


def test_glob_regexes_match_whole_topic_names_in_spark(spark: SparkSession) -> None:
    globs = ["__*", "connect-*", "a.b?c", "x[1]"]
    names = ["__consumer_offsets", "my__topic", "connect-offsets", "kafka-connect-x", "a.bXc",
             "aXbXc", "a.bc", "x[1]", "x1"]
    topics = spark.createDataFrame([(n,) for n in names], "topic string")

    matched = topics.select(
        "topic", *[F.col("topic").rlike(glob_to_regex(g)).alias(f"glob{i}")
                   for i, g in enumerate(globs)])

    expected = spark.createDataFrame([
        ("__consumer_offsets", True, False, False, False),
        ("my__topic", False, False, False, False),
        ("connect-offsets", False, True, False, False),
        ("kafka-connect-x", False, False, False, False),
        ("a.bXc", False, False, True, False),
        ("aXbXc", False, False, False, False),
        ("a.bc", False, False, False, False),
        ("x[1]", False, False, False, True),
        ("x1", False, False, False, False),
    ], "topic string, glob0 boolean, glob1 boolean, glob2 boolean, glob3 boolean")
    assert_df_equality(matched, expected, ignore_row_order=True, ignore_nullable=True)


# --- protected_topics -------------------------------------------------------------------------


def test_internal_topic_is_never_deleted(spark: SparkSession) -> None:
    plan = plan_df(spark, [delete("offsets_store", live_internal=True),
                           delete("orders", live_internal=False)])

    out = plan.transform(protected_topics({}, context(spark, protected=())))

    assert_plan(out, spark, [
        delete("offsets_store", _protected("offsets_store", "it is internal to Kafka"),
               live_internal=True),
        delete("orders", live_internal=False),
    ])


def test_topics_matching_the_default_protected_globs_are_never_deleted(
        spark: SparkSession) -> None:
    plan = plan_df(spark, [delete("__consumer_offsets", live_internal=True),
                           delete("_schemas"), delete("connect-configs"), delete("my_schemas")])

    out = plan.transform(protected_topics({}, context(spark)))

    assert_plan(out, spark, [
        delete("__consumer_offsets", _protected(
            "__consumer_offsets",
            "it is internal to Kafka; it matches the protected pattern(s) __*"),
            live_internal=True),
        delete("_schemas", _protected("_schemas", "it matches the protected pattern(s) _schemas")),
        delete("connect-configs", _protected(
            "connect-configs", "it matches the protected pattern(s) connect-*")),
        delete("my_schemas"),
    ])


def test_built_in_globs_stay_protected_when_the_context_leaves_them_out(
        spark: SparkSession) -> None:
    plan = plan_df(spark, [delete("__transaction_state"), delete("transactions")])

    out = plan.transform(protected_topics({}, context(spark, protected=())))

    assert_plan(out, spark, [
        delete("__transaction_state", _protected(
            "__transaction_state", "it matches the protected pattern(s) __*")),
        delete("transactions"),
    ])


def test_built_in_globs_are_the_conf_defaults() -> None:
    assert ALWAYS_PROTECTED == DEFAULT_PROTECTED_TOPICS


def test_deny_listed_topic_is_never_deleted_and_the_message_says_deny_list(
        spark: SparkSession) -> None:
    plan = plan_df(spark, [delete("billing.ledger"), delete("billing-ledger")])

    out = plan.transform(protected_topics({}, context(spark, deny_list=["billing.*"])))

    assert_plan(out, spark, [
        delete("billing.ledger", _protected(
            "billing.ledger", "it matches the deny list pattern(s) billing.*")),
        delete("billing-ledger"),
    ])


# --- topic_in_use -----------------------------------------------------------------------------


def test_topic_with_consumer_groups_is_not_deleted(spark: SparkSession) -> None:
    plan = plan_df(spark, [delete("used", live_consumer_groups=["svc-b", "svc-a"]),
                           delete("idle", live_consumer_groups=[]),
                           delete("unknown", live_consumer_groups=None)])

    out = plan.transform(topic_in_use({}, context(spark)))

    assert_plan(out, spark, [
        delete("used", _in_use("used", "svc-a, svc-b"), live_consumer_groups=["svc-b", "svc-a"]),
        delete("idle", live_consumer_groups=[]),
        # null: the job's principal may not see every group, so nobody can tell
        delete("unknown", _groups_unknown("unknown"), live_consumer_groups=None),
    ])


def test_force_deletes_a_topic_in_use(spark: SparkSession) -> None:
    rows = [delete("used", live_consumer_groups=["svc-a"], force=True)]

    out = plan_df(spark, rows).transform(topic_in_use({}, context(spark)))

    assert_plan(out, spark, rows)


# --- max_deletes_per_cluster ------------------------------------------------------------------


def test_over_the_cap_no_deletion_of_that_cluster_is_made(spark: SparkSession) -> None:
    plan = plan_df(spark, [
        delete("a"), delete("b"), delete("c"),
        delete("x", cluster="other"), delete("y", cluster="other"),
        create("new"),
    ])

    out = plan.transform(max_deletes_per_cluster({}, context(spark, cap=2)))

    assert_plan(out, spark, [
        delete("a", _capped(3, "local", 2)),
        delete("b", _capped(3, "local", 2)),
        delete("c", _capped(3, "local", 2)),
        delete("x", cluster="other"),
        delete("y", cluster="other"),
        create("new"),
    ])


def test_cap_counts_only_deletions_not_refused_before(spark: SparkSession) -> None:
    earlier = violation("protected_topics", "protected")
    rows = [delete("a"), delete("b"), delete("__c", earlier)]

    out = plan_df(spark, rows).transform(max_deletes_per_cluster({}, context(spark, cap=2)))

    assert_plan(out, spark, rows)


def test_always_on_delete_checks_run_in_order_and_feed_the_cap(spark: SparkSession) -> None:
    plan = plan_df(spark, [
        delete("__consumer_offsets", live_internal=True, live_consumer_groups=["g"]),
        delete("used", live_consumer_groups=["g"]),
        delete("a"), delete("b"),
    ])

    out = with_delete_policies(plan, [], context(spark, cap=2))

    assert_plan(out, spark, [
        delete("__consumer_offsets",
               _protected("__consumer_offsets",
                          "it is internal to Kafka; it matches the protected pattern(s) __*"),
               _in_use("__consumer_offsets", "g"),
               live_internal=True, live_consumer_groups=["g"]),
        delete("used", _in_use("used", "g"), live_consumer_groups=["g"]),
        delete("a"), delete("b"),
    ])


def test_delete_policies_ignore_create_rows(spark: SparkSession) -> None:
    specs = [PolicySpec("protected_patterns", {"patterns": ["*"]}, "policies.delete[0]")]
    rows = [
        {**create("__new", live_internal=True, live_consumer_groups=["g"]),
         "policy_violations": []},
        {**create("connect-new"), "policy_violations": []},
    ]

    out = with_delete_policies(plan_df(spark, rows), specs, context(spark, cap=0))

    assert_plan(out, spark, rows)


# --- protected_patterns -----------------------------------------------------------------------


def test_configured_protected_patterns_block_deletion(spark: SparkSession) -> None:
    plan = plan_df(spark, [delete("audit.2024"), delete("audit"), delete("logs.x")])

    out = plan.transform(protected_patterns({"patterns": ["audit.*", "audit"]}, context(spark)))

    assert_plan(out, spark, [
        delete("audit.2024", violation(
            "protected_patterns",
            "topic audit.2024 may not be deleted: it matches the protected pattern(s) audit.* "
            "of policy protected_patterns; drop its `state: absent` manifest row")),
        delete("audit", violation(
            "protected_patterns",
            "topic audit may not be deleted: it matches the protected pattern(s) audit of "
            "policy protected_patterns; drop its `state: absent` manifest row")),
        delete("logs.x"),
    ])


def test_configured_delete_policies_run_after_the_cap(spark: SparkSession) -> None:
    specs = [PolicySpec("protected_patterns", {"patterns": ["a"]}, "policies.delete[0]")]
    plan = plan_df(spark, [delete("a"), delete("b")])

    out = with_delete_policies(plan, specs, context(spark, cap=1))

    assert_plan(out, spark, [
        delete("a", _capped(2, "local", 1), violation(
            "protected_patterns",
            "topic a may not be deleted: it matches the protected pattern(s) a of policy "
            "protected_patterns; drop its `state: absent` manifest row")),
        delete("b", _capped(2, "local", 1)),
    ])


# --- custom -----------------------------------------------------------------------------------


def test_custom_delete_policy_gets_its_params_and_appends_violations(
        spark: SparkSession) -> None:
    spec = PolicySpec("custom", {"callable": f"{EXAMPLE}:keep_owner", "owner": "finance"},
                      "policies.delete[0]")
    plan = plan_df(spark, [delete("ledger", owner="finance"), delete("tmp", owner="web")])

    out = with_delete_policies(plan, [spec], context(spark))

    assert_plan(out, spark, [
        delete("ledger", violation("keep_owner", "topics of finance are kept"), owner="finance"),
        delete("tmp", owner="web"),
    ])


def test_custom_delete_policy_returning_other_columns_is_a_clear_error(
        spark: SparkSession) -> None:
    spec = PolicySpec("custom", {"callable": f"{EXAMPLE}:drops_owner"}, "policies.delete[2]")

    with pytest.raises(PolicyError) as err:
        with_delete_policies(plan_df(spark, [delete("t")]), [spec], context(spark))

    assert str(err.value) == (
        f"policies.delete[2] (custom): the DataFrame custom delete policy "
        f"'{EXAMPLE}:drops_owner' returned does not have exactly the PLAN columns (names, "
        f"order, types): missing columns: owner; extra columns: note")


def test_force_deletes_a_topic_whose_groups_are_unknown(spark: SparkSession) -> None:
    rows = [delete("hidden-groups", force=True, live_consumer_groups=None)]

    out = plan_df(spark, rows).transform(topic_in_use({}, context(spark)))

    assert_plan(out, spark, rows)
