"""Replica moves through spark-submit.sh against a real three-node KRaft cluster with one rack
per node (a, b, c): replication factors raised and lowered, an explicit assignment, the
reassign policies, --allow-reassign, the throttle while the move runs and none after, and a
run killed mid-move finished by the next one.

The flows run as thin clients of the session's Spark Connect server, except the run that
is killed: a classic spark-submit, whose driver and executors die with it."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from provisioning import names
from provisioning.conf import ClusterConf, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kinds.reassign import requests as reassign
from tests.conftest import RACKS
from tests.helpers import (
    INTERPRETED_DRIVER_OPTS,
    REPO,
    audit_rows,
    broker_state,
    child_env,
    run_cli,
    write_conf,
    write_manifest_table,
)

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

KAFKA = KafkaConf(request_timeout_ms=30000)
THROTTLED = {names.LEADER_THROTTLED_REPLICAS, names.FOLLOWER_THROTTLED_REPLICAS}


def _create(bootstrap: str, topics: dict[str, dict[int, list[int]]],
            configs: dict[str, dict[str, str]] | None = None) -> None:
    client = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        client.create_topics([NewTopic(t, replica_assignments=a,
                                       topic_configs=(configs or {}).get(t, {}))
                              for t, a in topics.items()],
                             raise_errors=True, wait_for_metadata=True)
    finally:
        client.close()


def _produce(bootstrap: str, topic: str, partitions: int, records: int, size: int) -> None:
    # Batches of 16 KiB: a follower fetch returns at least one whole batch, and the racked
    # cluster's 64 KiB fetches are what keeps a throttled move to its rate.
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=20,
                             batch_size=16 * 1024)
    try:
        for i in range(records):
            producer.send(topic, value=i.to_bytes(4, "big") + b"x" * (size - 4),
                          partition=i % partitions)
        producer.flush(timeout=120)
    finally:
        producer.close()


def _read_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list[int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=2000)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        seen: list[int] = []
        deadline = time.monotonic() + 120
        while len(seen) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=1000).values():
                seen.extend(int.from_bytes(r.value[:4], "big") for r in batch)
        return sorted(seen)
    finally:
        consumer.close()


def _replicas(bootstrap: str, prefix: str) -> dict[str, dict[int, tuple[int, list[int]]]]:
    """topic -> partition -> (leader, replicas) of every topic named `prefix`*."""
    client = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        listed = sorted(t for t in client.list_topics() if t.startswith(prefix))
        return {t["name"]: {p["partition_index"]: (p["leader_id"], list(p["replica_nodes"]))
                             for p in t["partitions"]}
                for t in client.describe_topics(listed)}
    finally:
        client.close()


def _throttles(admin: ClusterAdmin, topics: list[str]) -> dict[str, Any]:
    """The throttled-replicas overrides of `topics` and the brokers' throttle rates."""
    configs = admin.topic_configs(topics)
    return {
        "topics": {t: {c["name"]: c["value"] for c in configs.get(t, [])
                       if c["name"] in THROTTLED and c["value"]} for t in topics},
        "rates": reassign.broker_rates(admin, [1, 2, 3]),
    }


NO_THROTTLE = {1: {}, 2: {}, 3: {}}


