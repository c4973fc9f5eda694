"""Every outcome true under partial failure, against a real broker and real Spark processes:

- an error on this side after a request that may have changed Kafka never records the
  topic `failed`: it is `unknown`, and verify settles it;
- a Spark task that dies (its Python worker killed, in local mode where a task is not
  retried) loses no row: what it was sending is `unknown`, verify settles it, a rerun
  converges;
- a lease lost in the middle of an apply stops it between waves: what was sent is recorded
  and verified, what was not is `failed` LOCK_LOST, exit 4.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient

from tests.helpers import (
    audit_rows,
    broker_state,
    fault_env,
    plan_counts,
    run_cli,
    runs_rows,
    topic_rows,
    write_conf,
    write_manifest_table,
)

pytestmark = [pytest.mark.integration, pytest.mark.e2e]


def _audit(spark: Any, warehouse: Path, run_id: str, phase: str
           ) -> dict[str, tuple[Any, ...]]:
    rows = (spark.read.format("delta").load(str(warehouse / "topic_audit"))
            .where(f"run_id = '{run_id}' AND phase = '{phase}'").collect())
    return {r["topic"]: (r["outcome"], r["error_name"], r["attempts"], r["error_message"])
            for r in rows}


def _in_background(args: list[str], env: dict[str, str]) -> tuple[threading.Thread,
                                                                      dict[str, Any]]:
    finished: dict[str, Any] = {}
    job = threading.Thread(target=lambda: finished.update(done=run_cli(args, env=env)))
    job.start()
    return job, finished


def _wait_for(path: Path, job: threading.Thread, finished: dict[str, Any]) -> None:
    deadline = time.monotonic() + 300
    while not path.exists() and job.is_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    ended = finished.get("done")
    assert path.exists(), ("the run never reached its pause"
                           + (f": {ended.output[-4000:]}" if ended is not None else ""))


def test_a_client_error_after_a_create_never_records_a_created_topic_failed(
        kafka: Any, spark: Any, tmp_path: Path) -> None:
    """A topic appears behind the job's back after the snapshot, so the broker answers its
    create TOPIC_ALREADY_EXISTS; describing it to compare loses its connection."""
    warehouse = tmp_path / "wh"
    write_manifest_table(spark, warehouse / "desired_topics", topic_rows("pf-describe.", 3))
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse)
    go = tmp_path / "go"
    job, finished = _in_background(
        ["apply", "--conf", str(conf), "--json"],
        fault_env(f"pause-before-changes:{go}", "describe-fails-after-create"))
    _wait_for(Path(f"{go}.waiting"), job, finished)
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        admin.create_topics({"pf-describe.1": {"num_partitions": 1, "replication_factor": 1}},
                            raise_errors=True, wait_for_metadata=True)
    finally:
        admin.close()
    go.touch()
    job.join(600)
    done = finished["done"]
    assert done.returncode == 0, done.output[-4000:]
    run_id = done.json()["run_id"]
    applied = _audit(spark, warehouse, run_id, "apply")
    assert {t: row[:3] for t, row in applied.items()} == {
        "pf-describe.0": ("created", "NONE", 1),
        "pf-describe.1": ("unknown", "KafkaConnectionError", 1),
        "pf-describe.2": ("created", "NONE", 1)}
    assert applied["pf-describe.1"][3] == ("the broker says the topic exists; describing it to "
                                           "compare failed: KafkaConnectionError: injected fault: "
                                           "connection lost")
    verified = _audit(spark, warehouse, run_id, "verify")
    assert {t: row[0] for t, row in verified.items()} == dict.fromkeys(
        ["pf-describe.0", "pf-describe.1", "pf-describe.2"], "created")


def test_a_task_that_dies_loses_no_row_and_a_rerun_converges(
        kafka: Any, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    """The Python worker sending the creates is killed after each answered request: in local
    mode (the default master) a task is not retried, so each wave's Spark job fails at once.
    Waves of one topic (batch 1, one in flight): every wave creates its topic and dies."""
    warehouse = tmp_path / "wh"
    names = [f"pf-dies.{i}" for i in range(4)]
    write_manifest_table(spark, warehouse / "desired_topics", topic_rows("pf-dies.", 4))
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse,
                      extra={"kafka": {"batch_size": 1, "max_in_flight_requests": 1,
                                       "verify_timeout_ms": 3000}})
    died = run_cli(["apply", "--conf", str(conf), "--json"],
                   env=fault_env("kill-worker-after:create_topics"))
    assert died.returncode == 0, died.output[-4000:]
    run_id = died.json()["run_id"]
    # every wave's request was answered before its worker died, and the next wave went on
    assert sorted(t for t in broker_state(kafka.bootstrap_servers)
                  if t.startswith("pf-dies.")) == names
    applied = _audit(spark, warehouse, run_id, "apply")
    assert {t: (row[0], row[2]) for t, row in applied.items()} == {
        n: ("unknown", 1) for n in names}
    assert all(row[3].startswith("the Spark job sending this request failed, its answers "
                                 "lost with it: ") for row in applied.values())
    verified = _audit(spark, warehouse, run_id, "verify")
    assert {t: row[0] for t, row in verified.items()} == dict.fromkeys(names, "created")
    rerun = run_cli(["apply", "--conf", str(conf), "--json"], remote=connect_server.address)
    assert rerun.returncode == 0, rerun.output[-3000:]
    assert audit_rows(spark, warehouse, rerun.json()["run_id"]) == []
    assert plan_counts(spark, warehouse, rerun.json()["run_id"]) == [
        ("topics", "local", "NOOP", "already_present", len(names))]


def test_a_lease_lost_mid_apply_stops_between_waves(kafka: Any, spark: Any,
                                                    connect_server: Any, tmp_path: Path
                                                    ) -> None:
    from provisioning.delta.lock import RunLock
    from provisioning.processes import ProcessIdentity

    warehouse = tmp_path / "wh"
    names = [f"pf-lease.{i}" for i in range(4)]
    write_manifest_table(spark, warehouse / "desired_topics", topic_rows("pf-lease.", 4))
    # waves of one topic; a lease that lives 24 s, renewed every 8 s
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse,
                      extra={"kafka": {"batch_size": 1, "max_in_flight_requests": 1},
                             "run": {"lock_ttl_seconds": 24}})
    go = tmp_path / "go"
    finished: dict[str, Any] = {}
    job = threading.Thread(target=lambda: finished.update(done=run_cli(
        ["apply", "--conf", str(conf), "--json"], env=fault_env(f"pause-between-waves:{go}"),
        remote=connect_server.address)))
    job.start()
    _wait_for(Path(f"{go}.waiting"), job, finished)
    locks = warehouse / "provision_runs_locks"
    (victim,) = {r["run_id"] for r in spark.read.format("delta").load(str(locks)).collect()}
    usurper = RunLock(spark, str(locks), ["local"], "20990101T000000Z-usurper", "apply", 600)
    usurper.me = ProcessIdentity("elsewhere", None, None, 1, None)
    usurper._append("claim", {"local": victim})
    usurped = time.time()
    # the victim's next heartbeat appends its renewal, then reads the log back
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (
            spark.read.format("delta").load(str(locks))
            .where(f"run_id = '{victim}' AND event = 'renew' "
                   f"AND written_epoch >= {int(usurped)}").count()):
        time.sleep(1)
    time.sleep(10)
    go.touch()
    job.join(600)

    done = finished["done"]
    assert done.returncode == 4, done.output[-4000:]
    doc = done.json()
    assert doc["error"].startswith("lock lost: taken over: another run holds the lock: "
                                   "cluster local is locked by apply run "
                                   "20990101T000000Z-usurper")
    assert sorted(t for t in broker_state(kafka.bootstrap_servers)
                  if t.startswith("pf-lease.")) == ["pf-lease.0"]
    run_id = doc["run_id"]
    applied = _audit(spark, warehouse, run_id, "apply")
    assert {t: row[:3] for t, row in applied.items()} == {
        "pf-lease.0": ("created", "NONE", 1),
        **{n: ("failed", "LOCK_LOST", 0) for n in names[1:]}}
    assert {t: row[0] for t, row in _audit(spark, warehouse, run_id, "verify").items()} == {
        "pf-lease.0": "created"}
    ((_, run),) = runs_rows(spark, warehouse).items()
    assert (run["status"], run["exit_code"]) == ("failed", 4)
