"""SIGTERM (an Airflow task timeout) stops a run only at safe points: during the snapshot,
between validate and apply, during the apply of two thousand topics, during the final
commits. Each time: exit 6, every topic the run created has the run's own apply row, what
it never sent is recorded, the lock is given back, and a rerun converges.

The job runs as a Spark Connect client (the signal reaches its Python process, as it does
an Airflow task's); the pauses that hold it at a moment come from tests/support/faults.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient

from tests.helpers import (
    REPO,
    audit_rows,
    broker_state,
    child_env,
    fault_env,
    plan_counts,
    row_count,
    run_cli,
    runs_rows,
    topic_rows,
    write_conf,
    write_manifest_table,
)

pytestmark = [pytest.mark.integration, pytest.mark.e2e]


def _signalled(connect_server: Any, conf: Path, faults: tuple[str, ...],
               when: Callable[[], bool]) -> tuple[int, dict[str, Any], str]:
    """Run apply as a Connect client with `faults`, send SIGTERM once `when()` holds, then let
    any pause go on (the `go` file); the exit code, the JSON document and the output."""
    env = child_env({"PYSPARK_PYTHON": sys.executable, **fault_env(*faults)})
    job = subprocess.Popen(
        [str(REPO / "spark-submit.sh"), "--remote", connect_server.address,
         str(REPO / "jobs" / "provision_topics.py"), "apply", "--conf", str(conf), "--json"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not when() and job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert job.poll() is None, job.communicate(timeout=60)
        job.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        (conf.parent / "go").touch()
        out, err = job.communicate(timeout=600)
    finally:
        if job.poll() is None:
            job.kill()
    return job.returncode, json.loads(out.strip().splitlines()[-1]), out + err


def _check(spark: Any, kafka: Any, warehouse: Path, prefix: str, names: list[str],
           code: int, doc: dict[str, Any], output: str, conf: Path, remote: str,
           locked: bool = True) -> tuple[dict[str, str], list[tuple[str, ...]]]:
    """What every signalled run must show; returns its apply outcome per topic and every
    audit row it wrote (read before the rerun). locked: the run had taken its lock (it
    had planned its changes) when the signal came; it gave the lock back."""
    assert code == 6, output[-4000:]
    assert doc["exit_code"] == 6 and doc["error"].startswith("cancelled by SIGTERM")
    (run_id, run), = runs_rows(spark, warehouse).items()
    assert (run["status"], run["exit_code"], run["message"]) == ("cancelled", 6, doc["error"])
    live = {t for t in broker_state(kafka.bootstrap_servers) if t.startswith(prefix)}
    recorded = (audit_rows(spark, warehouse, run_id)
                if (warehouse / "topic_audit").exists() else [])
    applied = {t: o for _, t, _, phase, o in recorded if phase == "apply"}
    # every topic the run created has its own apply row
    assert live <= {t for t, o in applied.items() if o in ("created", "unknown")}, \
        sorted(live - set(applied))
    locks = warehouse / "provision_runs_locks"
    if locked:
        log = (spark.read.format("delta").load(str(locks))
               .orderBy("_metadata.row_commit_version").collect())
        assert [(r["run_id"], r["event"]) for r in log if r["event"] != "renew"] == [
            (run_id, "claim"), (run_id, "release")]
    else:
        assert row_count(spark, locks) == 0
    # a rerun converges: every topic exists, each created once
    rerun = run_cli(["apply", "--conf", str(conf), "--json"], remote=remote)
    assert rerun.returncode == 0, rerun.output[-3000:]
    assert sorted(t for t in broker_state(kafka.bootstrap_servers)
                  if t.startswith(prefix)) == names
    second = audit_rows(spark, warehouse, rerun.json()["run_id"])
    if live == set(names):
        # Nothing left to do: the rerun records its plan's counts, and no audit row.
        assert second == []
        assert plan_counts(spark, warehouse, rerun.json()["run_id"]) == [
            ("topics", "local", "NOOP", "already_present", len(names))]
    else:
        assert {t for _, t, _, phase, o in second
                if phase == "plan" and o == "already_present"} == live
    return applied, recorded


def _conf(tmp_path: Path, kafka: Any, spark: Any, prefix: str, n: int,
          kafka_settings: dict[str, Any] | None = None) -> tuple[Path, Path, list[str]]:
    warehouse = tmp_path / "wh"
    rows = topic_rows(prefix, n, 4)
    write_manifest_table(spark, warehouse / "desired_topics", rows)
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse,
                      extra={"kafka": {"request_timeout_ms": 15000,
                                       "operation_timeout_ms": 15000, **(kafka_settings or {})}})
    return conf, warehouse, [r["topic"] for r in rows]


def test_a_signal_during_the_snapshot_stops_before_the_plan(
        kafka: Any, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    conf, warehouse, names = _conf(tmp_path, kafka, spark, "sig-snap.", 3)
    waiting = tmp_path / "go.waiting"
    code, doc, output = _signalled(connect_server, conf, (f"pause-in-snapshot:{tmp_path}/go",),
                                   waiting.exists)
    applied, recorded = _check(spark, kafka, warehouse, "sig-snap.", names, code, doc,
                               output, conf, connect_server.address, locked=False)
    assert applied == {}
    assert recorded == []  # no plan was made


def test_a_signal_between_validate_and_apply_sends_nothing_and_records_it(
        kafka: Any, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    conf, warehouse, names = _conf(tmp_path, kafka, spark, "sig-gap.", 3)
    code, doc, output = _signalled(connect_server, conf,
                                   (f"pause-before-changes:{tmp_path}/go",),
                                   (tmp_path / "go.waiting").exists)
    applied, _ = _check(spark, kafka, warehouse, "sig-gap.", names, code, doc, output, conf,
                        connect_server.address)
    assert applied == dict.fromkeys(names, "failed")
    rows = (spark.read.format("delta").load(str(warehouse / "topic_audit"))
            .where(f"run_id = '{doc['run_id']}' AND phase = 'apply'").collect())
    assert {(r["error_name"], r["attempts"]) for r in rows} == {("NOT_SENT", 0)}
    assert {r["error_message"] for r in rows} == {f"not sent: {doc['error']}"}


def test_a_signal_during_an_apply_of_two_thousand_topics_finishes_the_wave_in_flight(
        kafka: Any, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    prefix = "sig-wave."
    conf, warehouse, names = _conf(tmp_path, kafka, spark, prefix, 2000,
                                   {"batch_size": 100, "max_in_flight_requests": 2})
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)

    def some_created() -> bool:
        return any(t.startswith(prefix) for t in admin.list_topics())

    try:
        code, doc, output = _signalled(connect_server, conf, (), some_created)
    finally:
        admin.close()
    live = {t for t in broker_state(kafka.bootstrap_servers) if t.startswith(prefix)}
    applied, _ = _check(spark, kafka, warehouse, prefix, names, code, doc, output, conf,
                        connect_server.address)
    # the waves sent are recorded as the broker answered, the rest as never sent
    assert 0 < len(live) < len(names)
    assert {t for t, o in applied.items() if o == "created"} == live
    assert {t for t, o in applied.items() if o == "failed"} == set(names) - live
    assert len(live) % 200 == 0  # whole waves: batch_size x max_in_flight_requests


def test_a_signal_during_the_final_commits_keeps_everything_the_run_did(
        kafka: Any, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    conf, warehouse, names = _conf(tmp_path, kafka, spark, "sig-end.", 3)
    code, doc, output = _signalled(connect_server, conf, (f"pause-after-phases:{tmp_path}/go",),
                                   (tmp_path / "go.waiting").exists)
    applied, _ = _check(spark, kafka, warehouse, "sig-end.", names, code, doc, output, conf,
                        connect_server.address)
    assert applied == dict.fromkeys(names, "created")
    assert doc["error"] == ("cancelled by SIGTERM as the run ended: everything it did is "
                            "recorded")
    assert audit_rows(spark, warehouse, doc["run_id"]) == sorted(
        ("local", n, "CREATE", phase, outcome) for n in names for phase, outcome in
        (("plan", "planned"), ("validate", "validated"), ("apply", "created"),
         ("verify", "created")))