def test_replication_factors_and_assignments_moved_with_the_flag_throttled(
        racked_kafka: Any, connect_server: Any, spark: Any, tmp_path: Path) -> None:
    bootstrap = racked_kafka.bootstrap_servers
    run = functools.partial(run_cli, remote=connect_server.address)
    live = {
        "ra.up": {p: [p % 3 + 1] for p in range(6)},
        "ra.down": {p: [p % 3 + 1, (p + 1) % 3 + 1, (p + 2) % 3 + 1] for p in range(6)},
        "ra.moved": {0: [1], 1: [2]},
        "ra.big": {0: [1]},
        "ra.insync": {0: [1, 2, 3]},
        "ra.both": {0: [2], 1: [3]},
    }
    _create(bootstrap, live, {"ra.insync": {"min.insync.replicas": "3"},
                              "ra.both": {"retention.ms": "86400000"}})
    _produce(bootstrap, "ra.up", 6, 10_000, 1_000)
    wh = tmp_path / "wh"
    manifest = [
        {"cluster": "racked", "topic": "ra.up", "replication_factor": 3},
        {"cluster": "racked", "topic": "ra.down", "replication_factor": 2},
        {"cluster": "racked", "topic": "ra.moved", "replica_assignment": {0: [2, 3], 1: [3, 1]}},
        {"cluster": "racked", "topic": "ra.big", "replication_factor": 4},
        {"cluster": "racked", "topic": "ra.insync", "replication_factor": 2},
        # configs and replicas: the alter first, then the moves
        {"cluster": "racked", "topic": "ra.both", "replication_factor": 2,
         "configs": {"retention.ms": "172800000"}},
    ]
    write_manifest_table(spark, wh / "desired_topics", manifest)
    conf = write_conf(tmp_path / "conf.yaml", bootstrap, wh, cluster="racked",
                      extra={"reassign": {"throttle_bytes_per_second": 2_000_000,
                                          "wait_seconds": 120}})
    before = _replicas(bootstrap, "ra.")

    # Without --allow-reassign: planned, checked, shown before -> after; nothing moves.
    held = run(["apply", "--conf", str(conf)])
    assert held.returncode == 1, held.output[-3000:]
    for line in ["cluster racked: 1 to alter, 6 to reassign",
                 "> racked/ra.up  reassign  checked (made only by apply --allow-reassign)",
                 "partition 0: [1] -> [2, 3]", "partition 1: [2] -> [3, 1]",
                 "4 topic(s)' replica moves checked but not made: run apply with "
                 "--allow-reassign"]:
        assert line in held.stdout, held.stdout
    assert _replicas(bootstrap, "ra.") == before
    held_id = held.stdout.split()[1]
    assert audit_rows(spark, wh, held_id) == sorted([
        ("racked", "ra.both", "ALTER", "plan", "planned"),
        ("racked", "ra.both", "ALTER", "validate", "validated"),
        ("racked", "ra.both", "REASSIGN", "validate", "validated"),
        ("racked", "ra.big", "REASSIGN", "plan", "blocked"),
        ("racked", "ra.down", "REASSIGN", "plan", "planned"),
        ("racked", "ra.down", "REASSIGN", "validate", "validated"),
        ("racked", "ra.insync", "REASSIGN", "plan", "blocked"),
        ("racked", "ra.moved", "REASSIGN", "plan", "planned"),
        ("racked", "ra.moved", "REASSIGN", "validate", "validated"),
        ("racked", "ra.up", "REASSIGN", "plan", "planned"),
        ("racked", "ra.up", "REASSIGN", "validate", "validated"),
    ])
    plan_rows = {r["topic"]: r for r in spark.read.format("delta").load(str(wh / "topic_audit"))
                 .where(f"run_id = '{held_id}' AND phase = 'plan'").collect()}
    assert [(v["policy"], v["message"]) for v in plan_rows["ra.big"]["policy_violations"]] == [
        ("replication_factor_fits_cluster", "replication factor 4 of topic ra.big exceeds "
         "the 3 live broker(s) of cluster racked; lower the replication factor or add "
         "brokers")]
    assert [v["policy"] for v in plan_rows["ra.insync"]["policy_violations"]] == [
        "replication_factor_below_min_insync"]
    assert [(m["partition"], m["before"], m["after"], m["in_flight"])
            for m in plan_rows["ra.moved"]["reassignment"]] == [
        (0, [1], [2, 3], False), (1, [2], [3, 1], False)]
    planned_up = [(m["partition"], m["before"], m["after"])
                  for m in plan_rows["ra.up"]["reassignment"]]
    assert [(p, before) for p, before, _ in planned_up] == [
        (p, live["ra.up"][p]) for p in range(6)]
    for p, old, new in planned_up:
        assert (f"partition {p}: [{old[0]}] -> [{', '.join(map(str, new))}]"
                in held.stdout), held.stdout

    # With it: throttled while moving, then every throttle gone.
    seen: list[dict[str, Any]] = []
    watching = threading.Event()

    def watch() -> None:
        with ClusterAdmin(ClusterConf("racked", bootstrap), None, KAFKA) as admin:
            while not watching.is_set():
                seen.append(_throttles(admin, ["ra.up", "ra.down", "ra.moved"]))
                time.sleep(0.2)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        done = run(["apply", "--conf", str(conf), "--allow-reassign", "--json"])
    finally:
        watching.set()
        watcher.join()
    assert done.returncode == 1, done.output[-3000:]
    report = done.json()
    # ra.both's alter is not allowed: its moves wait for it.
    assert (report["counts"], report["alters_not_allowed"],
            report["reassigns_not_allowed"]) == (
        {"blocked": 2, "reassigned": 3, "validated": 2}, 1, 1)
    run_id = report["run_id"]
    assert audit_rows(spark, wh, run_id) == sorted([
        ("racked", "ra.both", "ALTER", "plan", "planned"),
        ("racked", "ra.both", "ALTER", "validate", "validated"),
        ("racked", "ra.both", "REASSIGN", "validate", "validated"),
        ("racked", "ra.big", "REASSIGN", "plan", "blocked"),
        ("racked", "ra.insync", "REASSIGN", "plan", "blocked"),
        *((("racked", t, "REASSIGN", phase, outcome)
           for t in ("ra.down", "ra.moved", "ra.up")
           for phase, outcome in (("plan", "planned"), ("validate", "validated"),
                                  ("apply", "reassigning"), ("verify", "reassigned")))),
    ])
    after = _replicas(bootstrap, "ra.")
    up, down = after["ra.up"], after["ra.down"]
    # RF 3: every partition in the three racks, its leader first and unchanged.
    assert {p: (leader, replicas[0], sorted(RACKS[b] for b in replicas))
            for p, (leader, replicas) in up.items()} == {
        p: (p % 3 + 1, p % 3 + 1, ["a", "b", "c"]) for p in range(6)}
    # RF 2: the leader kept, one follower removed.
    assert {p: (leader, replicas[0], len(replicas), set(replicas) <= set(live["ra.down"][p]))
            for p, (leader, replicas) in down.items()} == {
        p: (p % 3 + 1, p % 3 + 1, 2, True) for p in range(6)}
    assert {p: replicas for p, (_, replicas) in after["ra.moved"].items()} == {
        0: [2, 3], 1: [3, 1]}
    assert {t: after[t] for t in ("ra.big", "ra.insync", "ra.both")} == {
        t: before[t] for t in ("ra.big", "ra.insync", "ra.both")}
    assert _read_all(bootstrap, "ra.up", 6, 10_000) == list(range(10_000))
    rows = {(r["topic"], r["phase"]): r for r in spark.read.format("delta")
            .load(str(wh / "topic_audit")).where(f"run_id = '{run_id}'").collect()}
    # The audit's before -> after is what the brokers hold now.
    for topic in ("ra.up", "ra.down", "ra.moved"):
        verified = rows[(topic, "verify")]
        assert [(m["partition"], m["before"], m["after"], m["outcome"])
                for m in verified["result_reassignment"]] == [
            (p, live[topic][p], after[topic][p][1], "reassigned")
            for p in sorted(after[topic]) if after[topic][p][1] != live[topic][p]]
    applied = rows[("ra.up", "apply")]
    assert (applied["throttle_rate"], applied["throttled_brokers"]) == (2_000_000, [1, 2, 3])
    # The watcher saw ra.up's throttled replicas and the rates while it moved.
    rate = reassign.RateSetting("2000000", "DYNAMIC_BROKER_CONFIG")
    assert any(s["topics"]["ra.up"].keys() == THROTTLED
               and s["rates"] == {b: {names.LEADER_THROTTLED_RATE: rate,
                                      names.FOLLOWER_THROTTLED_RATE: rate} for b in (1, 2, 3)}
               for s in seen), seen[-3:]
    with ClusterAdmin(ClusterConf("racked", bootstrap), None, KAFKA) as admin:
        assert _throttles(admin, ["ra.up", "ra.down", "ra.moved"]) == {
            "topics": {"ra.up": {}, "ra.down": {}, "ra.moved": {}}, "rates": NO_THROTTLE}

    # A second apply has nothing to move.
    again = run(["apply", "--conf", str(conf), "--allow-reassign", "--json"])
    assert again.returncode == 1, again.output[-3000:]
    assert again.json()["counts"] == {"already_present": 3, "blocked": 2, "validated": 2}
    assert _replicas(bootstrap, "ra.") == after

    # ra.up back down to 2; forced below min.insync.replicas; RF 4 dropped from the
    # manifest; with --allow-alter, ra.both's alter, then its moves.
    write_manifest_table(spark, wh / "desired_topics", [
        {**manifest[0], "replication_factor": 2}, *manifest[1:3],
        {**manifest[4], "force": True}, manifest[5]])
    last = run(["apply", "--conf", str(conf), "--allow-reassign", "--allow-alter", "--json"])
    assert last.returncode == 0, last.output[-3000:]
    assert last.json()["counts"] == {"already_present": 2, "altered": 1, "reassigned": 3}
    assert [r for r in audit_rows(spark, wh, last.json()["run_id"])
            if r[1] == "ra.both"] == sorted(
        [("racked", "ra.both", "ALTER", phase, outcome) for phase, outcome in (
            ("plan", "planned"), ("validate", "validated"), ("apply", "altered"),
            ("verify", "altered"))]
        + [("racked", "ra.both", "REASSIGN", phase, outcome) for phase, outcome in (
            ("validate", "validated"), ("apply", "reassigning"), ("verify", "reassigned"))])
    final = _replicas(bootstrap, "ra.")
    # Lowered: the leaders are unchanged.
    assert {p: (leader, replicas[0], len(replicas), set(replicas) <= set(up[p][1]))
            for p, (leader, replicas) in final["ra.up"].items()} == {
        p: (p % 3 + 1, p % 3 + 1, 2, True) for p in range(6)}
    assert {t: {p: (r[0], len(r), len({RACKS[b] for b in r})) for p, (_, r) in
                final[t].items()} for t in ("ra.insync", "ra.both")} == {
        "ra.insync": {0: (1, 2, 2)}, "ra.both": {0: (2, 2, 2), 1: (3, 2, 2)}}
    assert broker_state(bootstrap)["ra.both"]["configs"] == {"retention.ms": "172800000"}
    assert _read_all(bootstrap, "ra.up", 6, 10_000) == list(range(10_000))


