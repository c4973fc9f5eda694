"""Broker-side policies refuse changes in the validateOnly pass: a CreateTopicPolicy
(KIP-108) refuses a topic, an AlterConfigPolicy (KIP-133) refuses an alter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import broker_state, run_cli, write_conf, write_manifest_table
from tests.support.brokers import reset

pytestmark = [pytest.mark.integration, pytest.mark.e2e]


@pytest.fixture(scope="module")
def policy_broker(kafka: Any) -> Iterator[Any]:
    """The session's plain broker, which runs the test policies (tests/java) under their
    prefixes (tests/support/brokers.py: `reserved.` refused, `capped.` retention capped at a
    day), emptied first: the first test asserts every topic it holds."""
    reset(kafka)
    yield kafka
    reset(kafka)


def test_policy_violation_is_recorded_as_rejected(policy_broker: Any, spark: Any,
                                                   connect_server: Any, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    write_manifest_table(spark, warehouse / "desired_topics", [
        {"cluster": "local", "topic": "reserved.payments", "partitions": 2},
        {"cluster": "local", "topic": "open.payments", "partitions": 2},
    ])
    conf = write_conf(tmp_path / "conf.yaml", policy_broker.bootstrap_servers, warehouse)

    done = run_cli(["apply", "--conf", str(conf), "--json"], remote=connect_server.address)
    assert done.returncode == 1, done.output[-4000:]
    run_id = done.json()["run_id"]

    assert sorted(broker_state(policy_broker.bootstrap_servers)) == ["open.payments"]
    rows = (spark.read.format("delta").load(str(warehouse / "topic_audit"))
            .where(f"run_id = '{run_id}'").orderBy("topic", "recorded_at").collect())
    assert [(r["topic"], r["phase"], r["outcome"], r["error_name"], r["error_message"])
            for r in rows if r["topic"] == "reserved.payments"] == [
        ("reserved.payments", "plan", "planned", None, None),
        ("reserved.payments", "validate", "rejected", "POLICY_VIOLATION",
         "topic reserved.payments uses the reserved prefix reserved."),
    ]
    assert [(r["phase"], r["outcome"]) for r in rows if r["topic"] == "open.payments"] == [
        ("plan", "planned"), ("validate", "validated"), ("apply", "created"),
        ("verify", "created")]


def test_alter_config_policy_violation_is_rejected_and_nothing_changes(
        policy_broker: Any, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=policy_broker.bootstrap_servers)
    try:
        admin.create_topics({
            "capped.orders": {"num_partitions": 1, "replication_factor": 1,
                              "configs": {"retention.ms": "3600000"}},
            "capped.ledger": {"num_partitions": 1, "replication_factor": 1,
                              "configs": {"retention.ms": "3600000"}},
        }, raise_errors=True, wait_for_metadata=True)
    finally:
        admin.close()
    warehouse = tmp_path / "wh"
    write_manifest_table(spark, warehouse / "desired_topics", [
        # Longer retention: the job's own policies allow it, the broker's caps it at a day.
        {"cluster": "local", "topic": "capped.orders", "partitions": 2,
         "configs": {"retention.ms": "172800000"}},
        {"cluster": "local", "topic": "capped.ledger", "configs": {"retention.ms": "7200000"}},
    ])
    conf = write_conf(tmp_path / "conf.yaml", policy_broker.bootstrap_servers, warehouse)

    done = run_cli(["apply", "--conf", str(conf), "--topics", "capped.*", "--allow-alter",
                    "--json"], remote=connect_server.address)
    assert done.returncode == 1, done.output[-4000:]
    run_id = done.json()["run_id"]

    state = broker_state(policy_broker.bootstrap_servers)
    # The refused alter changed neither its configs nor its partitions (one unit).
    assert (state["capped.orders"]["partitions"], state["capped.orders"]["configs"]) == (
        1, {"retention.ms": "3600000"})
    assert (state["capped.ledger"]["partitions"], state["capped.ledger"]["configs"]) == (
        1, {"retention.ms": "7200000"})
    rows = (spark.read.format("delta").load(str(warehouse / "topic_audit"))
            .where(f"run_id = '{run_id}'").collect())
    assert sorted((r["topic"], r["phase"], r["outcome"], r["error_name"], r["error_message"])
                  for r in rows) == [
        ("capped.ledger", "apply", "altered", "NONE", None),
        ("capped.ledger", "plan", "planned", None, None),
        ("capped.ledger", "validate", "validated", "NONE", None),
        ("capped.ledger", "verify", "altered", "NONE", None),
        ("capped.orders", "plan", "planned", None, None),
        ("capped.orders", "validate", "rejected", "POLICY_VIOLATION",
         "IncrementalAlterConfigs: POLICY_VIOLATION: retention.ms 172800000 of topic "
         "capped.orders exceeds this cluster's maximum of 86400000"),
    ]
