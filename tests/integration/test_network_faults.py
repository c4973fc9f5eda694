"""Real network faults between the job and a real broker, through a loopback TCP proxy.

The broker advertises the proxy's port on the listener the job uses, so every request of
the job (bootstrap, metadata, CreateTopics, verify) crosses the proxy; the test reads the
broker directly on another listener. Each fault fires at the apply's real CreateTopics
(the second one the job sends: the first is the validateOnly pass). For each fault: the
exact audit rows, what verify settles, the exit code, and a rerun that converges. The runs
are thin clients of the shared Spark Connect server: its executors send the requests
through the proxy as a cluster's would.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dev.devkafka import KafkaCluster
from tests.helpers import (
    audit_rows,
    broker_state,
    plan_counts,
    run_cli,
    write_conf,
    write_manifest_table,
)
from tests.support.tcpproxy import CREATE_TOPICS, KafkaProxy

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

# The real CreateTopics of an apply: the validateOnly request comes first.
REAL_CREATE = 2
TIMEOUT_MS = 5000


@pytest.fixture
def proxied(kafka: KafkaCluster, kafka_proxy: KafkaProxy
            ) -> Iterator[tuple[KafkaCluster, KafkaProxy]]:
    """The session's plain broker and the proxy its PROXIED listener advertises, with no
    fault armed before or after the test."""
    kafka_proxy.reset()
    yield kafka, kafka_proxy
    kafka_proxy.reset()


def _setup(spark: Any, tmp_path: Path, proxy: KafkaProxy, prefix: str
           ) -> tuple[Path, Path, list[str]]:
    warehouse = tmp_path / "wh"
    names = [f"{prefix}{i:03d}" for i in range(3)]
    write_manifest_table(spark, warehouse / "desired_topics", [
        {"cluster": "local", "topic": n, "partitions": 2, "replication_factor": 1,
         "configs": {"retention.ms": "3600000"}} for n in names])
    conf = write_conf(tmp_path / "conf.yaml", f"127.0.0.1:{proxy.port}", warehouse,
                      extra={"kafka": {"request_timeout_ms": TIMEOUT_MS,
                                       "verify_timeout_ms": TIMEOUT_MS}})
    return warehouse, conf, names


def _wanted(cluster: KafkaCluster, names: list[str]) -> dict[str, tuple[int, int, dict]]:
    state = broker_state(cluster.bootstrap_servers)
    return {n: (s["partitions"], s["replication_factor"], s["configs"])
            for n, s in state.items() if n in names}


def _rows(names: list[str], *phases: tuple[str, str, str]) -> list[tuple[Any, ...]]:
    return sorted(("local", n, action, phase, outcome) for n in names
                  for action, phase, outcome in phases)


def _rerun_changes_nothing(cluster: KafkaCluster, spark: Any, warehouse: Path, conf: Path,
                           names: list[str], remote: str) -> None:
    ids = {n: s["topic_id"] for n, s in broker_state(cluster.bootstrap_servers).items()
           if n in names}
    again = run_cli(["apply", "--conf", str(conf), "--json"], remote=remote)
    assert again.returncode == 0, again.output[-3000:]
    assert again.json()["counts"] == {"already_present": 3}
    assert audit_rows(spark, warehouse, again.json()["run_id"]) == []
    assert plan_counts(spark, warehouse, again.json()["run_id"]) == [
        ("topics", "local", "NOOP", "already_present", len(names))]
    assert {n: s["topic_id"] for n, s in broker_state(cluster.bootstrap_servers).items()
            if n in names} == ids


def test_a_connection_cut_after_create_is_resent_and_settled(
        proxied: tuple[KafkaCluster, KafkaProxy], spark: Any, connect_server: Any,
        tmp_path: Path) -> None:
    cluster, proxy = proxied
    warehouse, conf, names = _setup(spark, tmp_path, proxy, "cut.")
    proxy.arm("cut", nth=REAL_CREATE, api_key=CREATE_TOPICS)

    done = run_cli(["apply", "--conf", str(conf), "--json"], remote=connect_server.address)
    assert proxy.fired == ["cut"]
    assert done.returncode == 0, done.output[-3000:]
    # The request reached the broker; its answer did not reach the job. The job asks the
    # cluster for its controller again and resends: TOPIC_ALREADY_EXISTS for each topic the
    # lost request created, which the audit keeps as created by this run, saying so.
    run_id = done.json()["run_id"]
    assert audit_rows(spark, warehouse, run_id) == _rows(
        names, ("CREATE", "plan", "planned"), ("CREATE", "validate", "validated"),
        ("CREATE", "apply", "created"), ("CREATE", "verify", "created"))
    applied = (spark.read.format("delta").load(str(warehouse / "topic_audit"))
               .where(f"run_id = '{run_id}' and phase = 'apply'").collect())
    assert {(r["error_name"], r["error_message"]) for r in applied} == {(
        "TOPIC_ALREADY_EXISTS", "created by this run: the answer to its CreateTopics was "
        "lost (KafkaConnectionError: socket disconnected) and the resend found it")}
    assert _wanted(cluster, names) == dict.fromkeys(names, (2, 1, {"retention.ms": "3600000"}))
    _rerun_changes_nothing(cluster, spark, warehouse, conf, names, connect_server.address)


def test_responses_held_past_the_timeout_are_unknown_until_verify(
        proxied: tuple[KafkaCluster, KafkaProxy], spark: Any, connect_server: Any,
        tmp_path: Path) -> None:
    cluster, proxy = proxied
    warehouse, conf, names = _setup(spark, tmp_path, proxy, "held.")
    proxy.arm("hold", nth=REAL_CREATE, api_key=CREATE_TOPICS,
              hold_seconds=3 * TIMEOUT_MS / 1000)

    done = run_cli(["apply", "--conf", str(conf), "--json"], remote=connect_server.address)
    assert proxy.fired == ["hold"]
    assert done.returncode == 0, done.output[-3000:]
    assert audit_rows(spark, warehouse, done.json()["run_id"]) == _rows(
        names, ("CREATE", "plan", "planned"), ("CREATE", "validate", "validated"),
        ("CREATE", "apply", "unknown"), ("CREATE", "verify", "created"))
    assert _wanted(cluster, names) == dict.fromkeys(names, (2, 1, {"retention.ms": "3600000"}))
    _rerun_changes_nothing(cluster, spark, warehouse, conf, names, connect_server.address)


def test_a_proxy_gone_dark_mid_run_then_a_rerun_creates_everything(
        proxied: tuple[KafkaCluster, KafkaProxy], spark: Any, connect_server: Any,
        tmp_path: Path) -> None:
    cluster, proxy = proxied
    warehouse, conf, names = _setup(spark, tmp_path, proxy, "dark.")
    proxy.arm("dark", nth=REAL_CREATE, api_key=CREATE_TOPICS)
    try:
        done = run_cli(["apply", "--conf", str(conf), "--json"], remote=connect_server.address)
    finally:
        proxy.restore()
    assert proxy.fired == ["dark"]
    # The real CreateTopics never reached the broker, and nothing answered after it.
    assert _wanted(cluster, names) == {}
    assert done.returncode == 1, done.output[-3000:]
    assert audit_rows(spark, warehouse, done.json()["run_id"]) == _rows(
        names, ("CREATE", "plan", "planned"), ("CREATE", "validate", "validated"),
        ("CREATE", "apply", "unknown"), ("CREATE", "verify", "unknown"))

    rerun = run_cli(["apply", "--conf", str(conf), "--json"], remote=connect_server.address)
    assert rerun.returncode == 0, rerun.output[-3000:]
    assert audit_rows(spark, warehouse, rerun.json()["run_id"]) == _rows(
        names, ("CREATE", "plan", "planned"), ("CREATE", "validate", "validated"),
        ("CREATE", "apply", "created"), ("CREATE", "verify", "created"))
    assert _wanted(cluster, names) == dict.fromkeys(names, (2, 1, {"retention.ms": "3600000"}))
    _rerun_changes_nothing(cluster, spark, warehouse, conf, names, connect_server.address)
