"""Faults against real brokers: nothing lost, nothing wrong deleted, reruns converge.

Mirrors the scenarios of Kafka's CreateTopicsRequestTest, DeleteTopicsRequestTest
and ControllerMutationQuotaTest, driven through the real CLI.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient

from tests.helpers import (
    audit_rows,
    broker_state,
    fault_env,
    kafka_tool,
    plan_counts,
    row_count,
    run_cli,
    run_cli_in_process,
    run_paused,
    runs_rows,
    topic_rows,
    write_conf,
    write_manifest_table,
)
from tests.support.brokers import reset

pytestmark = [pytest.mark.integration, pytest.mark.e2e]


@pytest.fixture
def fresh_broker(kafka: Any) -> Iterator[Any]:
    """The session's plain broker emptied (brokers.reset), for the tests that stop it, set a
    quota on it or assert every topic it holds: after the test it is running again and
    emptied (its quotas removed). The other tests share it as it is, each with a prefix of
    its own."""
    reset(kafka)
    try:
        yield kafka
    finally:
        if not kafka.is_running(1):
            kafka.start_node(1)
        reset(kafka)


def _created_rows(names: list[str]) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for name in names:
        rows += [("local", name, "CREATE", phase, outcome) for phase, outcome in
                 (("plan", "planned"), ("validate", "validated"), ("apply", "created"),
                  ("verify", "created"))]
    return sorted(rows)


def _present_rows(names: list[str]) -> list[tuple[Any, ...]]:
    return sorted(("local", n, "NOOP", "plan", "already_present") for n in names)


def _split(broker: Any, prefix: str) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The whole broker (the session's) in two: its topics named `prefix`..., sorted, and
    every other topic as it reports it (id, partitions, replication factor, configs)."""
    state = broker_state(broker.bootstrap_servers)
    return (sorted(t for t in state if t.startswith(prefix)),
            {t: s for t, s in state.items() if not t.startswith(prefix)})


def test_killed_driver_rerun_records_each_topic_once(kafka: Any, spark: Any,
                                                     tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    rows = topic_rows("kill.", 12, 3)
    names = [r["topic"] for r in rows]
    write_manifest_table(spark, warehouse / "desired_topics", rows)
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse)
    mine, others = _split(kafka, "kill.")
    assert mine == []

    # The classic launcher: the driver killed is a spark-submit driver, JVM and all.
    killed = run_cli(["apply", "--conf", str(conf)],
                     env=fault_env("kill-driver-before-audit:apply"))
    assert killed.returncode != 0
    # the creates happened; the apply audit commit never did
    assert _split(kafka, "kill.") == (names, others)
    audit = spark.read.format("delta").load(str(warehouse / "topic_audit")).collect()
    first_run = {r["run_id"] for r in audit}
    assert len(first_run) == 1
    assert sorted({r["phase"] for r in audit}) == ["plan", "validate"]
    assert runs_rows(spark, warehouse) == {}

    # the dead driver's lock is stale at once (its pid is gone), so the rerun proceeds (in
    # this process, on the tests' classic session)
    rerun = run_cli_in_process(["apply", "--conf", str(conf), "--json"])
    assert rerun.returncode == 0, rerun.output[-3000:]
    second = rerun.json()["run_id"]
    # Nothing left to change: the rerun's plan is its counts, no audit row.
    assert audit_rows(spark, warehouse, second) == []
    assert plan_counts(spark, warehouse, second) == [
        ("topics", "local", "NOOP", "already_present", len(names))]
    assert _split(kafka, "kill.") == (names, others)


def test_a_held_lock_makes_apply_exit_4_without_touching_kafka(
        kafka: Any, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    from provisioning.delta.lock import RunLock

    warehouse = tmp_path / "wh"
    write_manifest_table(spark, warehouse / "desired_topics", topic_rows("lock.", 3, 3))
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse)
    before = broker_state(kafka.bootstrap_servers)
    mine, others = _split(kafka, "lock.")
    assert mine == []
    holder = RunLock(spark, str(warehouse / "provision_runs_locks"), ["local"],
                     "20260101T000000Z-holder", "apply", ttl_seconds=600)
    holder.acquire()
    try:
        refused = run_cli(["apply", "--conf", str(conf)], remote=connect_server.address)
    finally:
        holder.release()
    assert refused.returncode == 4, refused.output[-3000:]
    assert ("another run holds the lock: cluster local is locked by apply run "
            "20260101T000000Z-holder") in refused.output
    assert broker_state(kafka.bootstrap_servers) == before
    assert row_count(spark, warehouse / "topic_audit") == 0
    runs = list(runs_rows(spark, warehouse).values())
    assert [(r["command"], r["status"], r["exit_code"]) for r in runs] == [
        ("apply", "failed", 4)]

    after = run_cli(["apply", "--conf", str(conf)], remote=connect_server.address)
    assert after.returncode == 0, after.output[-3000:]
    assert _split(kafka, "lock.") == (["lock.000", "lock.001", "lock.002"], others)


