"""The product end to end through spark-submit.sh, as a thin client of the session's Spark
Connect server: plan, apply --allow-deletes, apply again, report. (The classic launcher runs
the same CLI in test_readme, test_packaging, test_signals and test_spark_standalone.)

The session's plain broker, emptied first (brokers.reset), so the broker state asserted is
the whole state: every non-internal topic, its id, partitions, replication factor and
topic-level configs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from tests.helpers import Completed, broker_state, write_conf, write_manifest_table
from tests.support.brokers import reset

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

CREATES = {
    f"e2e.t{i:02d}": {
        "partitions": 1 + i % 4,
        "replication_factor": 1,
        "configs": {"retention.ms": str(3_600_000 * (1 + i % 3))} if i % 2 else {},
    }
    for i in range(40)
}
PRE_EXISTING = {
    "e2e.drift": {"num_partitions": 2, "replication_factor": 1,
                  "configs": {"retention.ms": "1000"}},
    "e2e.same": {"num_partitions": 2, "replication_factor": 1,
                 "configs": {"cleanup.policy": "compact"}},
    "e2e.old1": {"num_partitions": 1, "replication_factor": 1},
    "e2e.old2": {"num_partitions": 3, "replication_factor": 1},
    "e2e.inuse": {"num_partitions": 1, "replication_factor": 1},
}


def manifest_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {"cluster": "local", "topic": name, "owner": "team-a", **spec}
        for name, spec in CREATES.items()
    ]
    rows += [
        # exists with 2 partitions and retention 1000: fewer partitions cannot be had in
        # place, and the unlisted override is left alone: drift on both, never changed
        {"cluster": "local", "topic": "e2e.drift", "partitions": 1, "replication_factor": 1,
         "configs": {}},
        {"cluster": "local", "topic": "e2e.same", "partitions": 2, "replication_factor": 1,
         "configs": {"cleanup.policy": "compact"}},
        {"cluster": "local", "topic": "e2e.old1", "state": "absent"},
        {"cluster": "local", "topic": "e2e.old2", "state": "absent"},
        {"cluster": "local", "topic": "e2e.inuse", "state": "absent"},
        {"cluster": "local", "topic": "__consumer_offsets", "state": "absent"},
        {"cluster": "local", "topic": "e2e.never", "state": "absent"},
        {"cluster": "local", "topic": "e2e.assigned", "replica_assignment": {0: [1], 1: [1]},
         "configs": {"cleanup.policy": "compact"}},
        # the broker refuses this value in the validateOnly pass
        {"cluster": "local", "topic": "e2e.badconfig", "partitions": 1,
         "configs": {"cleanup.policy": "bogus"}},
        # invalid rows: each rejected, none reaches the broker
        {"cluster": "local", "topic": "bad name!"},
        {"cluster": "local", "topic": "e2e.zero", "partitions": 0},
        {"cluster": "local", "topic": "e2e.dup", "partitions": 1},
        {"cluster": "local", "topic": "e2e.dup", "partitions": 2},
        {"cluster": "elsewhere", "topic": "e2e.lost"},
        {"cluster": "local", "topic": "e2e.both", "partitions": 2,
         "replica_assignment": {0: [1], 1: [1]}},
    ]
    return rows


@pytest.fixture(scope="module")
def broker(kafka: Any) -> Iterator[Any]:
    reset(kafka)
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    admin.create_topics(PRE_EXISTING, raise_errors=True, wait_for_metadata=True)
    admin.close()
    consumer = KafkaConsumer(bootstrap_servers=kafka.bootstrap_servers,
                             group_id="e2e-readers", enable_auto_commit=False)
    consumer.commit({TopicPartition("e2e.inuse", 0): OffsetAndMetadata(0, "", -1)})
    consumer.close()
    yield kafka
    reset(kafka)


def _audit(spark: Any, warehouse: Path, run_id: str) -> list[tuple[Any, ...]]:
    rows = (spark.read.format("delta").load(str(warehouse / "topic_audit"))
            .where(f"run_id = '{run_id}'").collect())
    return sorted((r["cluster"] or "", r["topic"] or "", r["action"], r["phase"], r["outcome"])
                  for r in rows)


REJECTED = [("local", "bad name!"), ("local", "e2e.zero"), ("local", "e2e.dup"),
            ("local", "e2e.dup"), ("elsewhere", "e2e.lost"), ("local", "e2e.both")]


def _expected_apply_audit() -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for name in [*CREATES, "e2e.assigned"]:
        rows += [("local", name, "CREATE", phase, outcome) for phase, outcome in
                 (("plan", "planned"), ("validate", "validated"), ("apply", "created"),
                  ("verify", "created"))]
    for name in ("e2e.old1", "e2e.old2"):
        rows += [("local", name, "DELETE", phase, outcome) for phase, outcome in
                 (("plan", "planned"), ("apply", "deleted"), ("verify", "deleted"))]
    rows += [
        ("local", "e2e.drift", "DRIFT", "plan", "drift"),
        ("local", "e2e.same", "NOOP", "plan", "already_present"),
        ("local", "e2e.never", "NOOP", "plan", "already_absent"),
        ("local", "e2e.inuse", "DELETE", "plan", "blocked"),
        ("local", "__consumer_offsets", "DELETE", "plan", "blocked"),
        ("local", "e2e.badconfig", "CREATE", "plan", "planned"),
        ("local", "e2e.badconfig", "CREATE", "validate", "rejected"),
    ]
    rows += [(c, t, "CREATE", "plan", "rejected") for c, t in REJECTED]
    return sorted(rows)


def test_plan_apply_apply(broker: Any, spark: Any, tmp_path: Path,
                          cli: Callable[..., Completed]) -> None:
    warehouse = tmp_path / "wh"
    write_manifest_table(spark, warehouse / "desired_topics", manifest_rows())
    conf = write_conf(tmp_path / "conf.yaml", broker.bootstrap_servers, warehouse)
    before = broker_state(broker.bootstrap_servers)
    assert sorted(before) == sorted(PRE_EXISTING)

    # plan: the broker is untouched, every row is judged
    planned = cli(["plan", "--conf", str(conf), "--json"])
    assert planned.returncode == 1, planned.output[-4000:]
    assert broker_state(broker.bootstrap_servers) == before
    plan_doc = planned.json()
    assert plan_doc["counts"] == {
        "validated": 41, "rejected": 7, "planned": 2, "drift": 1, "blocked": 2,
        "already_present": 1, "already_absent": 1,
    }

    # apply: creates, deletes, and the exact state that results
    applied = cli(["apply", "--conf", str(conf), "--allow-deletes", "--json"])
    assert applied.returncode == 1, applied.output[-4000:]
    run_id = applied.json()["run_id"]
    after = broker_state(broker.bootstrap_servers)
    expected_topics = {name: {"partitions": spec["partitions"], "replication_factor": 1,
                              "configs": spec["configs"]} for name, spec in CREATES.items()}
    expected_topics["e2e.assigned"] = {"partitions": 2, "replication_factor": 1,
                                       "configs": {"cleanup.policy": "compact"}}
    for name in ("e2e.drift", "e2e.same", "e2e.inuse"):
        spec = PRE_EXISTING[name]
        expected_topics[name] = {"partitions": spec["num_partitions"], "replication_factor": 1,
                                 "configs": spec.get("configs", {})}
    assert {n: {k: v for k, v in s.items() if k != "topic_id"} for n, s in after.items()} \
        == expected_topics
    for name in ("e2e.drift", "e2e.same", "e2e.inuse"):
        assert after[name]["topic_id"] == before[name]["topic_id"]

    assert _audit(spark, warehouse, run_id) == _expected_apply_audit()

    # KIP-525: the configs the broker returned are recorded, sensitive values never
    audit = spark.read.format("delta").load(str(warehouse / "topic_audit")) \
        .where(f"run_id = '{run_id}' and topic = 'e2e.t01'").collect()
    by_phase = {r["phase"]: r for r in audit}
    for phase in ("validate", "apply"):
        row = by_phase[phase]
        assert (row["result_partitions"], row["result_replication_factor"]) == (2, 1)
        returned = {c["name"]: c for c in row["result_configs"]}
        assert returned["retention.ms"]["value"] == "7200000"
        assert returned["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
        assert returned["cleanup.policy"]["source"] == "DEFAULT_CONFIG"
        assert all(c["value"] is None for c in row["result_configs"] if c["sensitive"])
        assert row["requested_configs"] == {"retention.ms": "7200000"}
    assert by_phase["apply"]["topic_id"] == after["e2e.t01"]["topic_id"]
    drift_row = spark.read.format("delta").load(str(warehouse / "topic_audit")) \
        .where(f"run_id = '{run_id}' and topic = 'e2e.drift'").collect()[0]
    assert [(d["field"], d["desired"], d["actual"], d["supported"])
            for d in drift_row["drift"]] == [
        ("partitions", "1", "2", False), ("config:retention.ms", None, "1000", False)]
    rejected = spark.read.format("delta").load(str(warehouse / "topic_audit")) \
        .where(f"run_id = '{run_id}' and topic = 'e2e.badconfig' and phase = 'validate'") \
        .collect()[0]
    assert rejected["error_name"] == "INVALID_CONFIG"
    assert "bogus" in rejected["error_message"]

    runs = {r["run_id"]: r for r in
            spark.read.format("delta").load(str(warehouse / "provision_runs")).collect()}
    assert runs[run_id]["status"] == "completed_with_errors"
    assert runs[run_id]["outcome_counts"] == {
        "created": 41, "deleted": 2, "rejected": 7, "drift": 1, "blocked": 2,
        "already_present": 1, "already_absent": 1,
    }

    # a second apply changes nothing and records the created topics as already present
    again = cli(["apply", "--conf", str(conf), "--allow-deletes", "--json"])
    assert again.returncode == 1, again.output[-4000:]
    assert broker_state(broker.bootstrap_servers) == after
    second = _audit(spark, warehouse, again.json()["run_id"])
    expected_second = sorted(
        [("local", n, "NOOP", "plan", "already_present")
         for n in [*CREATES, "e2e.assigned", "e2e.same"]]
        + [("local", n, "NOOP", "plan", "already_absent")
           for n in ("e2e.old1", "e2e.old2", "e2e.never")]
        + [("local", "e2e.drift", "DRIFT", "plan", "drift"),
           ("local", "e2e.inuse", "DELETE", "plan", "blocked"),
           ("local", "__consumer_offsets", "DELETE", "plan", "blocked"),
           ("local", "e2e.badconfig", "CREATE", "plan", "planned"),
           ("local", "e2e.badconfig", "CREATE", "validate", "rejected")]
        + [(c, t, "CREATE", "plan", "rejected") for c, t in REJECTED]
    )
    assert second == expected_second

    # report: one topic's history across both runs, and one run's rows
    history = cli(["report", "--conf", str(conf), "--topic", "e2e.t01", "--json"])
    assert history.returncode == 0, history.output[-3000:]
    steps = [(h["run_id"], h["phase"], h["outcome"], h["source_version"])
             for h in history.json()["history"]]
    second_id = again.json()["run_id"]
    assert steps == [
        (plan_doc["run_id"], "plan", "planned", 0),
        (plan_doc["run_id"], "validate", "validated", 0),
        (run_id, "plan", "planned", 0), (run_id, "validate", "validated", 0),
        (run_id, "apply", "created", 0), (run_id, "verify", "created", 0),
        (second_id, "plan", "already_present", 0),
    ]
    one_run = cli(["report", "--conf", str(conf), "--run-id", run_id, "--json"])
    assert one_run.returncode == 0, one_run.output[-3000:]
    doc = one_run.json()
    assert (doc["run"]["run_id"], doc["run"]["command"], doc["run"]["exit_code"]) == (
        run_id, "apply", 1)
    assert sorted((a["cluster"] or "", a["topic"] or "", a["action"], a["phase"], a["outcome"])
                  for a in doc["audit"]) == _expected_apply_audit()
