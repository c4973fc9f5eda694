"""Changing live topics through spark-submit.sh: ALTER rows are validated by the broker
first, applied only with --allow-alter, guarded by the alter policies, verified, audited.

Each command is a thin client of the session's Spark Connect server: the mode does not
matter to this flow (the classic path is proved by test_provision_e2e[classic], and ALTERs
through classic spark-submit by the soak's spark-submit runs in test_cluster_faults)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient

from tests.helpers import audit_rows, broker_state, run_cli, write_conf, write_manifest_table

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

LIVE = {
    "alt.grow": {"num_partitions": 1, "replication_factor": 1,
                 "configs": {"retention.ms": "86400000", "segment.ms": "600000"}},
    "alt.compacted": {"num_partitions": 1, "replication_factor": 1,
                      "configs": {"cleanup.policy": "compact"}},
    "alt.shrink": {"num_partitions": 1, "replication_factor": 1,
                   "configs": {"retention.ms": "86400000"}},
    "alt.both": {"num_partitions": 1, "replication_factor": 1},
    "alt.forced": {"num_partitions": 1, "replication_factor": 1,
                   "configs": {"retention.ms": "-1"}},
}
MANIFEST = [
    # More partitions, longer retention, a new config; segment.ms is not listed: left alone.
    {"cluster": "local", "topic": "alt.grow", "partitions": 4,
     "configs": {"retention.ms": "172800000", "max.message.bytes": "2097152"}},
    # Partitions of a compacted topic: refused by the always-on policy.
    {"cluster": "local", "topic": "alt.compacted", "partitions": 2,
     "configs": {"cleanup.policy": "compact"}},
    # Shorter retention: refused (it deletes data).
    {"cluster": "local", "topic": "alt.shrink", "configs": {"retention.ms": "3600000"}},
    # Partitions the broker would accept, a config it refuses: neither is applied.
    {"cluster": "local", "topic": "alt.both", "partitions": 3,
     "configs": {"max.message.bytes": "-5"}},
    # Unlimited to a limit, lifted by force.
    {"cluster": "local", "topic": "alt.forced", "configs": {"retention.ms": "604800000"},
     "force": True},
]


def _shape(state: dict[str, Any]) -> dict[str, tuple[int, dict[str, str]]]:
    return {t: (s["partitions"], s["configs"]) for t, s in sorted(state.items())
            if t.startswith("alt.")}


def test_alter_is_validated_then_applied_only_when_allowed(
        kafka: Any, connect_server: Any, spark: Any, tmp_path: Path) -> None:
    run = functools.partial(run_cli, remote=connect_server.address)
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        admin.create_topics(LIVE, raise_errors=True, wait_for_metadata=True)
    finally:
        admin.close()
    wh = tmp_path / "wh"
    write_manifest_table(spark, wh / "desired_topics", MANIFEST)
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, wh)
    before = _shape(broker_state(kafka.bootstrap_servers))

    # Without --allow-alter: planned and validated, nothing changed.
    held = run(["apply", "--conf", str(conf), "--topics", "alt.*", "--json"])
    assert held.returncode == 1, held.output[-3000:]
    report = held.json()
    assert (report["alters_not_allowed"], report["counts"]) == (
        2, {"validated": 2, "blocked": 2, "rejected": 1})
    assert _shape(broker_state(kafka.bootstrap_servers)) == before

    done = run(["apply", "--conf", str(conf), "--topics", "alt.*", "--allow-alter",
                "--json"])
    assert done.returncode == 1, done.output[-3000:]
    run_id = done.json()["run_id"]
    assert _shape(broker_state(kafka.bootstrap_servers)) == {
        **before,
        "alt.grow": (4, {"retention.ms": "172800000", "max.message.bytes": "2097152",
                         "segment.ms": "600000"}),
        "alt.forced": (1, {"retention.ms": "604800000"}),
    }
    assert audit_rows(spark, wh, run_id) == sorted([
        ("local", "alt.both", "ALTER", "plan", "planned"),
        ("local", "alt.both", "ALTER", "validate", "rejected"),
        ("local", "alt.compacted", "ALTER", "plan", "blocked"),
        ("local", "alt.forced", "ALTER", "plan", "planned"),
        ("local", "alt.forced", "ALTER", "validate", "validated"),
        ("local", "alt.forced", "ALTER", "apply", "altered"),
        ("local", "alt.forced", "ALTER", "verify", "altered"),
        ("local", "alt.grow", "ALTER", "plan", "planned"),
        ("local", "alt.grow", "ALTER", "validate", "validated"),
        ("local", "alt.grow", "ALTER", "apply", "altered"),
        ("local", "alt.grow", "ALTER", "verify", "altered"),
        ("local", "alt.shrink", "ALTER", "plan", "blocked"),
    ])
    rows = {(r["topic"], r["phase"]): r for r in spark.read.format("delta")
            .load(str(wh / "topic_audit")).where(f"run_id = '{run_id}'").collect()}
    grown = rows[("alt.grow", "verify")]
    assert (grown["before_partitions"], dict(grown["before_configs"]),
            [tuple(o) for o in grown["config_ops"]], grown["result_partitions"],
            {c["name"]: c["value"] for c in grown["result_configs"]
             if c["source"] == "DYNAMIC_TOPIC_CONFIG"}) == (
        1, {"retention.ms": "86400000", "segment.ms": "600000"},
        [("max.message.bytes", "SET", "2097152"), ("retention.ms", "SET", "172800000")],
        4, {"max.message.bytes": "2097152", "retention.ms": "172800000",
            "segment.ms": "600000"})
    assert (rows[("alt.both", "validate")]["error_name"],
            rows[("alt.both", "validate")]["error_message"]) == (
        "INVALID_CONFIG", "IncrementalAlterConfigs: INVALID_CONFIG: Invalid value -5 for "
        "configuration max.message.bytes: Value must be at least 0")
    assert [(v["policy"]) for v in rows[("alt.compacted", "plan")]["policy_violations"]] == [
        "partitions_on_compacted"]
    assert [v["message"] for v in rows[("alt.shrink", "plan")]["policy_violations"]] == [
        "lowering retention.ms of topic alt.shrink from 86400000 to 3600000 deletes the data "
        "past the new limit; set `force: true` on its manifest row to make this change "
        "anyway"]

    # The next plan has nothing left to alter on what was altered; segment.ms stays drift.
    again = run(["plan", "--conf", str(conf), "--topics", "alt.grow", "--json"])
    assert again.returncode == 0, again.output[-3000:]
    assert (again.json()["actions"], again.json()["counts"]) == (
        [{"cluster": "local", "action": "DRIFT", "topics": 1}], {"drift": 1})
    history = run(["report", "--conf", str(conf), "--topic", "alt.grow"])
    assert ("before: partitions 1, topic configs retention.ms=86400000, segment.ms=600000; "
            "operations SET max.message.bytes=2097152, SET retention.ms=172800000"
            ) in history.stdout
