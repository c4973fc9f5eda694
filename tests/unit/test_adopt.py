"""Adopting live topics: the manifest rows an import writes, and the unmanaged topics."""

from __future__ import annotations

import datetime as dt
from typing import Any

from chispa import assert_df_equality

from provisioning.kinds.topics.plan import importable, manifest_rows, unmanaged
from provisioning.names import FOLLOWER_THROTTLED_REPLICAS, LEADER_THROTTLED_REPLICAS
from schemas import MANIFEST, SNAPSHOT, column_names

AT = dt.datetime(2026, 11, 22, 3, 0, 0)


def entry(name: str, value: str | None, source: str = "DYNAMIC_TOPIC_CONFIG",
          sensitive: bool = False) -> dict[str, Any]:
    return {"name": name, "value": value, "source": source, "read_only": False,
            "sensitive": sensitive}


def live_row(topic: str, **cols: Any) -> tuple[Any, ...]:
    values = {"run_id": "r1", "cluster": "local", "cluster_id": "c1", "topic": topic,
              "topic_id": f"id-{topic}", "internal": False, "partitions": 1,
              "replication_factor": 1, "replica_assignment": {0: [1]}, "configs": [],
              "consumer_groups": [], "error_name": None, "snapshot_at": AT,
              "partition_states": None, "default_configs": None, **cols}
    return tuple(values[c] for c in column_names(SNAPSHOT))


def live_frame(spark: Any) -> Any:
    return spark.createDataFrame([
        live_row("orders", partitions=3, replica_assignment={0: [1], 1: [1], 2: [1]},
                 configs=[entry("retention.ms", "3600000"),
                          entry("cleanup.policy", "delete", "DEFAULT_CONFIG"),
                          entry("min.insync.replicas", "2", "DYNAMIC_BROKER_CONFIG")]),
        live_row("ledger", configs=[entry("cleanup.policy", "compact"),
                                    entry("secret.thing", None, sensitive=True)]),
        live_row("__consumer_offsets", internal=True, partitions=50),
        live_row("connect-offsets", partitions=25),
        live_row("keep.me"),
        live_row("hidden", partitions=None, replication_factor=None,
                 replica_assignment=None, configs=None,
                 error_name="TOPIC_AUTHORIZATION_FAILED"),
    ], SNAPSHOT)


def test_an_imported_row_asks_for_the_topic_as_it_is(spark) -> None:
    live = live_frame(spark)
    kept = live.where(importable(("__*", "connect-*", "keep.*"), include_protected=False))
    got = manifest_rows(kept, owner="platform", with_assignment=False)
    expected = spark.createDataFrame([
        ("local", "ledger", "present", 1, 1, None, {"cleanup.policy": "compact"}, "platform",
         None),
        ("local", "orders", "present", 3, 1, None, {"retention.ms": "3600000"}, "platform",
         None),
    ], MANIFEST)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_with_assignment_and_protected_topics_included(spark) -> None:
    live = live_frame(spark)
    kept = live.where(importable(("__*", "connect-*", "keep.*"), include_protected=True))
    got = manifest_rows(kept, owner=None, with_assignment=True)
    expected = spark.createDataFrame([
        ("local", "__consumer_offsets", "present", 50, 1, {0: [1]}, {}, None, None),
        ("local", "connect-offsets", "present", 25, 1, {0: [1]}, {}, None, None),
        ("local", "keep.me", "present", 1, 1, {0: [1]}, {}, None, None),
        ("local", "ledger", "present", 1, 1, {0: [1]}, {"cleanup.policy": "compact"}, None,
         None),
        ("local", "orders", "present", 3, 1, {0: [1], 1: [1], 2: [1]},
         {"retention.ms": "3600000"}, None, None),
    ], MANIFEST)
    # A topic the principal may not describe is never imported: its shape is unknown.
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_unmanaged_topics_are_the_live_ones_no_row_names(spark) -> None:
    desired = spark.createDataFrame(
        [("local", "orders"), ("local", "gone"), ("east", "ledger"), (None, "keep.me")],
        "cluster string, topic string")
    got = unmanaged(live_frame(spark), desired).select("cluster", "topic")
    assert sorted(tuple(r) for r in got.collect()) == [
        ("local", "connect-offsets"), ("local", "hidden"), ("local", "keep.me"),
        ("local", "ledger")]


def test_an_imported_row_leaves_out_a_moves_throttled_replicas(spark) -> None:
    live = spark.createDataFrame([
        live_row("moving", partitions=2, replica_assignment={0: [1, 2], 1: [2, 1]},
                 configs=[entry("retention.ms", "3600000"),
                          entry(LEADER_THROTTLED_REPLICAS, "0:1,1:2"),
                          entry(FOLLOWER_THROTTLED_REPLICAS, "0:3,1:3")]),
    ], SNAPSHOT)
    got = manifest_rows(live, owner="platform", with_assignment=True)
    expected = spark.createDataFrame([
        ("local", "moving", "present", 2, 1, {0: [1, 2], 1: [2, 1]},
         {"retention.ms": "3600000"}, "platform", None),
    ], MANIFEST)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