def test_a_lock_taken_over_before_apply_fences_the_run(kafka: Any, spark: Any,
                                                       connect_server: Any,
                                                       tmp_path: Path) -> None:
    """The run pauses before its first change while another run takes its lock over in the
    real lock table; the fence before apply reads the claim back and stops the run."""
    from provisioning.delta.lock import RunLock
    from provisioning.errors import LockHeld
    from provisioning.processes import ProcessIdentity

    warehouse = tmp_path / "wh"
    names = [f"fence.{i:03d}" for i in range(3)]
    write_manifest_table(spark, warehouse / "desired_topics", topic_rows("fence.", 3, 3))
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse)
    paused = run_paused(["apply", "--conf", str(conf), "--topics", "fence.*"],
                        "pause-before-changes", tmp_path / "go", connect_server.address)
    locks = warehouse / "provision_runs_locks"
    (victim,) = {r["run_id"] for r in spark.read.format("delta").load(str(locks)).collect()}
    # Another run takes the cluster over, as one that found the victim's process gone would.
    usurper = RunLock(spark, str(locks), ["local"], "20990101T000000Z-usurper", "apply", 600)
    usurper.me = ProcessIdentity("elsewhere", None, None, 1, None)
    usurper._append("claim", {"local": victim})

    done = paused.go()
    assert done.returncode == 4, done.output[-3000:]
    assert ("error: lock lost: taken over: another run holds the lock: cluster local is "
            "locked by apply run 20990101T000000Z-usurper (pid 1 on elsewhere") in done.output
    assert [t for t in broker_state(kafka.bootstrap_servers) if t.startswith("fence.")] == []
    (run_id, run), = runs_rows(spark, warehouse).items()
    assert (run["command"], run["status"], run["exit_code"]) == ("apply", "failed", 4)
    assert audit_rows(spark, warehouse, run_id) == sorted(
        ("local", n, "CREATE", phase, outcome) for n in names for phase, outcome in
        (("plan", "planned"), ("validate", "validated"), ("apply", "failed")))
    apply_rows = (spark.read.format("delta").load(str(warehouse / "topic_audit"))
                  .where(f"run_id = '{run_id}' AND phase = 'apply'").collect())
    assert {(r["error_name"], r["error_message"], r["attempts"]) for r in apply_rows} == {
        ("LOCK_LOST", run["message"], 0)}
    # The usurper's lease is left as it is: a fenced run's release ends only its own.
    log = (spark.read.format("delta").load(str(locks))
           .orderBy("_metadata.row_commit_version").collect())
    assert [(r["run_id"], r["event"], r["takes_over"]) for r in log] == [
        (victim, "claim", None), ("20990101T000000Z-usurper", "claim", victim),
        (victim, "release", None)]
    with pytest.raises(LockHeld, match="locked by apply run 20990101T000000Z-usurper"):
        RunLock(spark, str(locks), ["local"], "r-next", "apply", 60).acquire()


