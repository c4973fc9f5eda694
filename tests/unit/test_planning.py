"""The plan phase's chain: policy groups run only on plans with valid rows of their action,
and the counts that decide which later phases run."""

from __future__ import annotations

from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

from provisioning.kafka.client import ClusterState
from provisioning.kinds.topics import planning
from provisioning.kinds.topics.planning import planned_plan
from tests.builders import desired_df, snapshot_df, violation
from tests.helpers import parse_conf

STATES = {"local": ClusterState(cluster_id="c", controller_id=1, broker_ids=(1,),
                                default_partitions=1, default_replication_factor=1)}


def _conf(**extra: Any) -> Any:
    return parse_conf({"clusters": {"local": {"bootstrap_servers": "127.0.0.1:9"}},
                       "tables": {"manifests": ["/m"], "audit": "/a", "runs": "/r",
                                  "snapshots": "/s"}, **extra}, "test")


def _desired(spark: SparkSession, *rows: dict[str, Any]) -> Any:
    return desired_df(spark, [{"cluster": "local", "row_errors": [], **r} for r in rows])


def test_only_the_policy_groups_of_actions_the_plan_has_run(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    judged: list[set[str]] = []
    real = planning.judge_plan

    def judge_plan(plan: Any, conf: Any, context: Any, actions: Any) -> Any:
        judged.append(set(actions))
        return real(plan, conf, context, actions)

    monkeypatch.setattr("provisioning.kinds.topics.planning.judge_plan", judge_plan)
    conf = _conf()
    live = snapshot_df(spark, [{"cluster": "local", "topic": "kept", "partitions": 1,
                                "replication_factor": 1, "configs": []}])
    noop = _desired(spark, {"topic": "kept", "partitions": 1, "replication_factor": 1})

    plan, counts = planned_plan(spark, conf, STATES, noop, live, live, None)

    assert (judged, counts) == ([], {("local", "NOOP", "already_present"): 1})
    assert [(r["topic"], r["action"], r["policy_violations"]) for r in plan.collect()] == [
        ("kept", "NOOP", [])]

    more = _desired(spark, {"topic": "kept", "partitions": 1, "replication_factor": 1},
                    {"topic": "new", "partitions": 1})
    plan, counts = planned_plan(spark, conf, STATES, more, live, live, None)

    assert judged == [{"CREATE"}]
    assert counts == {("local", "NOOP", "already_present"): 1,
                      ("local", "CREATE", "planned"): 1}


def test_a_plan_with_a_create_runs_the_create_policies_and_counts_their_verdicts(
        spark: SparkSession) -> None:
    conf = _conf(policies={"create": [{"name": "topic_name_pattern", "default": "ok[.].*"}]})
    live = snapshot_df(spark, [])
    desired = _desired(spark, {"topic": "ok.a", "partitions": 1},
                       {"topic": "bad.b", "partitions": 1})

    plan, counts = planned_plan(spark, conf, STATES, desired, live, live, None)

    assert counts == {("local", "CREATE", "planned"): 1, ("local", "CREATE", "blocked"): 1}
    by_topic = {r["topic"]: r["policy_violations"] for r in plan.collect()}
    assert by_topic["ok.a"] == []
    assert [v.asDict() for v in by_topic["bad.b"]] == [violation(
        "topic_name_pattern",
        "topic bad.b does not match ok[.].*, the default naming rule; rename the topic")]
    # the same rows the whole chain gives, materialized
    assert_df_equality(plan, plan.localCheckpoint(eager=True), ignore_row_order=True)
