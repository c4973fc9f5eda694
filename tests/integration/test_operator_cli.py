"""The operator's loop through spark-submit.sh: read a plan, save it, apply only that plan,
and come back later for a topic's history and the drift across clusters; each command a
thin client of the session's Spark Connect server, on the session's shared broker.

The mode does not matter to this loop (the plan file, its staleness check and the reports
are the driver's own Python); the classic spark-submit path is proved by
test_provision_e2e[classic] (plan, apply, apply again, report), and classic `plan --out`
then `apply --plan` by test_airflow_dag, `report --topic` by test_catalog_tables.

Two cluster names point at the one test broker (`local` and `mirror`): each has its own
manifest rows and its own plan, which is all `report --drift` needs to show drift per
cluster. Every topic of this module starts with `op.`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient

from tests.helpers import broker_state, run_cli, write_conf, write_manifest_table

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

DEFAULTS = ("broker defaults: cleanup.policy=delete, compression.type=producer, "
            "max.message.bytes=1048588, min.insync.replicas=1 [DYNAMIC_DEFAULT_BROKER_CONFIG], "
            "retention.bytes=-1")


def manifest(orders_partitions: int = 3, with_events: bool = True,
             with_new: bool = False) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {"cluster": "local", "topic": "op.orders", "partitions": orders_partitions,
         "replication_factor": 1, "configs": {"retention.ms": "3600000"},
         "owner": "orders-team"},
        # Differences the job does not change in place: an override the row does not list
        # (left alone), fewer partitions than live.
        {"cluster": "local", "topic": "op.drift", "partitions": 2, "replication_factor": 1,
         "configs": {}},
        {"cluster": "mirror", "topic": "op.drift", "partitions": 1, "replication_factor": 1,
         "configs": {"retention.ms": "1000"}},
    ]
    if with_events:
        rows.append({"cluster": "local", "topic": "op.events", "owner": "events-team"})
    if with_new:
        rows.append({"cluster": "local", "topic": "op.new", "partitions": 1})
    return rows


def _state(bootstrap: str) -> dict[str, dict[str, Any]]:
    return {n: s for n, s in broker_state(bootstrap).items() if n.startswith("op.")}


def _unmanaged_lines(bootstrap: str, named: dict[str, set[str]]) -> list[str]:
    """The plan's unmanaged lines, from the broker's own listing: the module shares its
    broker with others, so every cluster name sees their topics as unmanaged."""
    live = set(broker_state(bootstrap))
    return [f"cluster {cluster}: {len(live - topics)} unmanaged topic(s) (live, named by no "
            "manifest row; never changed): report --unmanaged lists them"
            for cluster, topics in sorted(named.items()) if live - topics]


def _audit(spark: Any, warehouse: Path, run_id: str) -> list[tuple[Any, ...]]:
    rows = spark.read.format("delta").load(str(warehouse / "topic_audit")) \
        .where(f"run_id = '{run_id}'").collect()
    return sorted((r["cluster"], r["topic"], r["action"], r["phase"], r["outcome"])
                  for r in rows)


def _runs(spark: Any, warehouse: Path) -> dict[str, tuple[Any, ...]]:
    return {r["run_id"]: (r["command"], r["status"], r["exit_code"]) for r in
            spark.read.format("delta").load(str(warehouse / "provision_runs")).collect()}


def _block(output: str, first: str, last: str) -> list[str]:
    """The lines from the one starting with `first` to the one starting with `last`."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(last))
    return lines[start:end + 1]


def _change(cluster: str, topic: str, action: str, table: str, version: int,
            **cols: Any) -> dict[str, Any]:
    return {"cluster": cluster, "topic": topic, "action": action, "partitions": None,
            "replication_factor": None, "replica_assignment": None, "configs": None,
            "owner": None, "force": None, "drift": [], "violations": [], "row_errors": [],
            "live_topic_id": None, "live_error": None, "source_table": table,
            "source_version": version, **cols}


