"""`check` and `report --violations` through spark-submit.sh, as thin clients of the session's
Spark Connect server, against the session's plain broker emptied first (brokers.reset):
check judges every topic of a cluster, so no other module's topics may be on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from dev.devkafka import KafkaCluster
from tests.helpers import run_cli, write_conf, write_manifest_table
from tests.support.brokers import reset

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

HOUR = "3600000"
DAY = "86400000"
POLICIES = {"create": [
    {"name": "partitions_range", "max": 4},
    # The broker's default retention (7 days) does not match: every topic must set one.
    {"name": "required_configs", "configs": {"retention.ms": f"^({HOUR}|{DAY})$"}},
]}
ROW = "run_id string, topic string, rule string, severity string, managed boolean, owner string"


@pytest.fixture(scope="module")
def broker(kafka: KafkaCluster) -> Iterator[KafkaCluster]:
    reset(kafka)
    yield kafka
    reset(kafka)


def _manifest(spark: Any, table: Path, fixed: bool) -> None:
    """The manifest: chk.good compliant, chk.wide over partitions_range, chk.bare without the
    required retention, chk.drifted wanting an hour's retention; once `fixed`, chk.wide is
    gone and chk.bare names the retention it was given."""
    rows = [
        {"cluster": "local", "topic": "chk.good", "partitions": 2, "replication_factor": 1,
         "configs": {"retention.ms": HOUR}, "owner": "team-a"},
        {"cluster": "local", "topic": "chk.bare", "partitions": 1, "replication_factor": 1,
         "configs": {"retention.ms": HOUR} if fixed else {}, "owner": "team-c"},
        {"cluster": "local", "topic": "chk.drifted", "partitions": 1, "replication_factor": 1,
         "configs": {"retention.ms": HOUR}, "owner": "team-d"},
    ]
    if not fixed:
        rows.append({"cluster": "local", "topic": "chk.wide", "partitions": 8,
                     "replication_factor": 1, "configs": {"retention.ms": HOUR},
                     "owner": "team-b"})
    write_manifest_table(spark, table, [{**r, "state": "present"} for r in rows])


def _set_configs(admin: KafkaAdminClient, topic: str, configs: dict[str, str]) -> None:
    """Set `configs` on the topic, naming every override it keeps (whether the client sends
    AlterConfigs, which replaces them, or IncrementalAlterConfigs); the second check reads
    back what the broker holds."""
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)])


def _violations(spark: Any, warehouse: Path, run_id: str) -> Any:
    return (spark.read.format("delta").load(str(warehouse / "provision_runs_violations"))
            .where(f"run_id = '{run_id}'")
            .select("run_id", "topic", "rule", "severity", "managed", "owner"))


def test_check_records_each_violation_and_gates_on_errors(
        broker: KafkaCluster, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    _manifest(spark, warehouse / "desired_topics", fixed=False)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        admin.create_topics([
            NewTopic("chk.good", 2, 1, topic_configs={"retention.ms": HOUR}),
            NewTopic("chk.loose", 1, 1, topic_configs={"retention.ms": HOUR,
                                                        "min.insync.replicas": "2"}),
            NewTopic("chk.wide", 8, 1, topic_configs={"retention.ms": HOUR}),
            NewTopic("chk.bare", 1, 1),
            NewTopic("chk.drifted", 1, 1, topic_configs={"retention.ms": DAY}),
        ], raise_errors=True, wait_for_metadata=True)
    finally:
        admin.close()
    # The usage rules have a module of their own (test_usage): here every topic is empty,
    # and how full the disk is is the machine's.
    conf = write_conf(tmp_path / "conf.yaml", broker.bootstrap_servers, warehouse,
                      extra={"policies": POLICIES, "checks": {
                          "severity": {"empty_topic": "off"}, "disk_used_ratio": 1}})

    first = run_cli(["check", "--conf", str(conf), "--json"], remote=connect_server.address)
    assert first.returncode == 1, first.output[-3000:]
    doc = first.json()
    run1 = doc["run_id"]
    assert (doc["command"], doc["exit_code"], doc["counts"]) == (
        "check", 1, {"error": 3, "warning": 1, "info": 1})
    # chk.loose's ISR of 1 is below its min.insync.replicas of 2, but no ISR could reach it:
    # min_insync_within_rf says so, not below_min_isr.
    expected = [
        (run1, "chk.loose", "min_insync_within_rf", "error", False, None),
        (run1, "chk.loose", "unmanaged", "info", False, None),
        (run1, "chk.wide", "partitions_range", "error", True, "team-b"),
        (run1, "chk.bare", "required_configs", "error", True, "team-c"),
        (run1, "chk.drifted", "drift", "warning", True, "team-d"),
    ]
    assert_df_equality(_violations(spark, warehouse, run1), spark.createDataFrame(expected, ROW),
                       ignore_row_order=True, ignore_nullable=True)
    assert sorted((r["topic"], r["rule"]) for r in doc["violations"]) == sorted(
        (t, rule) for _, t, rule, *_ in expected)

    # The bad topics fixed or deleted; chk.loose stays unmanaged.
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        _set_configs(admin, "chk.loose", {"retention.ms": HOUR, "min.insync.replicas": "1"})
        _set_configs(admin, "chk.bare", {"retention.ms": HOUR})
        _set_configs(admin, "chk.drifted", {"retention.ms": HOUR})
        admin.delete_topics(["chk.wide"])
    finally:
        admin.close()
    _manifest(spark, warehouse / "desired_topics", fixed=True)

    second = run_cli(["check", "--conf", str(conf)], remote=connect_server.address)
    assert second.returncode == 0, second.output[-3000:]
    runs = {r["run_id"]: r for r in spark.read.format("delta")
            .load(str(warehouse / "provision_runs")).collect()}
    assert sorted((r["command"], r["exit_code"]) for r in runs.values()) == [
        ("check", 0), ("check", 1)]
    run2 = next(r for r in runs if r != run1)
    assert_df_equality(_violations(spark, warehouse, run2), spark.createDataFrame(
        [(run2, "chk.loose", "unmanaged", "info", False, None)], ROW), ignore_nullable=True)
    assert "check: 1 violation(s): 0 error, 0 warning, 1 info" in second.stdout
    assert "errors: none" in second.stdout
    # Each check recorded its snapshot, as `snapshot` does.
    snapshots = spark.read.format("delta").load(str(warehouse / "topic_snapshots"))
    assert {r["run_id"] for r in snapshots.select("run_id").distinct().collect()} == {run1,
                                                                                      run2}

    trend = run_cli(["report", "--conf", str(conf), "--violations", "--json"],
                    remote=connect_server.address)
    assert trend.returncode == 0, trend.output[-3000:]
    report = trend.json()["violations"]
    today = str(runs[run2]["started_at"].date())  # the tests' session and the machine: UTC
    # Each day counts its last check run: the second.
    assert [(d["cluster"], d["day"], d["run_id"], d["rule"], d["violations"])
            for d in report["days"]] == [("local", today, run2, "unmanaged", 1)]
    assert sorted((s["topic"], s["rule"], s["severity"], s["started_run_id"],
                   s["stopped_run_id"], s["runs"]) for s in report["spans"]) == sorted([
        ("chk.loose", "min_insync_within_rf", "error", run1, run2, 1),
        ("chk.loose", "unmanaged", "info", run1, None, 2),
        ("chk.wide", "partitions_range", "error", run1, run2, 1),
        ("chk.bare", "required_configs", "error", run1, run2, 1),
        ("chk.drifted", "drift", "warning", run1, run2, 1),
    ])
