"""Replica moves in the plan (kinds.reassign.plan): which rows move, each partition's
replicas before -> after, moves in flight, the checks before sending, and the reassign
policies."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from provisioning.kinds.reassign.plan import (
    check_results,
    partitions_to_move,
    with_reassignments,
)
from provisioning.kinds.reassign.policies import ReassignContext, with_reassign_policies
from provisioning.kinds.topics.plan import build_plan
from schemas import REASSIGNMENT_IN_FLIGHT
from tests.builders import cluster_states_df, desired_df, rows_df, snapshot_df

MOVES = ("cluster string, topic string, action string, reassignment array<struct<"
         "partition:int, before:array<int>, after:array<int>, in_flight:boolean>>, "
         "reassign_problems array<string>")
CHECKS = ("cluster string, topic string, phase string, outcome string, error_name string, "
          "error_message string")
FORCE_HINT = "set `force: true` on its manifest row to make this change anyway"
THREE_RACKS = [{"cluster": "local", "broker_ids": [1, 2, 3], "racks": {1: "a", 2: "b", 3: "c"},
                "fenced_broker_ids": [4]}]


def cfg(name: str, value: str, source: str = "DYNAMIC_TOPIC_CONFIG") -> dict[str, Any]:
    return {"name": name, "value": value, "source": source, "read_only": False,
            "sensitive": False}


def live(topic: str, assignment: Mapping[int, list[int]], *configs: dict[str, Any],
         cluster: str = "local") -> dict[str, Any]:
    """A SNAPSHOT row; its replication factor is its first partition's, as the snapshot's."""
    return {"cluster": cluster, "topic": topic, "topic_id": f"id-{topic}", "internal": False,
            "partitions": len(assignment), "replication_factor": len(assignment[0]),
            "replica_assignment": dict(assignment), "configs": list(configs),
            "consumer_groups": []}


def row(topic: str, cluster: str = "local", **cols: Any) -> dict[str, Any]:
    return {"cluster": cluster, "topic": topic, **cols}


def move(partition: int, before: list[int], after: list[int], in_flight: bool = False
         ) -> dict[str, Any]:
    return {"partition": partition, "before": before, "after": after, "in_flight": in_flight}


def planned(spark: SparkSession, desired: Sequence[Mapping[str, Any]],
            lives: Sequence[Mapping[str, Any]], clusters: Sequence[Mapping[str, Any]],
            flights: Sequence[Mapping[str, Any]] = ()) -> DataFrame:
    snapshot = snapshot_df(spark, lives)
    plan = build_plan(desired_df(spark, desired), snapshot)
    return with_reassignments(plan, snapshot, cluster_states_df(spark, clusters),
                              rows_df(spark, REASSIGNMENT_IN_FLIGHT, flights))


def assert_moves(spark: SparkSession, actual: DataFrame,
                 expected: Sequence[tuple[Any, ...]]) -> None:
    assert_df_equality(actual.select("cluster", "topic", "action", "reassignment",
                                     "reassign_problems"),
                       spark.createDataFrame(list(expected), MOVES), ignore_row_order=True,
                       ignore_nullable=True)


def test_a_higher_replication_factor_goes_to_unused_racks_then_the_least_loaded(
        spark: SparkSession) -> None:
    clusters = [{"cluster": "local", "broker_ids": [1, 2, 3, 4],
                 "racks": {1: "a", 2: "a", 3: "b", 4: "c"}, "fenced_broker_ids": []}]
    # Loads: 1:1 2:0 3:2 4:1 ("other", no manifest row, counts).
    lives = [live("up", {0: [1], 1: [3]}), live("other", {0: [4, 3]})]
    actual = planned(spark, [row("up", replication_factor=3)], lives, clusters)
    assert_moves(spark, actual, [
        # up/0: rack a used, so not the idle 2; 4 (1) before 3 (2), one per rack.
        # up/1: rack b used; idle 2 (rack a), then rack c: 4.
        ("local", "up", "REASSIGN", [move(0, [1], [1, 4, 3]), move(1, [3], [3, 2, 4])], None),
    ])
    assert [d.asDict() for d in actual.first()["drift"]] == [
        {"field": "replication_factor", "desired": "3", "actual": "1", "supported": True}]


def test_a_lower_replication_factor_keeps_each_leader_and_unloads_the_busiest(
        spark: SparkSession) -> None:
    # Loads: 1:3 2:3 3:5.
    lives = [live("down", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}),
             live("extra", {0: [3], 1: [3]})]
    actual = planned(spark, [row("down", replication_factor=2)], lives, THREE_RACKS)
    assert_moves(spark, actual, [
        ("local", "down", "REASSIGN", [
            move(0, [1, 2, 3], [1, 2]),      # 3 holds 5
            move(1, [2, 3, 1], [2, 1]),      # 3 holds 4, 1 holds 3
            move(2, [3, 1, 2], [3, 1]),      # the busiest leads: 1 and 2 tie, 2 goes
        ], None),
    ])


def test_an_assignment_moves_only_the_partitions_that_differ(spark: SparkSession) -> None:
    lives = [live("moved", {0: [1, 2], 1: [2, 3]}), live("kept", {0: [1, 2]})]
    actual = planned(spark, [row("moved", replica_assignment={0: [1, 2], 1: [3, 1]}),
                             row("kept", replica_assignment={0: [1, 2]})], lives, THREE_RACKS)
    assert_moves(spark, actual, [
        ("local", "moved", "REASSIGN", [move(1, [2, 3], [3, 1])], None),
        ("local", "kept", "NOOP", None, None),
    ])


def test_a_row_that_also_alters_stays_alter_and_fewer_partitions_stay_drift(
        spark: SparkSession) -> None:
    clusters = [{"cluster": "local", "broker_ids": [1, 2], "racks": {},
                 "fenced_broker_ids": []}]
    lives = [live("grow", {0: [1]}), live("fewer", {0: [1], 1: [1]}), live("same", {0: [1]}),
             live("fewer-rf", {0: [2], 1: [2]})]
    actual = planned(spark, [
        row("grow", partitions=2, replication_factor=2),
        row("fewer", partitions=1),
        row("same", replication_factor=1),
        row("fewer-rf", partitions=1, replication_factor=2),
    ], lives, clusters)
    assert_moves(spark, actual, [
        ("local", "grow", "ALTER", [move(0, [1], [1, 2])], None),
        ("local", "fewer", "DRIFT", None, None),
        ("local", "same", "NOOP", None, None),
        # Its live partitions move; the partition count stays a difference it reports.
        ("local", "fewer-rf", "REASSIGN", [move(0, [2], [2, 1]), move(1, [2], [2, 1])],
         None),
    ])
    drift = {r["topic"]: [(d["field"], d["supported"]) for d in r["drift"]]
             for r in actual.collect()}
    assert drift["fewer-rf"] == [("partitions", False), ("replication_factor", True)]


def test_with_nothing_in_flight_the_partitions_to_move_are_those_the_plan_moves(
        spark: SparkSession) -> None:
    lives = [live("up", {0: [1], 1: [2, 3]}), live("down", {0: [1, 2, 3]}),
             live("same-rf", {0: [1, 2], 1: [2, 3]}), live("uneven", {0: [1, 2], 1: [3]}),
             live("moved", {0: [1, 2], 1: [2, 3]}), live("kept", {0: [1, 2]}),
             live("unlisted", {0: [1, 2], 1: [2, 3]}), live("configs", {0: [1]}),
             live("gone", {0: [1]}), live("other", {0: [3, 2]})]
    desired = [
        row("up", replication_factor=2), row("down", replication_factor=2),
        row("same-rf", replication_factor=2, partitions=3),
        # The snapshot's replication factor is its first partition's: 2, as asked.
        row("uneven", replication_factor=2),
        row("moved", replica_assignment={0: [1, 2], 1: [3, 1]}),
        row("kept", replica_assignment={0: [1, 2]}),
        row("unlisted", replica_assignment={0: [1, 2]}),
        row("configs", configs={"retention.ms": "1000"}),
        row("gone", state="absent"),
        row("new", replication_factor=3),
    ]
    snapshot = snapshot_df(spark, lives)
    plan = build_plan(desired_df(spark, desired), snapshot)
    moved = with_reassignments(plan, snapshot, cluster_states_df(spark, THREE_RACKS),
                               rows_df(spark, REASSIGNMENT_IN_FLIGHT, []))
    placed = sorted((r["cluster"], r["topic"], m["partition"]) for r in moved.collect()
                    for m in r["reassignment"] or [])
    found = sorted(tuple(r) for r in partitions_to_move(plan, snapshot).collect())
    assert found == placed == [("local", "down", 0), ("local", "moved", 1),
                               ("local", "uneven", 1), ("local", "up", 0)]
    # A config-only plan has none, so its replica-move planning is skipped.
    assert partitions_to_move(build_plan(desired_df(spark, [desired[7], desired[2]]), snapshot),
                              snapshot).isEmpty()


def test_checks_name_fenced_missing_and_repeated_brokers(spark: SparkSession) -> None:
    lives = [live(t, {0: [1]}) for t in ("fenced", "gone", "twice", "fine")]
    actual = planned(spark, [
        row("fenced", replica_assignment={0: [1, 4]}),
        row("gone", replica_assignment={0: [1, 9]}),
        row("twice", replica_assignment={0: [2, 2]}),
        row("fine", replica_assignment={0: [2, 1]}),
    ], lives, THREE_RACKS)
    fenced = "partition 0: broker(s) 4 of target [1, 4] are fenced in cluster local"
    gone = ("partition 0: broker(s) 9 of target [1, 9] are not live in cluster local (live "
            "brokers: 1, 2, 3)")
    twice = "partition 0: replicas [2, 2] are not distinct"
    assert_moves(spark, actual, [
        ("local", "fenced", "REASSIGN", [move(0, [1], [1, 4])], [fenced]),
        ("local", "gone", "REASSIGN", [move(0, [1], [1, 9])], [gone]),
        ("local", "twice", "REASSIGN", [move(0, [1], [2, 2])], [twice]),
        ("local", "fine", "REASSIGN", [move(0, [1], [2, 1])], None),
    ])
    assert_df_equality(
        check_results(actual).select("cluster", "topic", "phase", "outcome", "error_name",
                                     "error_message"),
        spark.createDataFrame([
            ("local", "fenced", "validate", "rejected", "INVALID_REASSIGNMENT", fenced),
            ("local", "gone", "validate", "rejected", "INVALID_REASSIGNMENT", gone),
            ("local", "twice", "validate", "rejected", "INVALID_REASSIGNMENT", twice),
            ("local", "fine", "validate", "validated", "NONE", None),
        ], CHECKS), ignore_row_order=True, ignore_nullable=True)


def test_a_move_in_flight_is_kept_when_it_goes_where_the_row_asks(spark: SparkSession
                                                                  ) -> None:
    # Mid-move the snapshot shows the target followed by the replicas being removed.
    lives = [live("resumed", {0: [1, 2, 3], 1: [2, 3, 1]}), live("elsewhere", {0: [1, 2, 3]}),
             live("theirs", {0: [1, 2]})]
    flights = [
        {"cluster": "local", "topic": "resumed", "partition": 0, "replicas": [1, 2, 3],
         "adding": [2, 3], "removing": []},
        {"cluster": "local", "topic": "elsewhere", "partition": 0, "replicas": [1, 2, 3],
         "adding": [], "removing": [3]},
        {"cluster": "local", "topic": "theirs", "partition": 0, "replicas": [1, 2],
         "adding": [2], "removing": []},
    ]
    actual = planned(spark, [row("resumed", replication_factor=3),
                             row("elsewhere", replication_factor=3),
                             row("theirs", partitions=1)], lives, THREE_RACKS, flights)
    assert_moves(spark, actual, [
        ("local", "resumed", "REASSIGN", [move(0, [1], [1, 2, 3], in_flight=True)], None),
        ("local", "elsewhere", "REASSIGN", [move(0, [1, 2, 3], [1, 2], in_flight=True)], [
            "partition 0 is being reassigned already, to [1, 2], by a move this row does not "
            "ask for; it is left alone: wait for that move to finish (or cancel it) and plan "
            "again"]),
        # A row that asks nothing of its replicas leaves a move in flight alone.
        ("local", "theirs", "NOOP", None, None),
    ])


def judged(spark: SparkSession, desired: Sequence[Mapping[str, Any]],
           lives: Sequence[Mapping[str, Any]], clusters: Sequence[Mapping[str, Any]],
           flights: Sequence[Mapping[str, Any]] = (), cap: int = 500
           ) -> dict[str, list[tuple[str, str]]]:
    """topic -> [(policy, message)] after the reassign policies."""
    plan = planned(spark, desired, lives, clusters, flights)
    context = ReassignContext(clusters=cluster_states_df(spark, clusters),
                              live=snapshot_df(spark, lives),
                              max_reassign_partitions_per_cluster=cap)
    out = with_reassign_policies(plan, (), context)
    return {r["topic"]: [(v["policy"], v["message"]) for v in r["policy_violations"]]
            for r in out.collect()}


def test_a_replication_factor_above_the_live_brokers_is_blocked(spark: SparkSession) -> None:
    result = judged(spark, [row("big", replication_factor=5, force=True),
                            row("fits", replication_factor=3)],
                    [live("big", {0: [1]}), live("fits", {0: [1]})], THREE_RACKS)
    assert result == {
        "big": [("replication_factor_fits_cluster",
                 "replication factor 5 of topic big exceeds the 3 live broker(s) of cluster "
                 "local; lower the replication factor or add brokers")],
        "fits": [],
    }


def test_fewer_replicas_than_min_insync_or_a_single_one_are_blocked_unless_forced(
        spark: SparkSession) -> None:
    three = {0: [1, 2, 3]}
    result = judged(spark, [
        row("insync", replication_factor=2),
        row("insync-forced", replication_factor=2, force=True),
        # The alter lowers min.insync.replicas first: the move is fine.
        row("insync-lowered", replication_factor=2, configs={"min.insync.replicas": "2"}),
        row("one", replication_factor=1),
        row("inherited", replication_factor=1),
    ], [
        live("insync", three, cfg("min.insync.replicas", "3")),
        live("insync-forced", three, cfg("min.insync.replicas", "3")),
        live("insync-lowered", three, cfg("min.insync.replicas", "3")),
        live("one", {0: [1, 2]}),
        live("inherited", three, cfg("min.insync.replicas", "2", "STATIC_BROKER_CONFIG")),
    ], THREE_RACKS)
    assert result == {
        "insync": [("replication_factor_below_min_insync",
                    "replication factor 2 of topic insync would be below its "
                    "min.insync.replicas 3: producers with acks=all could no longer write to "
                    f"it; lower min.insync.replicas first, or {FORCE_HINT}")],
        "insync-forced": [],
        "insync-lowered": [],
        "one": [("replication_factor_to_one",
                 "lowering topic one from 2 replicas to 1 leaves a single copy of its data, "
                 f"lost with that broker; {FORCE_HINT}")],
        "inherited": [
            ("replication_factor_below_min_insync",
             "replication factor 1 of topic inherited would be below its min.insync.replicas "
             "2: producers with acks=all could no longer write to it; lower "
             f"min.insync.replicas first, or {FORCE_HINT}"),
            ("replication_factor_to_one",
             "lowering topic inherited from 3 replicas to 1 leaves a single copy of its data, "
             f"lost with that broker; {FORCE_HINT}")],
    }


def test_over_the_cap_no_move_of_that_cluster_starts_even_when_forced(spark: SparkSession
                                                                      ) -> None:
    clusters = [*THREE_RACKS, {"cluster": "other", "broker_ids": [1, 2], "racks": {},
                               "fenced_broker_ids": []}]
    result = judged(spark, [
        row("a", replication_factor=2),
        row("b", replication_factor=2, force=True),
        # Refused by the checks: not counted.
        row("refused", replica_assignment={0: [1, 9]}),
        # In flight already: nothing new to send, not counted, not blocked.
        row("flying", replication_factor=2),
        row("c", cluster="other", replication_factor=2),
    ], [
        live("a", {0: [1], 1: [1]}), live("b", {0: [2]}), live("refused", {0: [1]}),
        live("flying", {0: [1, 2]}), live("c", {0: [1]}, cluster="other"),
    ], clusters, flights=[{"cluster": "local", "topic": "flying", "partition": 0,
                           "replicas": [1, 2], "adding": [2], "removing": []}], cap=2)
    message = ("3 partition moves planned on cluster local exceed the per-run cap of 2; no "
               "move starts on this cluster (split the change or raise "
               "reassign.max_partitions_per_cluster)")
    assert result == {"a": [("max_reassign_partitions_per_cluster", message)],
                      "b": [("max_reassign_partitions_per_cluster", message)],
                      "refused": [], "flying": [], "c": []}
