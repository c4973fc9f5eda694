"""`snapshot` through spark-submit.sh (a thin client of the shared Spark Connect server)
against a real broker, checked against the broker."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.structs import OffsetAndMetadata

from provisioning.kafka.codes import topic_id_text
from tests.helpers import run_cli, write_conf

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

TOPICS = {
    "snap.orders": {"num_partitions": 3, "replication_factor": 1,
                    "configs": {"retention.ms": "3600000", "cleanup.policy": "delete"}},
    "snap.ledger": {"num_partitions": 1, "replication_factor": 1,
                    "configs": {"cleanup.policy": "compact"}},
    "snap.plain": {"num_partitions": 2, "replication_factor": 1},
}


def _broker_view(admin: KafkaAdminClient) -> dict[str, dict[str, object]]:
    """What the broker says, read independently of the job."""
    view = {}
    described = admin.describe_topics(list(TOPICS))
    configs = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, t) for t in TOPICS])["topic"]
    for t in described:
        parts = sorted(t["partitions"], key=lambda p: p["partition_index"])
        view[t["name"]] = {
            "topic_id": topic_id_text(t["topic_id"]),
            "partitions": len(parts),
            "replication_factor": len(parts[0]["replica_nodes"]),
            "replica_assignment": {p["partition_index"]: list(p["replica_nodes"]) for p in parts},
            "configs": {k: v["value"] for k, v in configs[t["name"]].items()
                        if v["config_source"] == "DYNAMIC_TOPIC_CONFIG"},
        }
    return view


def _topics_with_committed_offsets(admin: KafkaAdminClient) -> set[str]:
    """Topics any consumer group holds an offset on: the module shares its broker, so other
    modules' groups count too."""
    groups = [g["group_id"] for g in admin.list_groups()]
    offsets = admin.list_group_offsets(groups).values() if groups else []
    return {tp.topic for group in offsets for tp, meta in group.items() if meta.offset >= 0}


def test_snapshot_records_what_the_broker_reports(kafka, spark, connect_server,
                                                  tmp_path: Path) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        admin.create_topics(TOPICS, raise_errors=True, wait_for_metadata=True)
        consumer = KafkaConsumer(bootstrap_servers=kafka.bootstrap_servers,
                                 group_id="snap-readers", enable_auto_commit=False)
        consumer.commit({TopicPartition("snap.orders", 0): OffsetAndMetadata(0, "", -1)})
        consumer.close()
        expected = _broker_view(admin)
        in_use = _topics_with_committed_offsets(admin)
        cluster_id = admin.describe_cluster()["cluster_id"]
    finally:
        admin.close()

    warehouse = tmp_path / "wh"
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse)
    done = run_cli(["snapshot", "--conf", str(conf), "--json"], remote=connect_server.address)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = done.json()
    run_id = summary["run_id"]

    rows = spark.read.format("delta").load(str(warehouse / "topic_snapshots")).collect()
    by_topic = {r["topic"]: r for r in rows}
    assert {r["run_id"] for r in rows} == {run_id}
    assert {r["cluster"] for r in rows} == {"local"}
    assert {r["cluster_id"] for r in rows} == {cluster_id}
    for name, want in expected.items():
        row = by_topic[name]
        assert {
            "topic_id": row["topic_id"],
            "partitions": row["partitions"],
            "replication_factor": row["replication_factor"],
            "replica_assignment": {k: list(v) for k, v in row["replica_assignment"].items()},
            "configs": {c["name"]: c["value"] for c in row["configs"]
                        if c["source"] == "DYNAMIC_TOPIC_CONFIG"},
        } == want
        assert row["internal"] is False
        assert row["error_name"] is None
    assert by_topic["snap.orders"]["consumer_groups"] == ["snap-readers"]
    assert by_topic["snap.ledger"]["consumer_groups"] == []
    # Committing an offset made the broker create its internal offsets topic.
    assert by_topic["__consumer_offsets"]["internal"] is True

    topics_total = len(rows)
    assert summary["clusters"] == [{
        "cluster": "local", "cluster_id": cluster_id, "brokers": 1,
        "topics": topics_total, "internal_topics": 1,
        "partitions": sum(r["partitions"] for r in rows),
        "topics_in_use": len(in_use), "undescribable_topics": 0,
    }]

    runs = spark.read.format("delta").load(str(warehouse / "provision_runs")).collect()
    assert [(r["run_id"], r["command"], r["status"], r["exit_code"]) for r in runs] == [
        (run_id, "snapshot", "succeeded", 0)]
    assert runs[0]["outcome_counts"] == {"topics": topics_total}


def test_snapshot_of_unreachable_cluster_exits_3(spark, connect_server, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    # Port 9 (discard) on loopback: nothing listens there.
    conf = write_conf(tmp_path / "conf.yaml", "127.0.0.1:9", warehouse,
                      extra={"kafka": {"request_timeout_ms": 3000}})
    done = run_cli(["snapshot", "--conf", str(conf)], remote=connect_server.address)
    assert done.returncode == 3, done.stderr[-3000:]
    assert "error: cluster local at 127.0.0.1:9 is unreachable" in done.output
    runs = spark.read.format("delta").load(str(warehouse / "provision_runs")).collect()
    assert [(r["command"], r["status"], r["exit_code"]) for r in runs] == [
        ("snapshot", "failed", 3)]
    assert "unreachable" in runs[0]["message"]


def test_bad_conf_names_the_key_and_exits_2(connect_server: object, tmp_path: Path) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text(
        "clusters:\n  local:\n    bootstrap_servers: 127.0.0.1:9092\n    sasl_pasword_env: X\n"
        "tables:\n  manifests: [m]\n  audit: a\n  runs: r\n  snapshots: s\n"
        "kafka:\n  batch_size: lots\n"
    )
    done = run_cli(["snapshot", "--conf", str(conf)], remote=connect_server.address)
    assert done.returncode == 2
    assert "clusters.local.sasl_pasword_env: unknown key" in done.output
    assert "kafka.batch_size: expected an integer, got a string" in done.output
