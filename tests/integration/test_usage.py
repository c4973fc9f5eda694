"""`check`'s usage, through spark-submit.sh as thin clients of the session's Spark Connect
server, against real brokers and real records: the inventory and disks tables, the usage
rules, and the delete policy's recent-write check. Each flow scopes its runs to its own
topics (`--topics`) on a shared cluster."""

from __future__ import annotations

import datetime as dt
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.structs import OffsetAndMetadata

from tests.helpers import run_cli, write_conf, write_manifest_table

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

DAY_MS = 86_400_000
GROUP = "inv-readers"


def _produce(bootstrap: str, topic: str, values: list[tuple[int, bytes]],
             timestamp_ms: int | None = None) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i, (partition, value) in enumerate(values):
            producer.send(topic, value, partition=partition,
                          timestamp_ms=None if timestamp_ms is None else timestamp_ms + i)
        producer.flush()
    finally:
        producer.close()


def _commit(bootstrap: str, offsets: dict[TopicPartition, int]) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP,
                             enable_auto_commit=False)
    try:
        consumer.assign(list(offsets))
        consumer.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()})
    finally:
        consumer.close()


def _table(spark: Any, warehouse: Path, name: str, run_id: str) -> Any:
    return (spark.read.format("delta").load(str(warehouse / f"provision_runs_{name}"))
            .where(f"run_id = '{run_id}'"))


def _used_share(data_dir: Path) -> float:
    """The volume's used share as the broker reports it (KIP-827: total and usable)."""
    st = os.statvfs(data_dir)
    return 1 - st.f_bavail / st.f_blocks


def _check(conf: Path, server: Any, topics: str) -> dict[str, Any]:
    done = run_cli(["check", "--conf", str(conf), "--topics", topics, "--json"],
                   remote=server.address)
    assert done.returncode in (0, 1), done.output[-3000:]
    doc: dict[str, Any] = done.json()
    return doc


