"""Alter policies: the always-on guards on live-topic changes, the per-cluster cap, and the
create policies judging the topic as it will be after the alter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from pyspark.sql import SparkSession

from provisioning.conf import PolicySpec
from provisioning.errors import ConfError
from provisioning.kafka.outcomes import alter_outcome
from provisioning.kinds.topics.conf import TopicsConf
from provisioning.kinds.topics.plan import build_plan
from provisioning.kinds.topics.policies import with_alter_policies
from provisioning.transforms.policies import PolicyContext
from tests.builders import cluster_states_df, desired_df, snapshot_df
from tests.helpers import parse_conf

FORCE_HINT = "set `force: true` on its manifest row to make this change anyway"


def cfg(name: str, value: str, source: str = "DYNAMIC_TOPIC_CONFIG") -> dict[str, Any]:
    return {"name": name, "value": value, "source": source, "read_only": False,
            "sensitive": False}


def live(topic: str, partitions: int = 1, *configs: dict[str, Any],
         cluster: str = "local") -> dict[str, Any]:
    return {"cluster": cluster, "topic": topic, "topic_id": f"id-{topic}", "internal": False,
            "partitions": partitions, "replication_factor": 1,
            "replica_assignment": {p: [1] for p in range(partitions)},
            "configs": list(configs), "consumer_groups": []}


def judged(spark: SparkSession, desired: Sequence[Mapping[str, Any]],
           lives: Sequence[Mapping[str, Any]], specs: Sequence[PolicySpec] = (),
           cap: int = 50) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """topic -> (action, [(policy, message)]) after the alter policies."""
    snapshot = snapshot_df(spark, lives)
    plan = build_plan(desired_df(spark, desired), snapshot)
    context = PolicyContext(
        clusters=cluster_states_df(spark, [{"cluster": "local", "broker_ids": [1, 2, 3]},
                                           {"cluster": "other", "broker_ids": [1]}]),
        live=snapshot, max_alters_per_cluster=cap)
    out = with_alter_policies(plan, specs, context)
    return {r["topic"]: (r["action"], [(v["policy"], v["message"])
                                       for v in r["policy_violations"]])
            for r in out.collect()}


def row(topic: str, **cols: Any) -> dict[str, Any]:
    return {"cluster": "local", "topic": topic, **cols}


def test_lowering_retention_is_refused_unless_forced(spark: SparkSession) -> None:
    result = judged(spark, [
        row("lower", configs={"retention.ms": "1000"}),
        row("limit", configs={"retention.bytes": "1073741824"}),
        row("raise", configs={"retention.ms": "172800000"}),
        row("forced", configs={"retention.ms": "1000"}, force=True),
        row("default", configs={"retention.ms": "3600000"}),
    ], [
        live("lower", 1, cfg("retention.ms", "86400000")),
        live("limit", 1, cfg("retention.bytes", "-1")),
        live("raise", 1, cfg("retention.ms", "86400000")),
        live("forced", 1, cfg("retention.ms", "86400000")),
        # No override: Kafka's default of 7 days applies.
        live("default", 1),
    ])
    assert result == {
        "lower": ("ALTER", [("retention_decrease",
                             "lowering retention.ms of topic lower from 86400000 to 1000 "
                             f"deletes the data past the new limit; {FORCE_HINT}")]),
        "limit": ("ALTER", [("retention_decrease",
                             "lowering retention.bytes of topic limit from -1 to 1073741824 "
                             f"deletes the data past the new limit; {FORCE_HINT}")]),
        "raise": ("ALTER", []),
        "forced": ("ALTER", []),
        "default": ("ALTER", [("retention_decrease",
                               "lowering retention.ms of topic default from 604800000 to "
                               f"3600000 deletes the data past the new limit; {FORCE_HINT}")]),
    }


def test_cleanup_policy_changes_and_partitions_of_compacted_topics(spark: SparkSession
                                                                   ) -> None:
    result = judged(spark, [
        row("to-compact", configs={"cleanup.policy": "compact"}),
        row("same-set", configs={"cleanup.policy": "delete, compact"}),
        row("grow-compacted", partitions=3, configs={"cleanup.policy": "compact"}),
        row("grow-plain", partitions=3, configs={}),
    ], [
        live("to-compact", 1),
        live("same-set", 1, cfg("cleanup.policy", "compact,delete")),
        live("grow-compacted", 1, cfg("cleanup.policy", "compact")),
        live("grow-plain", 1),
    ])
    assert result == {
        "to-compact": ("ALTER", [("cleanup_policy_change",
                                  "changing cleanup.policy of topic to-compact from delete to "
                                  "compact changes how its log is cleaned (compaction keeps "
                                  "one value per key, deletion drops old segments); "
                                  f"{FORCE_HINT}")]),
        "same-set": ("ALTER", []),
        "grow-compacted": ("ALTER", [("partitions_on_compacted",
                                      "adding partitions to compacted topic grow-compacted "
                                      "(1 -> 3) moves keys to other partitions: consumers and "
                                      "compaction would see two values of a key; "
                                      f"{FORCE_HINT}")]),
        "grow-plain": ("ALTER", []),
    }


def test_over_the_cap_no_alter_of_that_cluster_is_made(spark: SparkSession) -> None:
    desired = [row(f"t{i}", partitions=2) for i in range(3)]
    desired.append(row("elsewhere", cluster="other", partitions=2))
    lives = [live(f"t{i}", 1) for i in range(3)] + [live("elsewhere", 1, cluster="other")]
    message = ("3 alters planned on cluster local exceed the per-run cap of 2; no alter is "
               "made on this cluster (split the change or raise alters.max_per_cluster)")
    assert judged(spark, desired, lives, cap=2) == {
        **{f"t{i}": ("ALTER", [("max_alters_per_cluster", message)]) for i in range(3)},
        "elsewhere": ("ALTER", []),
    }


def test_create_policies_judge_the_topic_after_the_alter(spark: SparkSession) -> None:
    specs = [
        PolicySpec("required_configs", {"configs": {"min.insync.replicas": None}},
                   "policies.alter[0]"),
        PolicySpec("partitions_range", {"max": 4}, "policies.alter[1]"),
        PolicySpec("partition_budget", {"max_partitions": 12}, "policies.alter[2]"),
    ]
    result = judged(spark, [
        # Has the required config live and keeps it: only its new count is judged.
        row("keeps", partitions=4, configs={"min.insync.replicas": "1"}),
        # Would end with 6 partitions: over the range.
        row("too-many", partitions=6, configs={"min.insync.replicas": "1"}),
        # Lists configs without the required one: the override would be left alone, but
        # the row does not ask for it either.
        row("missing", configs={"retention.ms": "700000000"}),
    ], [
        live("keeps", 1, cfg("min.insync.replicas", "1")),
        live("too-many", 1, cfg("min.insync.replicas", "1")),
        live("missing", 1),
    ], specs)
    assert result["keeps"] == ("ALTER", [])
    assert result["missing"] == ("ALTER", [(
        "required_configs",
        "config min.insync.replicas is required; add it to the topic's configs")])
    assert result["too-many"] == ("ALTER", [(
        "partitions_range", "partitions 6 exceeds the maximum of 4 allowed after this alter")])


def test_partition_budget_counts_the_partitions_an_alter_adds(spark: SparkSession) -> None:
    specs = [PolicySpec("partition_budget", {"max_partitions": 6}, "policies.alter[0]")]
    result = judged(spark, [row("a", partitions=3), row("b", partitions=4)],
                    [live("a", 1), live("b", 1)], specs)
    assert result == {
        "a": ("ALTER", []),
        "b": ("ALTER", [("partition_budget",
                         "adding 3 partition(s) brings cluster local to 7 partitions (2 live "
                         "+ 5 planned by this run up to this topic, in topic order), over the "
                         "budget of 6")]),
    }


def test_alter_outcomes() -> None:
    assert [alter_outcome(e, v) for e, v in [
        ("NONE", True), ("NONE", False), ("INVALID_CONFIG", True), ("POLICY_VIOLATION", False),
        ("INVALID_PARTITIONS", True), ("REQUEST_TIMED_OUT", False), ("REQUEST_TIMED_OUT", True),
        ("UNKNOWN_SERVER_ERROR", False)]] == [
        "validated", "altered", "rejected", "rejected", "rejected", "unknown", "failed",
        "failed"]


def test_conf_reads_alters_and_alter_policies() -> None:
    base = {"clusters": {"local": {"bootstrap_servers": "127.0.0.1:9092"}},
            "tables": {"manifests": ["m"], "audit": "a", "runs": "r", "snapshots": "s"}}
    conf = parse_conf({**base, "alters": {"max_per_cluster": 5, "remove_unlisted_configs": True},
                       "policies": {"alter": [{"name": "partitions_range", "max": 8}]}}, "c")
    topics = conf.section(TopicsConf)
    assert (topics.alters.max_per_cluster, topics.alters.remove_unlisted_configs,
            [(s.name, dict(s.params)) for s in topics.alter_policies]) == (
        5, True, [("partitions_range", {"max": 8})])
    with pytest.raises(ConfError) as err:
        parse_conf({**base, "alters": {"max_per_cluster": -1, "remove": 1},
                    "policies": {"alter": [{"name": "topic_name_pattern", "pattern": "x"}]}},
                   "c")
    # The policy blocks are checked before each kind's own section is read.
    assert err.value.problems == [
        "policies.alter[0].name: unknown alter policy 'topic_name_pattern' (known: custom, "
        "forbidden_configs, min_insync_below_rf, owner_partition_quota, partition_budget, "
        "partitions_range, required_configs)",
        "alters.remove: unknown key (allowed: max_per_cluster, remove_unlisted_configs)",
        "alters.max_per_cluster: must be >= 0, got -1",
    ]