@pytest.mark.parametrize("table_state", ["made beforehand", "made by the claims"])
def test_racing_lock_acquisitions_have_one_winner(spark: Any, tmp_path: Path,
                                                  table_state: str) -> None:
    from provisioning.delta.lock import LOCK_TABLE_PROPERTIES, RunLock
    from provisioning.delta.tables import TableRef, create_table
    from provisioning.errors import LockHeld
    from schemas import LOCKS

    table = str(tmp_path / "locks")
    if table_state == "made beforehand":
        create_table(spark, LOCKS, TableRef(table), LOCK_TABLE_PROPERTIES)
    # Else the three claims race to make the table too: their first commits conflict, and
    # the losers append their claims again.
    outcomes: dict[str, str] = {}
    start = threading.Barrier(3)

    def contend(run_id: str) -> None:
        lock = RunLock(spark, table, ["a", "b"], run_id, "apply", 60)
        start.wait()
        try:
            lock.acquire()
            outcomes[run_id] = "acquired"
            time.sleep(1)
            lock.release()
        except LockHeld:
            outcomes[run_id] = "refused"

    threads = [threading.Thread(target=contend, args=(f"r{i}",)) for i in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert sorted(outcomes.values()) == ["acquired", "refused", "refused"]


def test_broker_stopped_mid_apply_then_rerun_converges(fresh_broker: Any, spark: Any,
                                                       connect_server: Any,
                                                       tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    # 20 requests of 5 topics: the broker is killed once 20 topics exist, 16 from the end.
    rows = topic_rows("stop.", 100, 3)
    names = [r["topic"] for r in rows]
    write_manifest_table(spark, warehouse / "desired_topics", rows)
    conf = write_conf(tmp_path / "conf.yaml", fresh_broker.bootstrap_servers, warehouse,
                      extra={"kafka": {"batch_size": 5, "request_timeout_ms": 3000,
                                       "operation_timeout_ms": 3000,
                                       "verify_timeout_ms": 3000}})
    stopped = threading.Event()

    def stop_when_some_exist() -> None:
        admin = KafkaAdminClient(bootstrap_servers=fresh_broker.bootstrap_servers)
        try:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                if len([t for t in admin.list_topics() if t.startswith("stop.")]) >= 20:
                    break
                time.sleep(0.05)
        finally:
            admin.close()
        fresh_broker.kill_node(1)
        stopped.set()

    watcher = threading.Thread(target=stop_when_some_exist, daemon=True)
    watcher.start()
    broken = run_cli(["apply", "--conf", str(conf), "--json"], remote=connect_server.address)
    watcher.join(timeout=60)
    assert stopped.is_set()
    assert broken.returncode == 1, broken.output[-3000:]
    first = broken.json()["run_id"]
    apply_outcomes = {t: o for _, t, _, phase, o in audit_rows(spark, warehouse, first)
                      if phase == "apply"}
    # every topic sent for creation has its apply row; none claims a success it lacks
    assert sorted(apply_outcomes) == names
    assert set(apply_outcomes.values()) <= {"created", "unknown", "failed"}
    assert "created" in apply_outcomes.values()
    assert {"unknown", "failed"} & set(apply_outcomes.values())

    fresh_broker.start_node(1)
    live_before = broker_state(fresh_broker.bootstrap_servers)
    rerun = run_cli(["apply", "--conf", str(conf), "--json"], remote=connect_server.address)
    assert rerun.returncode == 0, rerun.output[-3000:]
    after = broker_state(fresh_broker.bootstrap_servers)
    assert sorted(after) == names
    assert all((s["partitions"], s["replication_factor"]) == (1, 1) for s in after.values())
    second = audit_rows(spark, warehouse, rerun.json()["run_id"])
    missing = sorted(set(names) - set(live_before))
    # A rerun with creates records every plan row; one with none left records no audit row.
    assert second == (sorted(_present_rows(sorted(live_before)) + _created_rows(missing))
                      if missing else [])


def test_zero_operation_timeout_is_unknown_then_resolved_by_verify(
        kafka: Any, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    rows = topic_rows("slow.", 30, 3, partitions=3)
    names = [r["topic"] for r in rows]
    write_manifest_table(spark, warehouse / "desired_topics", rows)
    # KIP-4: a timeout of 0 starts the creation and returns at once with REQUEST_TIMED_OUT,
    # so the job cannot know from the response whether the topic exists.
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse,
                      extra={"kafka": {"operation_timeout_ms": 0, "verify_timeout_ms": 5000}})
    mine, others = _split(kafka, "slow.")
    assert mine == []
    done = run_cli(["apply", "--conf", str(conf), "--json"], remote=connect_server.address)
    run_id = done.json()["run_id"]
    rows_seen = audit_rows(spark, warehouse, run_id)
    assert {o for _, _, _, phase, o in rows_seen if phase == "apply"} == {"unknown"}
    mine, rest = _split(kafka, "slow.")
    assert rest == others
    exists = set(mine)
    # verify says exactly what the broker has: created where it exists, failed where not
    assert {t: o for _, t, _, phase, o in rows_seen if phase == "verify"} == {
        n: "created" if n in exists else "failed" for n in names}
    assert done.returncode == (0 if exists == set(names) else 1)

    conf_normal = write_conf(tmp_path / "conf2.yaml", kafka.bootstrap_servers, warehouse)
    rerun = run_cli(["apply", "--conf", str(conf_normal), "--json"],
                    remote=connect_server.address)
    assert rerun.returncode == 0, rerun.output[-3000:]
    assert _split(kafka, "slow.") == (names, others)


def test_controller_mutation_quota_is_retried_after_the_throttle(
        fresh_broker: Any, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    kafka_tool("kafka.admin.ConfigCommand", "--bootstrap-server",
               fresh_broker.bootstrap_servers, "--alter", "--add-config",
               "controller_mutation_rate=2", "--entity-type", "clients",
               "--entity-name", "topic-provisioning")
    warehouse = tmp_path / "wh"
    # The quota is a rate over an 11-second window: 40 partitions in a burst is well
    # over 2 per second, so later batches come back THROTTLING_QUOTA_EXCEEDED.
    rows = topic_rows("quota.", 40, 3)
    names = [r["topic"] for r in rows]
    write_manifest_table(spark, warehouse / "desired_topics", rows)
    conf = write_conf(tmp_path / "conf.yaml", fresh_broker.bootstrap_servers, warehouse,
                      extra={"kafka": {"batch_size": 5, "throttle_retries": 30}})
    done = run_cli(["apply", "--conf", str(conf), "--json"], remote=connect_server.address)
    assert done.returncode == 0, done.output[-3000:]
    run_id = done.json()["run_id"]
    assert audit_rows(spark, warehouse, run_id) == _created_rows(names)
    assert sorted(broker_state(fresh_broker.bootstrap_servers)) == names
    attempts = spark.read.format("delta").load(str(warehouse / "topic_audit")) \
        .where(f"run_id = '{run_id}' and phase = 'apply'").collect()
    # some batches were throttled and retried; the audit keeps the broker's final answer
    assert {r["error_name"] for r in attempts} == {"NONE"}
    assert max(r["attempts"] for r in attempts) > 1


def test_deletion_disabled_is_recorded_not_retried(spark: Any, connect_server: Any,
                                                   tmp_path: Path) -> None:
    """On a broker of its own: delete.topic.enable is a static broker setting, and false
    would refuse every other module's deletes."""
    from dev.devkafka import KafkaCluster

    with KafkaCluster(tmp_path / "kafka", nodes=1,
                      broker_properties={"delete.topic.enable": "false"}) as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        admin.create_topics({"keep.me": {"num_partitions": 1, "replication_factor": 1}},
                            wait_for_metadata=True)
        admin.close()
        before = broker_state(broker.bootstrap_servers)
        warehouse = tmp_path / "wh"
        write_manifest_table(spark, warehouse / "desired_topics",
                             [{"cluster": "local", "topic": "keep.me", "state": "absent"}])
        conf = write_conf(tmp_path / "conf.yaml", broker.bootstrap_servers, warehouse)
        done = run_cli(["apply", "--conf", str(conf), "--allow-deletes", "--json"],
                       remote=connect_server.address)
        assert done.returncode == 1, done.output[-3000:]
        assert broker_state(broker.bootstrap_servers) == before
        row = spark.read.format("delta").load(str(warehouse / "topic_audit")).where(
            f"run_id = '{done.json()['run_id']}' and phase = 'apply'").collect()
        assert [(r["topic"], r["outcome"], r["error_name"]) for r in row] == [
            ("keep.me", "failed", "TOPIC_DELETION_DISABLED")]


def test_delete_of_a_recreated_topic_deletes_nothing(fresh_broker: Any, spark: Any,
                                                     tmp_path: Path) -> None:
    from provisioning.conf import ClusterConf, KafkaConf
    from provisioning.kinds.topics import executors as admin_io

    admin = KafkaAdminClient(bootstrap_servers=fresh_broker.bootstrap_servers)
    spec = {"num_partitions": 1, "replication_factor": 1}
    admin.create_topics({"again": spec, "plain": spec}, wait_for_metadata=True)
    old = broker_state(fresh_broker.bootstrap_servers)
    admin.delete_topics(["again"])
    time.sleep(1)
    admin.create_topics({"again": spec}, wait_for_metadata=True)
    admin.close()
    recreated = broker_state(fresh_broker.bootstrap_servers)
    assert recreated["again"]["topic_id"] != old["again"]["topic_id"]

    requests = spark.createDataFrame(
        [("local", "again", old["again"]["topic_id"]),
         ("local", "plain", old["plain"]["topic_id"])],
        "cluster string, topic string, topic_id string")
    cluster = ClusterConf(name="local", bootstrap_servers=fresh_broker.bootstrap_servers)
    results = admin_io.send_deletes(requests, [cluster], {}, KafkaConf()).collect()
    assert sorted((r["topic"], r["outcome"], r["error_name"], r["topic_id"], r["error_message"])
                  for r in results) == [
        ("again", "blocked", "UNKNOWN_TOPIC_ID", recreated["again"]["topic_id"],
         f"topic again was recreated since the snapshot (id now "
         f"{recreated['again']['topic_id']}, the plan saw {old['again']['topic_id']}); "
         "nothing was deleted"),
        ("plain", "deleted", "NONE", old["plain"]["topic_id"], None),
    ]
    assert broker_state(fresh_broker.bootstrap_servers) == {"again": recreated["again"]}


def test_task_retry_after_creates_keeps_outcomes_right(kafka: Any, spark: Any,
                                                       tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    rows = topic_rows("retry.", 8, 3)
    names = [r["topic"] for r in rows]
    write_manifest_table(spark, warehouse / "desired_topics", rows)
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse)
    mine, others = _split(kafka, "retry.")
    assert mine == []
    # Classic local mode: the fault reaches the executors' Python only when they are this
    # machine's local workers, and local[2,3] lets a failed task be tried again.
    done = run_cli(["apply", "--conf", str(conf), "--json"],
                   env=fault_env("fail-task-after:create_topics"),
                   spark_args=["--master", "local[2,3]"])
    assert done.returncode == 0, done.output[-3000:]
    assert audit_rows(spark, warehouse, done.json()["run_id"]) == _created_rows(names)
    messages = {r["error_message"] for r in
                spark.read.format("delta").load(str(warehouse / "topic_audit"))
                .where("phase = 'apply'").collect()}
    assert messages == {"created by an earlier attempt of this Spark task"}
    assert _split(kafka, "retry.") == (names, others)


def test_an_apply_plans_again_under_its_lock_and_a_no_op_takes_none(
        kafka: Any, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    """The plan made without the lock has changes; before the run takes its lock, one topic
    is altered by hand to what the manifest wants and another is created as it wants: the
    plan made under the lock sees both and only the third topic is created. A topic the
    first plan left alone gets a partition by hand and an unmanaged one appears: the
    listing read under the lock shows both, the first is planned again (its drift) and the
    second is in the view recorded. A no-op apply after it never writes the lock table and
    records one plan commit."""
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

    warehouse = tmp_path / "wh"
    day, hour = "86400000", "3600000"
    wanted = [{"cluster": "local", "topic": f"relock.{t}", "partitions": 1,
               "replication_factor": 1, "configs": {"retention.ms": day}} for t in "abcd"]
    write_manifest_table(spark, warehouse / "desired_topics", wanted)
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse)
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("relock.a", 1, 1, topic_configs={"retention.ms": hour}),
                             NewTopic("relock.d", 1, 1, topic_configs={"retention.ms": day})])
        paused = run_paused(["apply", "--conf", str(conf), "--allow-alter", "--json"],
                            "pause-before-lock", tmp_path / "go", connect_server.address)
        locks = warehouse / "provision_runs_locks"
        assert row_count(spark, locks) == 0  # the first plan was made without the lock
        # Between the plan and the lock: relock.a altered, relock.b created, both as wanted;
        # relock.d (a NOOP in the first plan) given a second partition; relock.x created.
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "relock.a",
                                            configs={"retention.ms": day})])
        admin.create_topics([NewTopic("relock.b", 1, 1, topic_configs={"retention.ms": day}),
                             NewTopic("relock.x", 1, 1)])
        admin.create_partitions({"relock.d": NewPartitions(2)})
        done = paused.go()
    finally:
        admin.close()
    assert done.returncode == 0, done.output[-3000:]
    assert "step plan again under the lock:" in done.output
    assert "first plan kept" not in done.output
    run_id = done.json()["run_id"]
    assert audit_rows(spark, warehouse, run_id) == sorted([
        ("local", "relock.a", "NOOP", "plan", "already_present"),
        ("local", "relock.b", "NOOP", "plan", "already_present"),
        *(("local", "relock.c", "CREATE", phase, outcome) for phase, outcome in
          (("plan", "planned"), ("validate", "validated"), ("apply", "created"),
           ("verify", "created"))),
        ("local", "relock.d", "DRIFT", "plan", "drift")])
    state = broker_state(kafka.bootstrap_servers)
    assert {t: (s["partitions"], s["configs"]) for t, s in state.items()
            if t.startswith("relock.")} == {
        **{f"relock.{t}": (1, {"retention.ms": day}) for t in "abc"},
        "relock.d": (2, {"retention.ms": day}), "relock.x": (1, {})}
    # Only the view read under the lock is recorded: one snapshot, with relock.b, relock.x
    # and relock.d's second partition in it.
    snapshot = (spark.read.format("delta").load(str(warehouse / "topic_snapshots"))
                .where(f"run_id = '{run_id}' AND topic LIKE 'relock.%'").collect())
    assert sorted((r["topic"], r["partitions"]) for r in snapshot) == [
        ("relock.a", 1), ("relock.b", 1), ("relock.d", 2), ("relock.x", 1)]
    lock_log = (spark.read.format("delta").load(str(locks))
                .orderBy("_metadata.row_commit_version").collect())
    assert [(r["run_id"], r["event"]) for r in lock_log] == [
        (run_id, "claim"), (run_id, "release")]

    def version(table: str) -> int:
        return int(spark.sql(f"DESCRIBE HISTORY delta.`{warehouse / table}` LIMIT 1")
                   .collect()[0]["version"])

    tables = ("topic_audit", "provision_runs", "topic_snapshots", "provision_runs_locks")
    # The first no-op records its snapshot (relock.c is new since the last one); the
    # second finds the cluster as that snapshot holds it.
    for snapshot_commits in (1, 0):
        before = {t: version(t) for t in tables}
        again = run_cli(["apply", "--conf", str(conf), "--allow-alter", "--json"],
                        remote=connect_server.address)
        assert again.returncode == 0, again.output[-3000:]
        # A no-op records only its findings (the drift) as audit rows; its counts are in
        # its runs row.
        assert audit_rows(spark, warehouse, again.json()["run_id"]) == [
            ("local", "relock.d", "DRIFT", "plan", "drift")]
        assert plan_counts(spark, warehouse, again.json()["run_id"]) == [
            ("topics", "local", "DRIFT", "drift", 1),
            ("topics", "local", "NOOP", "already_present", 3)]
        assert {t: version(t) - before[t] for t in tables} == {
            "topic_audit": 1, "provision_runs": 1, "topic_snapshots": snapshot_commits,
            "provision_runs_locks": 0}
    # Nothing changes between the plan and the lock: the rows read under it are the first
    # read's, and the first plan is the plan (one plan commit, as the no-op's).
    week = "604800000"
    wanted[0]["configs"] = {"retention.ms": week}
    write_manifest_table(spark, warehouse / "desired_topics", wanted)
    before = {t: version(t) for t in tables}
    alter = run_cli(["apply", "--conf", str(conf), "--allow-alter", "--topics", "relock.*",
                     "--json"], remote=connect_server.address)
    assert alter.returncode == 0, alter.output[-3000:]
    assert "step first plan kept under the lock:" in alter.output
    assert "plan again under the lock" not in alter.output
    # The first pass's count of unmanaged topics is the kept plan's: relock.x.
    assert alter.json()["unmanaged"] == {"local": 1}
    assert audit_rows(spark, warehouse, alter.json()["run_id"]) == sorted([
        *(("local", "relock.a", "ALTER", phase, outcome) for phase, outcome in
          (("plan", "planned"), ("validate", "validated"), ("apply", "altered"),
           ("verify", "altered"))),
        *(("local", f"relock.{t}", "NOOP", "plan", "already_present") for t in "bc"),
        ("local", "relock.d", "DRIFT", "plan", "drift")])
    assert broker_state(kafka.bootstrap_servers)["relock.a"]["configs"] == {
        "retention.ms": week}
    # Two audit commits (the intent: plan and validate rows, before the alter; the results:
    # apply and verify rows), one snapshot (the view under the lock), the lock's claim and
    # release.
    assert {t: version(t) - before[t] for t in tables} == {
        "topic_audit": 2, "provision_runs": 1, "topic_snapshots": 1,
        "provision_runs_locks": 2}
