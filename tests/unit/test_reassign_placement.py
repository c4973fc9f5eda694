"""Target placement of replicas (kinds.reassign.placement): racks, load, the leader kept,
decreases from the most loaded brokers, and the same answer whatever the input's order."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from provisioning.kinds.reassign.placement import (
    TARGETS,
    PartitionSpec,
    lower_replicas,
    place,
    raise_replicas,
    with_targets,
)
from tests.builders import cluster_states_df

INPUT = ("cluster string, topic string, partition int, current array<int>, "
         "replication_factor int, assigned array<int>")
RACKS = {1: "a", 2: "a", 3: "b", 4: "c"}


def test_new_replicas_go_to_racks_the_partition_does_not_use_first() -> None:
    # Broker 2 holds nothing but shares rack a with the leader; 3 and 4 tie on load: 3.
    load = Counter({1: 5, 2: 0, 3: 2, 4: 2})
    assert raise_replicas([1], 3, [1, 2, 3, 4], RACKS, load) == [1, 3, 4]
    assert load == Counter({1: 5, 2: 0, 3: 3, 4: 3})


def test_once_every_rack_is_used_the_least_loaded_broker_wins() -> None:
    load = Counter({1: 1, 2: 4, 3: 1, 4: 2, 5: 0})
    racks = {**RACKS, 5: "b"}
    # Racks a, b, c used after two additions; the third goes to the least loaded of 2 and 5
    # (rack b is used by 3 already, but no unused rack is left).
    assert raise_replicas([1], 4, [1, 2, 3, 4, 5], racks, load) == [1, 5, 4, 3]


def test_brokers_without_a_rack_count_as_racks_of_their_own() -> None:
    load = Counter({1: 3, 2: 1, 3: 1})
    assert raise_replicas([1], 3, [1, 2, 3], {}, load) == [1, 2, 3]


def test_a_raise_beyond_the_live_brokers_stops_short() -> None:
    assert raise_replicas([2], 5, [1, 2, 3], RACKS, Counter()) == [2, 3, 1]


def test_a_decrease_removes_followers_from_the_most_loaded_brokers_never_the_first() -> None:
    load = Counter({1: 9, 2: 4, 3: 7, 4: 4})
    # Broker 1 holds the most but leads; then 3, then 2 and 4 tie: the higher id goes.
    assert lower_replicas([1, 2, 3, 4], 2, load) == [1, 2]
    assert load == Counter({1: 9, 2: 4, 3: 6, 4: 3})
    assert lower_replicas([1, 2], 0, Counter({1: 1, 2: 1})) == [1]


def test_load_counts_the_whole_cluster_and_follows_each_placement_in_topic_order() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}
    partitions = [
        PartitionSpec("b.second", 0, (1,), replication_factor=2),
        PartitionSpec("a.first", 0, (1,), replication_factor=2),
        # Counts in the load only.
        PartitionSpec("c.other", 0, (4,)),
        # Explicit targets count as they are, placed first (topic order): 3 gains two.
        PartitionSpec("0.explicit", 0, (1,), assigned=(3,)),
        PartitionSpec("0.explicit", 1, (1,), assigned=(3,)),
    ]
    assert place(partitions, [1, 2, 3, 4], racks) == {
        ("0.explicit", 0): [3],
        ("0.explicit", 1): [3],
        # Rack b: broker 4 holds 1 replica, 3 holds 2.
        ("a.first", 0): [1, 4],
        # Now 3 and 4 hold 2 each: the lower id.
        ("b.second", 0): [1, 3],
    }
    # Without the explicit moves broker 3 is idle and a.first takes it.
    assert place(partitions[:3], [1, 2, 3, 4], racks) == {
        ("a.first", 0): [1, 3],
        ("b.second", 0): [1, 3],
    }


def _partitions(spark: SparkSession, rows: Sequence[tuple[Any, ...]]) -> DataFrame:
    return spark.createDataFrame(list(rows), INPUT)


# Two clusters: racks a, a, b, c on "racked"; no racks and a fenced broker 4 on "plain".
CLUSTERS = [
    {"cluster": "racked", "broker_ids": [1, 2, 3, 4], "racks": {1: "a", 2: "a", 3: "b", 4: "c"},
     "fenced_broker_ids": []},
    {"cluster": "plain", "broker_ids": [1, 2, 3], "racks": {}, "fenced_broker_ids": [4]},
]
ROWS = [
    # racked: loads before placing 1:2 2:1 3:3 4:2.
    ("racked", "busy", 0, [3], None, None),
    ("racked", "busy", 1, [3], None, None),
    ("racked", "busy", 2, [4], None, None),
    ("racked", "orders", 0, [1], 3, None),
    ("racked", "orders", 1, [2], 3, None),
    ("racked", "shrink", 0, [3, 1, 4], 2, None),
    # plain: the fenced broker 4 holds a replica but takes no new one.
    ("plain", "t", 0, [2], 2, None),
    ("plain", "t", 1, [2], 2, None),
    ("plain", "t", 2, [4], 3, None),
    ("plain", "u", 0, [1], None, [3, 1]),
]
EXPECTED = [
    # orders/0: rack a is used; 4 (load 2) beats 3 (load 3); then rack b: 3.
    ("racked", "orders", 0, [1, 4, 3]),
    # orders/1: 4 now holds 3 replicas and 3 holds 4: 4 first again, then 3.
    ("racked", "orders", 1, [2, 4, 3]),
    # shrink/0: leader 3 stays though it is the most loaded; 4 (load 4) leaves before 1 (2).
    ("racked", "shrink", 0, [3, 1]),
    # plain: loads 1:1 2:2 3:0 4:1; no racks, so the least loaded live broker wins.
    ("plain", "t", 0, [2, 3]),
    ("plain", "t", 1, [2, 1]),
    # t/2 lives on the fenced broker 4, which keeps its replica; the new ones go to live
    # brokers: 3 (one replica), then 1 (two, like 2: the lower id).
    ("plain", "t", 2, [4, 3, 1]),
    ("plain", "u", 0, [3, 1]),
]


def test_targets_of_each_cluster_as_a_dataframe(spark: SparkSession) -> None:
    actual = with_targets(_partitions(spark, ROWS), cluster_states_df(spark, CLUSTERS))
    assert_df_equality(actual, spark.createDataFrame(EXPECTED, TARGETS), ignore_row_order=True)


def test_targets_do_not_depend_on_row_order_or_partitioning(spark: SparkSession) -> None:
    expected = spark.createDataFrame(EXPECTED, TARGETS)
    for seed, slices in ((1, 1), (2, 3), (3, 7)):
        rows = list(ROWS)
        random.Random(seed).shuffle(rows)
        shuffled = _partitions(spark, rows).repartition(slices)
        clusters = cluster_states_df(spark, CLUSTERS).repartition(slices)
        assert_df_equality(with_targets(shuffled, clusters), expected, ignore_row_order=True)


def test_a_cluster_without_facts_only_lowers(spark: SparkSession) -> None:
    rows = [("unknown", "t", 0, [1, 2], 1, None), ("unknown", "t", 1, [1], 2, None)]
    actual = with_targets(_partitions(spark, rows), cluster_states_df(spark, CLUSTERS))
    assert_df_equality(actual, spark.createDataFrame(
        [("unknown", "t", 0, [1]), ("unknown", "t", 1, [1])], TARGETS), ignore_row_order=True)