def test_plan_save_stale_apply_fresh_apply_history_and_drift(
        kafka: Any, connect_server: Any, spark: Any, tmp_path: Path) -> None:
    cli = functools.partial(run_cli, remote=connect_server.address)
    bootstrap = kafka.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics({"op.drift": {"num_partitions": 2, "replication_factor": 1,
                                          "configs": {"retention.ms": "1000"}}},
                            raise_errors=True, wait_for_metadata=True)
    finally:
        admin.close()
    before = _state(bootstrap)
    drift_id = before["op.drift"]["topic_id"]

    warehouse = tmp_path / "wh"
    table = str(warehouse / "desired_topics")
    write_manifest_table(spark, warehouse / "desired_topics", manifest())
    conf = write_conf(tmp_path / "conf.yaml", bootstrap, warehouse, extra={"clusters": {
        "local": {"bootstrap_servers": bootstrap},
        "mirror": {"bootstrap_servers": bootstrap}}})
    conf_digest = hashlib.sha256(conf.read_bytes()).hexdigest()
    saved = tmp_path / "plans" / "first.json"

    # 1. plan --out: a human summary, a saved plan, the broker untouched.
    planned = cli(["plan", "--conf", str(conf), "--out", str(saved)])
    assert planned.returncode == 0, planned.output[-4000:]
    assert _state(bootstrap) == before
    doc = json.loads(saved.read_text())
    plan_id = doc["meta"]["run_id"]
    assert _block(planned.output, "plan ", "plan saved to ") == [
        f"plan {plan_id}",
        "",
        "cluster local: 2 to create, 1 drifted",
        "cluster mirror: 1 drifted",
        "",
        "  ~ local/op.drift  drift  drift (reported, never changed by this job)",
        "      config retention.ms: 1000 -> (not set) (left alone: not listed in the manifest "
        "row)",
        f"      topic id {drift_id}",
        "  + local/op.events  create  validated by the broker (validateOnly)",
        "      partitions 1 (broker default), replication factor 1 (broker default)",
        f"      {DEFAULTS}, retention.ms=604800000",
        "  + local/op.orders  create  validated by the broker (validateOnly)",
        "      partitions 3, replication factor 1",
        "      configs: retention.ms=3600000",
        f"      {DEFAULTS}",
        "",
        "  ~ mirror/op.drift  drift  drift (reported, never changed by this job)",
        "      partitions: 2 -> 1 (not supported: needs a new topic)",
        f"      topic id {drift_id}",
        "",
        *_unmanaged_lines(bootstrap, {"local": {"op.drift", "op.events", "op.orders"},
                                      "mirror": {"op.drift"}}),
        "outcomes: drift=2, validated=2",
        f"plan saved to {saved} (digest {doc['digest'][:12]}); apply exactly this plan "
        f"with: apply --plan {saved}",
    ]
    # progress: one line per phase with the counts per outcome (per cluster for the snapshot)
    assert re.search(r"phase plan: 4 topic\(s\) in [0-9.]+s, [0-9.]+ topics/s; drift=2, "
                     r"planned=2\n", planned.output), planned.output[-4000:]
    assert re.search(r"phase validate: 2 topic\(s\) in [0-9.]+s, [0-9.]+ topics/s; "
                     r"validated=2\n", planned.output), planned.output[-4000:]
    assert re.search(r"phase snapshot: \d+ topic\(s\) in [0-9.]+s, [0-9.]+ topics/s; "
                     r"local=\d+, mirror=\d+\n", planned.output), planned.output[-4000:]

    drift_local = [{"field": "config:retention.ms", "desired": None, "actual": "1000",
                    "supported": False}]
    drift_mirror = [{"field": "partitions", "desired": "1", "actual": "2",
                     "supported": False}]
    assert doc["format"] == "topic-provisioning-plan/1"
    assert doc["plan"] == {
        "conf_digest": conf_digest,
        "scope": {"clusters": ["local", "mirror"], "topics": None},
        "changes": [
            _change("local", "op.drift", "DRIFT", table, 0, partitions=2,
                    replication_factor=1, configs={},
                    drift=drift_local, live_topic_id=drift_id),
            _change("local", "op.events", "CREATE", table, 0, owner="events-team"),
            _change("local", "op.orders", "CREATE", table, 0, partitions=3,
                    replication_factor=1, configs={"retention.ms": "3600000"},
                    owner="orders-team"),
            _change("mirror", "op.drift", "DRIFT", table, 0, partitions=1,
                    replication_factor=1, configs={"retention.ms": "1000"},
                    drift=drift_mirror, live_topic_id=drift_id),
        ],
        "needs": [{"kind": "topics", "action": "CREATE", "flags": [], "changes": 2}],
    }
    assert {k: v for k, v in doc["meta"].items() if k != "created_at"} == {
        "run_id": plan_id, "command": "plan", "conf": str(conf),
        "counts": {"drift": 2, "validated": 2}, "exit_code": 0}

    # 2. The manifest changes after the review: apply --plan refuses before any request.
    write_manifest_table(spark, warehouse / "desired_topics",
                         manifest(orders_partitions=4, with_events=False, with_new=True))
    stale = cli(["apply", "--conf", str(conf), "--plan", str(saved), "--json"])
    assert stale.returncode == 2, stale.output[-4000:]
    assert _state(bootstrap) == before
    refusal = stale.json()
    stale_id = refusal["run_id"]
    assert refusal["plan_diff"] == {
        "conf_digest": None,
        "scope": None,
        "added": [{"cluster": "local", "topic": "op.new", "action": "CREATE"}],
        "removed": [{"cluster": "local", "topic": "op.events", "action": "CREATE"}],
        "changed": [
            {"cluster": "local", "topic": "op.drift",
             "differences": ["source_version: 0 -> 1"]},
            {"cluster": "local", "topic": "op.orders",
             "differences": ["partitions: 3 -> 4", "source_version: 0 -> 1"]},
            {"cluster": "mirror", "topic": "op.drift",
             "differences": ["source_version: 0 -> 1"]},
        ],
    }
    assert (refusal["reason"], refusal["plan_file"], refusal["exit_code"]) == (
        "stale_plan", str(saved), 2)
    assert (f"error: the saved plan {saved} is stale: a fresh plan differs from it, so "
            "nothing was validated or applied.") in stale.output
    assert "  + local/op.new CREATE: in the fresh plan, not in the saved one\n" in stale.output
    assert ("  ~ local/op.orders: partitions: 3 -> 4; source_version: 0 -> 1\n"
            in stale.output)
    assert "  1 added, 1 removed, 3 changed\n" in stale.output
    # The fresh plan was recorded; nothing was validated, applied or verified.
    assert _audit(spark, warehouse, stale_id) == [
        ("local", "op.drift", "DRIFT", "plan", "drift"),
        ("local", "op.new", "CREATE", "plan", "planned"),
        ("local", "op.orders", "CREATE", "plan", "planned"),
        ("mirror", "op.drift", "DRIFT", "plan", "drift"),
    ]

    # 3. A new plan of the current manifest applies, and only what it says.
    write_manifest_table(spark, warehouse / "desired_topics", manifest())
    fresh = tmp_path / "plans" / "second.json"
    replanned = cli(["plan", "--conf", str(conf), "--out", str(fresh), "--json"])
    assert replanned.returncode == 0, replanned.output[-4000:]
    second_plan_id = replanned.json()["run_id"]
    assert replanned.json()["plan_file"] == {"path": str(fresh),
                                             "digest": json.loads(fresh.read_text())["digest"]}
    applied = cli(["apply", "--conf", str(conf), "--plan", str(fresh), "--json"])
    assert applied.returncode == 0, applied.output[-4000:]
    apply_id = applied.json()["run_id"]
    after = _state(bootstrap)
    assert {n: {k: v for k, v in s.items() if k != "topic_id"} for n, s in after.items()} == {
        "op.drift": {"partitions": 2, "replication_factor": 1,
                     "configs": {"retention.ms": "1000"}},
        "op.events": {"partitions": 1, "replication_factor": 1, "configs": {}},
        "op.orders": {"partitions": 3, "replication_factor": 1,
                      "configs": {"retention.ms": "3600000"}},
    }
    assert after["op.drift"]["topic_id"] == drift_id
    assert _audit(spark, warehouse, apply_id) == sorted(
        [("local", t, "CREATE", phase, outcome) for t in ("op.events", "op.orders")
         for phase, outcome in (("plan", "planned"), ("validate", "validated"),
                                ("apply", "created"), ("verify", "created"))]
        + [("local", "op.drift", "DRIFT", "plan", "drift"),
           ("mirror", "op.drift", "DRIFT", "plan", "drift")])
    runs = _runs(spark, warehouse)
    assert {k: runs[k] for k in (plan_id, stale_id, second_plan_id, apply_id)} == {
        plan_id: ("plan", "succeeded", 0),
        stale_id: ("apply", "failed", 2),
        second_plan_id: ("plan", "succeeded", 0),
        apply_id: ("apply", "succeeded", 0),
    }

    # 4. Months later: who asked for op.orders, with which configs? The manifest rows
    # come from Delta time travel: version 1 asked for 4 partitions, the table now says 3.
    history = cli(["report", "--conf", str(conf), "--topic", "op.orders", "--json"])
    assert history.returncode == 0, history.output[-4000:]
    story = history.json()
    assert [(h["run_id"], h["run_command"], h["phase"], h["outcome"], h["source_version"],
             h["requested_partitions"]) for h in story["history"]] == [
        (plan_id, "plan", "plan", "planned", 0, 3),
        (plan_id, "plan", "validate", "validated", 0, 3),
        (stale_id, "apply", "plan", "planned", 1, 4),
        (second_plan_id, "plan", "plan", "planned", 2, 3),
        (second_plan_id, "plan", "validate", "validated", 2, 3),
        (apply_id, "apply", "plan", "planned", 2, 3),
        (apply_id, "apply", "validate", "validated", 2, 3),
        (apply_id, "apply", "apply", "created", 2, 3),
        (apply_id, "apply", "verify", "created", 2, 3),
    ]
    created = story["history"][7]
    assert (created["topic_id"], created["owner"], created["requested_configs"]) == (
        after["op.orders"]["topic_id"], "orders-team", {"retention.ms": "3600000"})
    returned = {c["name"]: (c["value"], c["source"]) for c in created["result_configs"]}
    assert returned["retention.ms"] == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert returned["cleanup.policy"] == ("delete", "DEFAULT_CONFIG")
    row = {"cluster": "local", "topic": "op.orders", "state": None, "replication_factor": 1,
           "replica_assignment": None, "configs": {"retention.ms": "3600000"},
           "owner": "orders-team", "force": None}
    assert story["manifest_versions"] == [
        {"source_table": table, "source_version": 0, "error": None,
         "rows": [{**row, "partitions": 3}]},
        {"source_table": table, "source_version": 1, "error": None,
         "rows": [{**row, "partitions": 4}]},
        {"source_table": table, "source_version": 2, "error": None,
         "rows": [{**row, "partitions": 3}]},
    ]

    # 5. Drift across clusters: each topic's latest plan, grouped per cluster.
    drift = cli(["report", "--conf", str(conf), "--drift"])
    assert drift.returncode == 0, drift.output[-4000:]
    assert _block(drift.output, "drift across clusters", "      partitions: 2 -> 1") == [
        "drift across clusters (each topic's latest plan)",
        "cluster local: 1 topic(s) drifted",
        f"  ~ op.drift  (run {apply_id} at {_recorded_at(spark, warehouse, apply_id)}, "
        "owner (none))",
        "      config retention.ms: 1000 -> (not set) (left alone: not listed in the manifest "
        "row)",
        "cluster mirror: 1 topic(s) drifted",
        f"  ~ op.drift  (run {apply_id} at {_recorded_at(spark, warehouse, apply_id)}, "
        "owner (none))",
        "      partitions: 2 -> 1 (not supported: needs a new topic)",
    ]


def _recorded_at(spark: Any, warehouse: Path, run_id: str) -> str:
    """When the run's plan phase was recorded, as the report prints it."""
    rows = spark.read.format("delta").load(str(warehouse / "topic_audit")) \
        .where(f"run_id = '{run_id}' and phase = 'plan'").select("recorded_at").distinct() \
        .collect()
    assert len(rows) == 1
    return str(rows[0]["recorded_at"])