def test_check_measures_usage_judges_it_and_deletes_only_idle_topics(
        kafka: Any, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    bootstrap = kafka.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([
            NewTopic("inv.live", 1, 1, topic_configs={"retention.ms": "-1"}),
            NewTopic("inv.old", 1, 1, topic_configs={"retention.ms": "-1"}),
            NewTopic("inv.empty", 1, 1),
            NewTopic("inv.read", 2, 1),
        ], raise_errors=True, wait_for_metadata=True)
    finally:
        admin.close()
    written = time.time()
    forty_days_ago = int((written - 40 * 86400) * 1000)
    _produce(bootstrap, "inv.live", [(0, b"a" * 200)] * 4)
    _produce(bootstrap, "inv.old", [(0, b"o" * 100)] * 3, timestamp_ms=forty_days_ago)
    _produce(bootstrap, "inv.read", [(0, b"r")] * 3 + [(1, b"r")] * 2)
    # The group read 2 of partition 0's 3 records and 1 of partition 1's 2: a lag of 2.
    _commit(bootstrap, {TopicPartition("inv.read", 0): 2, TopicPartition("inv.read", 1): 1})

    warehouse = tmp_path / "wh"
    write_manifest_table(spark, warehouse / "desired_topics", [])
    share = _used_share(kafka.base_dir)
    below = round(max(0.01, share - 0.05), 4)
    conf = write_conf(tmp_path / "conf.yaml", bootstrap, warehouse,
                      extra={"checks": {"disk_used_ratio": below}})

    first = _check(conf, connect_server, "inv.*")
    run1 = first["run_id"]
    inventory = _table(spark, warehouse, "inventory", run1)
    rows = {r["topic"]: r.asDict(recursive=True) for r in inventory.collect()}
    assert sorted(rows) == ["inv.empty", "inv.live", "inv.old", "inv.read"]
    measured = spark.createDataFrame(
        [(t, r["partitions"], r["replication_factor"], r["records"],
          r["size_bytes"] > 0, r["stored_bytes"] == r["size_bytes"],
          sorted(r["broker_bytes"]), r["last_write_at"] is None,
          [(g["group_id"], g["lag"]) for g in r["consumer_groups"]], r["retention_ms"],
          r["error"]) for t, r in rows.items()],
        "topic string, partitions int, replication_factor int, records long, sized boolean, "
        "one_copy boolean, brokers array<int>, no_write boolean, "
        "groups array<struct<_1:string,_2:long>>, retention_ms long, error string")
    expected = spark.createDataFrame([
        ("inv.empty", 1, 1, 0, False, True, [1], True, [], 604_800_000, None),
        ("inv.live", 1, 1, 4, True, True, [1], False, [], None, None),
        ("inv.old", 1, 1, 3, True, True, [1], False, [], None, None),
        ("inv.read", 2, 1, 5, True, True, [1], False, [(GROUP, 2)], 604_800_000, None),
    ], measured.schema)
    assert_df_equality(measured, expected, ignore_row_order=True, ignore_nullable=True)
    assert rows["inv.empty"]["size_bytes"] == 0
    # The newest record's time is the records' own: now for inv.live, 40 days ago for
    # inv.old (the producer set it), where the broker keeps CreateTime.
    live_at = rows["inv.live"]["last_write_at"].replace(tzinfo=dt.UTC).timestamp()
    old_at = rows["inv.old"]["last_write_at"].replace(tzinfo=dt.UTC).timestamp()
    assert abs(live_at - written) < 60, (live_at, written)
    assert abs(old_at - (forty_days_ago + 2) / 1000) < 0.01, (old_at, forty_days_ago)

    disks = _table(spark, warehouse, "disks", run1).collect()
    assert [(d["cluster"], d["broker"], d["error"]) for d in disks] == [("local", 1, None)]
    disk = disks[0]
    assert Path(disk["log_dir"]).is_relative_to(kafka.base_dir.resolve())
    assert disk["used_bytes"] == disk["total_bytes"] - disk["usable_bytes"]
    assert disk["kafka_bytes"] >= sum(r["stored_bytes"] for r in rows.values())

    found = {(v["topic"], v["rule"]): v for v in first["violations"]}
    assert sorted(found, key=str) == sorted([
        ("inv.old", "idle_topic"), ("inv.empty", "empty_topic"), (None, "disk_usage"),
        *[(t, "unmanaged") for t in rows]], key=str), sorted(found, key=str)
    assert (found[("inv.old", "idle_topic")]["severity"],
            found[("inv.empty", "empty_topic")]["severity"],
            found[(None, "disk_usage")]["severity"]) == ("warning", "info", "error")
    assert re.fullmatch(
        r"no record newer than 30 days: the newest was written at \d{4}-\d\d-\d\d "
        r"\d\d:\d\d:\d\d UTC \(40 days ago\); no consumer group has committed offsets on "
        r"it; delete it if nobody needs it", found[("inv.old", "idle_topic")]["detail"])
    assert found[("inv.empty", "empty_topic")]["detail"] == (
        "no records on any of its 1 partition(s); no consumer group has committed offsets "
        "on it")
    assert found[(None, "disk_usage")]["detail"].startswith(
        f"broker 1 log dir {disk['log_dir']} is ")
    assert first["exit_code"] == 1

    # Growth between two check runs, nothing capping it (retention.ms -1) and a long
    # horizon: the broker passes a ratio it is under now.
    _produce(bootstrap, "inv.live", [(0, b"g" * 1000)] * 50)
    above = round(min(0.9999, share + (1 - share) / 2), 4)
    conf = write_conf(tmp_path / "conf.yaml", bootstrap, warehouse,
                      extra={"checks": {"disk_used_ratio": above, "disk_days": 1_000_000}})
    second = _check(conf, connect_server, "inv.*")
    rules = sorted((v["topic"] or "", v["rule"]) for v in second["violations"]
                   if v["rule"] != "unmanaged")
    assert rules == [("", "disk_forecast"), ("inv.empty", "empty_topic"),
                     ("inv.old", "idle_topic")], rules
    forecast = next(v for v in second["violations"] if v["rule"] == "disk_forecast")
    assert forecast["severity"] == "warning"
    assert re.match(r"broker 1's log dirs are [\d.]+% used \(\d+ of \d+ bytes\) and grow "
                    r"about \d+ bytes a day \(fastest: inv\.live", forecast["detail"]), \
        forecast["detail"]

    # The inventory as a person reads it: the last check run's totals, largest and idle.
    shown = run_cli(["report", "--conf", str(conf), "--inventory", "--topics", "inv.*",
                     "--largest", "2", "--json"], remote=connect_server.address)
    assert shown.returncode == 0, shown.output[-3000:]
    [cluster] = shown.json()["inventory"]["clusters"]
    run2 = second["run_id"]
    now_rows = {r["topic"]: r for r in _table(spark, warehouse, "inventory", run2).collect()}
    assert (cluster["cluster"], cluster["run_id"], cluster["topics"], cluster["records"],
            cluster["size_bytes"], cluster["idle"], cluster["empty"]) == (
        "local", run2, 4, 62, sum(r["size_bytes"] for r in now_rows.values()), 1, 1)
    assert [t["topic"] for t in cluster["largest"]] == ["inv.live", "inv.old"]
    assert [(t["topic"], t["records"], t["consumer_groups"]) for t in cluster["idle_topics"]
            ] == [("inv.old", 3, [])]
    assert cluster["empty_topics"] == ["inv.empty"]
    assert [(d["broker"], d["log_dir"]) for d in cluster["disks"]] == [(1, disk["log_dir"])]
    trend = run_cli(["report", "--conf", str(conf), "--inventory", "--since", "1",
                     "--topics", "inv.*", "--json"], remote=connect_server.address)
    assert trend.returncode == 0, trend.output[-3000:]
    assert [(t["cluster"], t["run_id"], t["topics"], t["records"])
            for t in trend.json()["inventory"]["trend"]] == [("local", run2, 4, 62)]

    # Deletes: the topic written a minute ago is in use; the idle one goes.
    write_manifest_table(spark, warehouse / "desired_topics", [
        {"cluster": "local", "topic": t, "state": "absent"} for t in ("inv.live", "inv.old")])
    applied = run_cli(["apply", "--conf", str(conf), "--topics", "inv.*", "--allow-deletes",
                       "--json"], remote=connect_server.address)
    # A blocked row needs somebody to look at it: exit 1.
    assert applied.returncode == 1, applied.output[-3000:]
    audit = (spark.read.format("delta").load(str(warehouse / "topic_audit"))
             .where(f"run_id = '{applied.json()['run_id']}' AND phase = 'plan'")
             .select("topic", "action", "outcome", "policy_violations").collect())
    planned = {r["topic"]: r for r in audit}
    assert {t: (r["action"], r["outcome"]) for t, r in planned.items()} == {
        "inv.live": ("DELETE", "blocked"), "inv.old": ("DELETE", "planned")}, audit
    [violation] = planned["inv.live"]["policy_violations"]
    assert violation["policy"] == "topic_in_use"
    assert re.fullmatch(
        r"topic inv\.live is in use: its newest record was written at \d{4}-\d\d-\d\d "
        r"\d\d:\d\d:\d\d UTC, within deletes\.in_use_days \(since .*\); stop its "
        r"producers, or set `force: true` on its manifest row to delete it anyway",
        violation["message"]), violation
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        left = sorted(t for t in admin.list_topics() if t.startswith("inv."))
    finally:
        admin.close()
    assert left == ["inv.empty", "inv.live", "inv.read"]


def test_a_partition_led_off_its_first_replica_is_named(
        racked_kafka: Any, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    bootstrap = racked_kafka.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic("inv3.led", replica_assignments={0: [1, 2, 3]})],
                            raise_errors=True, wait_for_metadata=True)
        # The same replicas, broker 2 first: broker 1 keeps leading, off the preferred one.
        admin.alter_partition_reassignments({TopicPartition("inv3.led", 0): [2, 1, 3]})
        deadline = time.monotonic() + 30
        while admin.list_partition_reassignments() and time.monotonic() < deadline:
            time.sleep(0.2)
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "inv3.led",
                                            configs={"retention.ms": str(DAY_MS)})])
    finally:
        admin.close()
    warehouse = tmp_path / "wh"
    write_manifest_table(spark, warehouse / "desired_topics", [])
    conf = write_conf(tmp_path / "conf.yaml", bootstrap, warehouse,
                      extra={"checks": {"disk_used_ratio": 1}})
    doc = _check(conf, connect_server, "inv3.*")
    found = sorted((v["topic"], v["rule"], v["severity"], v["detail"])
                   for v in doc["violations"] if v["rule"] != "unmanaged")
    assert found == [
        ("inv3.led", "empty_topic", "info",
         "no records on any of its 1 partition(s); no consumer group has committed offsets "
         "on it"),
        ("inv3.led", "leader_not_preferred", "info",
         "partition 0 is led by broker 1, not its preferred replica 2; a preferred leader "
         "election (kafka-leader-election.sh --election-type PREFERRED) moves leadership "
         "back"),
    ]
    disks = _table(spark, warehouse, "disks", doc["run_id"]).collect()
    assert sorted(d["broker"] for d in disks) == [1, 2, 3]
    inventory = _table(spark, warehouse, "inventory", doc["run_id"]).collect()
    assert [(r["topic"], r["replication_factor"], r["records"], sorted(r["broker_bytes"]))
            for r in inventory] == [("inv3.led", 3, 0, [1, 2, 3])]
