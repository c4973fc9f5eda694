"""dev.devkafka starts real KRaft clusters that kafka-python can use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from dev.devkafka import KafkaCluster

pytestmark = pytest.mark.integration

LIB_DIR = Path(__file__).resolve().parents[2] / "lib"


def _admin(cluster: KafkaCluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)


def _unfenced(cluster: KafkaCluster) -> list[int]:
    return sorted(broker for broker, fenced in cluster.brokers().items() if not fenced)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A detached node is reparented to init, which may take a moment to reap it.
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def _replicas(admin: KafkaAdminClient, topic: str) -> dict[int, list[int]]:
    (described,) = admin.describe_topics([topic])
    assert described["error_code"] == 0
    return {p["partition_index"]: list(p["replica_nodes"]) for p in described["partitions"]}


def test_one_node_cluster_creates_and_describes_a_topic(tmp_path: Path) -> None:
    with KafkaCluster(tmp_path, 1) as cluster:
        assert cluster.node_ids == [1]
        host, port = cluster.bootstrap_servers.split(":")
        assert host == "127.0.0.1" and int(port) > 0
        admin = _admin(cluster)
        try:
            assert _unfenced(cluster) == cluster.node_ids
            admin.create_topics(
                {"t1": {"num_partitions": 3, "replication_factor": 1}},
                raise_errors=True,
                wait_for_metadata=True,
            )
            assert _replicas(admin, "t1") == {0: [1], 1: [1], 2: [1]}
        finally:
            admin.close()
        pid = cluster.pid(1)
        assert pid is not None
    assert not cluster.is_running(1)
    # The broker really logged through log4j2 (an slf4j mismatch would leave this empty).
    assert "Kafka Server started" in cluster.log_file(1).read_text()


def test_three_node_cluster_replicates_and_survives_a_node_restart(tmp_path: Path) -> None:
    with KafkaCluster(tmp_path, 3) as cluster:
        assert cluster.node_ids == [1, 2, 3]
        assert len(cluster.bootstrap_servers.split(",")) == 3
        admin = _admin(cluster)
        try:
            assert _unfenced(cluster) == cluster.node_ids
            admin.create_topics(
                {"t3": {"num_partitions": 3, "replication_factor": 3}},
                raise_errors=True,
                wait_for_metadata=True,
            )
            replicas = _replicas(admin, "t3")
            assert sorted(replicas) == [0, 1, 2]
            for nodes in replicas.values():
                assert len(nodes) == 3
                assert sorted(nodes) == cluster.node_ids

            cluster.stop_node(2)
            assert not cluster.is_running(2)
            assert _unfenced(cluster) == [1, 3]

            cluster.start_node(2)
            assert _unfenced(cluster) == cluster.node_ids
            assert {p: sorted(n) for p, n in _replicas(admin, "t3").items()} == {
                0: [1, 2, 3],
                1: [1, 2, 3],
                2: [1, 2, 3],
            }
        finally:
            admin.close()
    assert not any(cluster.is_running(n) for n in cluster.node_ids)


def test_racks_set_broker_rack_on_the_nodes_they_name(tmp_path: Path) -> None:
    with KafkaCluster(tmp_path, 1, racks={1: "a"}) as cluster:
        admin = _admin(cluster)
        try:
            brokers = admin.describe_cluster()["brokers"]
        finally:
            admin.close()
        assert [(b["broker_id"], b["rack"]) for b in brokers] == [(1, "a")]
        assert cluster.server_properties(1)["broker.rack"] == "a"


def test_racks_are_checked_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"racks name nodes \[4\]; nodes are 1..3"):
        KafkaCluster(tmp_path, 3, racks={1: "a", 4: "d"})
    with pytest.raises(ValueError, match="racks must be non-empty strings"):
        KafkaCluster(tmp_path, 3, racks={1: " "})
    with pytest.raises(ValueError, match="not both"):
        KafkaCluster(tmp_path, 3, racks={1: "a"}, broker_properties={"broker.rack": "x"})
    # Nodes a mapping leaves out have no rack.
    assert KafkaCluster(tmp_path, 3, racks={2: "b"}).racks == {2: "b"}


def test_cli_up_is_idempotent_and_down_stops_the_nodes(tmp_path: Path) -> None:
    pythonpath = os.pathsep.join(filter(None, [str(LIB_DIR), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": pythonpath}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dev.devkafka", *args, "--dir", str(tmp_path)],
            cwd=Path(__file__).resolve().parents[2],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
        )

    pids: list[int] = []
    try:
        first = cli("up")
        assert first.returncode == 0, first.stderr
        address = first.stdout.strip().splitlines()[-1]
        assert address.startswith("127.0.0.1:")
        again = cli("up")
        assert again.returncode == 0, again.stderr
        assert again.stdout.strip().splitlines()[-1] == address
        status = cli("status")
        assert (status.returncode, status.stdout.strip()) == (0, address)
        state = json.loads((tmp_path / "cluster.json").read_text())
        assert state["bootstrap_servers"] == address
        pids = [node["pid"] for node in state["nodes"]]
        assert len(pids) == 1 and all(_alive(pid) for pid in pids)
    finally:
        down = cli("down")
    assert down.returncode == 0, down.stderr
    assert not (tmp_path / "cluster.json").exists()
    assert not any(_alive(pid) for pid in pids)
    assert cli("status").returncode == 1
    assert cli("down").returncode == 0