def test_a_run_killed_mid_move_is_finished_by_the_next(
        racked_kafka: Any, connect_server: Any, spark: Any, tmp_path: Path) -> None:
    bootstrap = racked_kafka.bootstrap_servers
    _create(bootstrap, {"rk.slow": {p: [p + 1] for p in range(3)}})
    # 1 MB a partition at 20 kB/s: about 50 s of moving, longer than the kill, the report
    # and the plan below take on a loaded machine.
    _produce(bootstrap, "rk.slow", 3, 3_000, 1_000)
    wh = tmp_path / "wh"
    write_manifest_table(spark, wh / "desired_topics", [
        {"cluster": "racked", "topic": "rk.slow", "replication_factor": 2}])
    conf = write_conf(tmp_path / "conf.yaml", bootstrap, wh, cluster="racked",
                      extra={"reassign": {"throttle_bytes_per_second": 20_000,
                                          "wait_seconds": 300}})
    env = child_env({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                     "SPARK_SUBMIT_OPTS": INTERPRETED_DRIVER_OPTS})
    log = (tmp_path / "killed.log").open("w")
    proc = subprocess.Popen(
        [str(REPO / "spark-submit.sh"), "--driver-memory", "1g",
         str(REPO / "jobs/provision_topics.py"), "apply", "--conf", str(conf),
         "--allow-reassign"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    audit = wh / "topic_audit"
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, (tmp_path / "killed.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the move never started"
            if any((audit / "_delta_log").glob("*.json")) and spark.read.format("delta").load(
                    str(audit)).where("action = 'REASSIGN' AND phase = 'apply'").count():
                break
            time.sleep(1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(60)
        log.close()
    with ClusterAdmin(ClusterConf("racked", bootstrap), None, KAFKA) as admin:
        moving = reassign.list_reassignments(admin, ["rk.slow"])
        assert sorted(moving) == [("rk.slow", p) for p in range(3)]
        left = _throttles(admin, ["rk.slow"])
        assert left["topics"]["rk.slow"].keys() == THROTTLED

    listed = run_cli(["report", "--conf", str(conf), "--reassignments", "--json"],
                     remote=connect_server.address)
    assert listed.returncode == 0, listed.output[-3000:]
    (block,) = listed.json()["reassignments"]
    assert (block["cluster"], block["error"], [
        (r["topic"], r["partition"], r["replicas"][0], len(r["target"]), r["removing"])
        for r in block["partitions"]]) == (
        "racked", None, [("rk.slow", p, p + 1, 2, []) for p in range(3)])
    assert all(r["bytes_left"] > 0 for r in block["partitions"]), block

    # A plan shows the moves under way and changes nothing.
    planned = run_cli(["plan", "--conf", str(conf), "--json"], remote=connect_server.address)
    assert planned.returncode == 0, planned.output[-3000:]
    (shown,) = planned.json()["topics"]
    assert (shown["topic"], shown["action"], shown["phase"], shown["outcome"], [
        (m["partition"], m["before"], len(m["after"]), m["in_flight"])
        for m in shown["reassignment"]]) == (
        "rk.slow", "REASSIGN", "validate", "validated",
        [(p, [p + 1], 2, True) for p in range(3)])

    # The next run, at once: the killed run's lease is stale (its process is gone from this
    # host), so it takes the lock over.
    rerun = run_cli(["apply", "--conf", str(conf), "--allow-reassign", "--json"],
                    remote=connect_server.address)
    assert rerun.returncode == 0, rerun.output[-3000:]
    assert "taking over the lock on racked from run" in rerun.output
    assert rerun.json()["counts"] == {"reassigned": 1}
    assert audit_rows(spark, wh, rerun.json()["run_id"]) == [
        ("racked", "rk.slow", "REASSIGN", phase, outcome)
        for phase, outcome in (("apply", "reassigning"), ("plan", "planned"),
                               ("validate", "validated"), ("verify", "reassigned"))]
    assert {p: len(r) for p, (_, r) in _replicas(bootstrap, "rk.")["rk.slow"].items()} == {
        0: 2, 1: 2, 2: 2}
    with ClusterAdmin(ClusterConf("racked", bootstrap), None, KAFKA) as admin:
        assert _throttles(admin, ["rk.slow"]) == {"topics": {"rk.slow": {}},
                                                  "rates": NO_THROTTLE}
    assert _read_all(bootstrap, "rk.slow", 3, 3_000) == list(range(3_000))
