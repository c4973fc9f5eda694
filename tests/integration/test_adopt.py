"""Adopting a cluster through spark-submit.sh: `import` writes the live topics as a
manifest, a plan over it is all NOOP, and the topics no manifest names are reported.

Each command is a thin client of the session's Spark Connect server: the mode does not
matter to this flow (classic `import` is run by test_open_tables[classic], classic `plan`
by test_provision_e2e[classic])."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from tests.helpers import (
    audit_rows,
    broker_state,
    plan_counts,
    run_cli,
    runs_rows,
    write_conf,
    write_manifest_table,
)

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

# Topics of several shapes, created behind the job's back.
TOPICS = {
    "adopt.orders": {"num_partitions": 3, "replication_factor": 1,
                     "configs": {"retention.ms": "3600000", "max.message.bytes": "2097152"}},
    "adopt.ledger": {"num_partitions": 1, "replication_factor": 1,
                     "configs": {"cleanup.policy": "compact"}},
    "adopt.plain": {"num_partitions": 2, "replication_factor": 1},
    # An override equal to the broker's default is still the topic's own setting.
    "adopt.default-equal": {"num_partitions": 1, "replication_factor": 1,
                            "configs": {"retention.ms": "604800000"}},
    # Already named by a manifest: not imported twice.
    "adopt.managed": {"num_partitions": 1, "replication_factor": 1},
    # Protected by the conf's delete settings: left out of the import, so unmanaged.
    "adopt.keep.audit": {"num_partitions": 2, "replication_factor": 1,
                         "configs": {"retention.ms": "-1"}},
}


def _create(bootstrap: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics(TOPICS, raise_errors=True, wait_for_metadata=True)
    finally:
        admin.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="adopt-auditors",
                             enable_auto_commit=False)
    consumer.commit({TopicPartition("adopt.keep.audit", 0): OffsetAndMetadata(0, "", -1)})
    consumer.close()


def test_import_round_trip_unmanaged_and_markdown(kafka: Any, connect_server: Any,
                                                  spark: Any, tmp_path: Path) -> None:
    cli = functools.partial(run_cli, remote=connect_server.address)
    _create(kafka.bootstrap_servers)
    wh = tmp_path / "wh"
    managed, imported = wh / "team_topics", wh / "imported"
    write_manifest_table(spark, managed, [
        {"cluster": "local", "topic": "adopt.managed", "state": "present", "partitions": 1,
         "replication_factor": 1, "configs": {}}])
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, wh,
                      manifests=[managed, imported],
                      extra={"deletes": {"protected": ["adopt.keep.*"]}})
    before = broker_state(kafka.bootstrap_servers)

    done = cli(["import", "--conf", str(conf), "--table", str(imported),
                "--topics", "adopt.*", "--owner", "platform", "--json"])
    assert done.returncode == 0, done.output[-3000:]
    report = done.json()
    assert report == {"command": "import", "exit_code": 0,
                      "run_id": report["run_id"], "table": str(imported), "table_version": 0,
                      "clusters": [{"cluster": "local", "rows_written": 4,
                                    "left_out_managed": 1, "left_out_protected": 1,
                                    "left_out_undescribable": 0}]}
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(str(imported)).collect())
    assert [(r[0], r[1], r[2], r[3], r[4], r[5], dict(r[6]), r[7], r[8]) for r in rows] == [
        ("local", "adopt.default-equal", "present", 1, 1, None, {"retention.ms": "604800000"},
         "platform", None),
        ("local", "adopt.ledger", "present", 1, 1, None, {"cleanup.policy": "compact"},
         "platform", None),
        ("local", "adopt.orders", "present", 3, 1, None,
         {"max.message.bytes": "2097152", "retention.ms": "3600000"}, "platform", None),
        ("local", "adopt.plain", "present", 2, 1, None, {}, "platform", None),
    ]
    run = runs_rows(spark, wh)[report["run_id"]]
    assert (run["command"], run["status"], run["exit_code"], dict(run["outcome_counts"])) == (
        "import", "succeeded", 0, {"rows_written": 4, "table_version": 0})

    # A second import into the same table is refused before any cluster is read.
    again = cli(["import", "--conf", str(conf), "--table", str(imported),
                 "--topics", "adopt.*"])
    assert again.returncode == 2
    assert (f"error: table {imported} exists: import writes a new table unless given "
            "--mode append or --mode overwrite") in again.output

    # The round trip: every imported topic (and the managed one) plans as NOOP.
    planned = cli(["plan", "--conf", str(conf), "--topics", "adopt.*", "--json"])
    assert planned.returncode == 0, planned.output[-3000:]
    plan = planned.json()
    assert (plan["counts"], plan["actions"], plan["topics"], plan["unmanaged"]) == (
        {"already_present": 5}, [{"cluster": "local", "action": "NOOP", "topics": 5}], [],
        {"local": 1})
    # A plan that changes nothing records its counts in its runs row, no audit row.
    assert audit_rows(spark, wh, plan["run_id"]) == []
    assert plan_counts(spark, wh, plan["run_id"]) == [
        ("topics", "local", "NOOP", "already_present", 5)]

    unmanaged = cli(["report", "--conf", str(conf), "--unmanaged", "--topics", "adopt.*",
                     "--json"])
    assert unmanaged.returncode == 0, unmanaged.output[-3000:]
    listed = unmanaged.json()["unmanaged"]
    assert [(b["cluster"], [(t["topic"], t["partitions"], t["replication_factor"],
                             t["overrides"], t["consumer_groups"], t["run_id"])
                            for t in b["topics"]]) for b in listed] == [
        ("local", [("adopt.keep.audit", 2, 1, {"retention.ms": "-1"}, ["adopt-auditors"],
                    plan["run_id"])])]

    text = cli(["plan", "--conf", str(conf), "--topics", "adopt.*",
                "--format", "markdown"])
    assert text.returncode == 0, text.output[-3000:]
    assert ("| cluster | create | delete | alter | drift | unchanged | unmanaged |\n"
            "|---|---:|---:|---:|---:|---:|---:|\n"
            "| `local` | 0 | 0 | 0 | 0 | 5 | 1 |\n") in text.stdout
    assert "**Outcomes:** already_present 5\n" in text.stdout

    # Nothing on the broker changed.
    assert broker_state(kafka.bootstrap_servers) == before
