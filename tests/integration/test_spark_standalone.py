"""The job, unchanged, on a real Spark standalone cluster whose executors share nothing with the
driver: a master and two workers on loopback, the executors on a bare Python.

The master and workers are the pyspark distribution's own daemons
(`bin/spark-class org.apache.spark.deploy.master.Master` / `...worker.Worker`),
started on free loopback ports with small memory. The executors run a Python that has
only `pyspark[connect]`'s packages (`.cache/connect/venv`: no kafka-python, nothing of
this project), chosen with `--conf spark.pyspark.python`, as a cluster's own Python would
be; the driver stays in the project's venv. The job ships what the executors import. The
job is submitted with `./spark-submit.sh --master spark://127.0.0.1:PORT` and the cached
Delta jars (`--delta-jars`: no Maven repository needed).

One apply covers two clusters, the session's plain broker and its mTLS broker, whose
client certificate and key reach the executors in memory only. The test checks both
brokers' exact state, the run's exact audit rows, one audit commit per phase, and, from
Spark's event log and the workers' directories, that every admin task (validateOnly,
create, verify) ran in an executor a worker launched and that no TLS file or secret is in
an executor's directory or the event log. An executor Python without pyarrow is refused
before anything is read, naming what is missing. (`plan` changes nothing on any launcher:
test_provision_e2e, test_security, test_mtls; each submit here starts a driver and two
executors, so the apply is the one run whose admin tasks the workers' executors run.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient

from tests.helpers import (
    QUICK_JIT,
    audit_rows,
    broker_state,
    row_count,
    run_cli,
    write_conf,
    write_manifest_table,
)
from tests.support.brokers import reset

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]
DELTA_JARS = REPO / ".cache" / "jars" / "delta"
# A Python with pyspark[connect]'s packages only (make connect-venv): a cluster's Python.
BARE_PYTHON = REPO / ".cache" / "connect" / "venv" / "bin" / "python"
WORKERS = 2  # the session's standalone cluster (tests/support/standalone.py)

CREATES = {
    "sa.orders": {"partitions": 3, "replication_factor": 1,
                  "configs": {"retention.ms": "3600000"}},
    "sa.ledger": {"partitions": 1, "replication_factor": 1,
                  "configs": {"cleanup.policy": "compact"}},
    "sa.clicks": {"partitions": 4, "replication_factor": 1, "configs": {}},
    "sa.audit": {"partitions": 2, "replication_factor": 1,
                 "configs": {"retention.ms": "86400000", "cleanup.policy": "delete"}},
}
EXISTING = {"sa.same": {"num_partitions": 2, "replication_factor": 1,
                        "configs": {"cleanup.policy": "compact"}}}
# The operation tags (job_label) of the admin phases; a tag has no commas.
ADMIN_JOBS = ("validateOnly CreateTopics", "apply: CreateTopics; DeleteTopics", "verify leaders")


@pytest.fixture(scope="module")
def broker(kafka: Any) -> Iterator[Any]:
    """The session's plain broker, emptied first (brokers.reset): the state asserted is the
    whole broker's."""
    reset(kafka)
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    admin.create_topics(EXISTING, raise_errors=True, wait_for_metadata=True)
    admin.close()
    yield kafka
    reset(kafka)


def _events(directory: Path) -> list[dict[str, Any]]:
    """Every event of the one application logged under `directory` (rolled files in order)."""
    files = sorted((p for p in directory.rglob("events_*") if not p.name.endswith(".crc")),
                   key=lambda p: int(p.name.split("_")[1]))
    assert files, list(directory.rglob("*"))
    return [json.loads(line) for f in files for line in f.read_text().splitlines()
            if line.strip()]


def _admin_task_executors(events: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Admin job tag -> executor ids that ran the tasks of that admin job's stages."""
    stages: dict[int, str] = {}
    for e in events:
        if e["Event"] == "SparkListenerJobStart":
            text = (e.get("Properties") or {}).get("spark.job.tags") or ""
            for marker in ADMIN_JOBS:
                if marker in text:
                    for stage in e["Stage IDs"]:
                        stages[stage] = marker
    ran: dict[str, set[str]] = {}
    for e in events:
        if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] in stages:
            ran.setdefault(stages[e["Stage ID"]], set()).add(e["Task Info"]["Executor ID"])
    return ran


def _submit(standalone: Any, python: Path, args: list[str],
            extra: tuple[str, ...] = (), cwd: Path | None = None) -> Any:
    """The job through spark-submit.sh on the standalone cluster, its executors on `python`."""
    return run_cli(args, cwd=cwd, spark_args=[
        "--master", standalone.url, "--delta-jars", str(DELTA_JARS),
        "--executor-memory", "512m", "--total-executor-cores", str(WORKERS),
        "--conf", f"spark.pyspark.python={python}", "--conf", "spark.ui.enabled=false",
        "--conf", f"spark.executor.extraJavaOptions={QUICK_JIT}", *extra])


def _python_without_pyarrow(base: Path) -> Path:
    """A virtualenv whose only packages are pyspark and py4j (linked from the bare one)."""
    venv = base / "no-pyarrow"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    source = BARE_PYTHON.parents[1] / "lib" / "python3.11" / "site-packages"
    target = venv / "lib" / "python3.11" / "site-packages"
    for package in ("pyspark", "py4j"):
        (target / package).symlink_to(source / package)
    return venv / "bin" / "python"


MTLS_SUBJECT = "/O=platform/CN=provisioning-standalone"
MTLS_TOPICS = {"sa.mtls.orders": 2, "sa.mtls.audit": 1}
MTLS_KEY_PASSWORD = "standalone-key-pw-3c8d"


def test_apply_over_a_plain_and_an_mtls_cluster_with_executors_on_a_bare_python(
        standalone: Any, broker: Any, mtls_kafka: Any, spark: Any, tmp_path: Path) -> None:
    """One apply over two clusters: the session's plain broker (`local`) and its mTLS broker
    (`secure`). The client certificate, its encrypted key and the key's password reach the
    executors in memory: the conf names them by paths relative to the driver's directory,
    which no executor's directory has, and nothing of them is in Spark's event log."""
    from tests.helpers import broker_state_as, grant
    from tests.support.secured import ClientCertificate

    assert subprocess.run([str(BARE_PYTHON), "-c", "import kafka"],
                          capture_output=True).returncode != 0  # it really lacks kafka-python
    assert subprocess.run([str(BARE_PYTHON), "-c", "import tenacity"],
                          capture_output=True).returncode != 0  # and the retry layer's tenacity
    tls = tmp_path / "tls"
    cert = ClientCertificate.create(mtls_kafka.tls, tls, "job", MTLS_SUBJECT,
                                    key_password=MTLS_KEY_PASSWORD)
    (tls / "ca.pem").write_text(mtls_kafka.tls.ca_file.read_text())
    (tls / "key-password").write_text(MTLS_KEY_PASSWORD + "\n")
    grant(mtls_kafka.admin_settings(), cert.principal, [
        ("TOPIC", "sa.mtls.", "PREFIXED", ["CREATE", "DESCRIBE", "DESCRIBE_CONFIGS"]),
        ("GROUP", "*", "LITERAL", ["DESCRIBE"])])
    warehouse = tmp_path / "wh"
    rows = [{"cluster": "local", "topic": name, "owner": "team-s", **spec}
            for name, spec in CREATES.items()]
    rows.append({"cluster": "local", "topic": "sa.same", "partitions": 2,
                 "replication_factor": 1, "configs": {"cleanup.policy": "compact"}})
    rows += [{"cluster": "secure", "topic": name, "partitions": n, "replication_factor": 1}
             for name, n in MTLS_TOPICS.items()]
    write_manifest_table(spark, warehouse / "desired_topics", rows)
    conf = write_conf(tmp_path / "conf.yaml", broker.bootstrap_servers, warehouse, extra={
        "clusters": {
            "local": {"bootstrap_servers": broker.bootstrap_servers},
            "secure": {"bootstrap_servers": mtls_kafka.bootstrap_servers,
                       "security_protocol": "SSL", "ssl_cafile": "tls/ca.pem",
                       "ssl_certfile": "tls/job.crt", "ssl_keyfile": "tls/job.key",
                       "ssl_key_password_file": "tls/key-password"}}})
    events = tmp_path / "events"
    events.mkdir()
    before = broker_state(broker.bootstrap_servers)

    done = _submit(standalone, BARE_PYTHON, ["apply", "--conf", str(conf), "--json"],
                   cwd=tmp_path, extra=(
                       "--conf", "spark.eventLog.enabled=true",
                       "--conf", f"spark.eventLog.dir={events}",
                       "--conf", "spark.eventLog.compress=false"))
    assert done.returncode == 0, done.output[-6000:] + standalone.logs()
    run_id = done.json()["run_id"]

    # the brokers: exactly the manifest, the existing topic untouched
    after = broker_state(broker.bootstrap_servers)
    assert {n: {k: v for k, v in s.items() if k != "topic_id"} for n, s in after.items()} == {
        **{n: {"partitions": s["partitions"], "replication_factor": 1, "configs": s["configs"]}
           for n, s in CREATES.items()},
        "sa.same": {"partitions": 2, "replication_factor": 1,
                    "configs": {"cleanup.policy": "compact"}},
    }
    assert after["sa.same"]["topic_id"] == before["sa.same"]["topic_id"]
    secured = broker_state_as(mtls_kafka.admin_settings())
    assert {n: (s["partitions"], s["replication_factor"]) for n, s in secured.items()
            if n.startswith("sa.mtls.")} == {n: (p, 1) for n, p in MTLS_TOPICS.items()}

    # the audit: every phase of every topic of both clusters, exactly
    phases = (("plan", "planned"), ("validate", "validated"), ("apply", "created"),
              ("verify", "created"))
    expected = [(cluster, name, "CREATE", phase, outcome)
                for cluster, names in (("local", CREATES), ("secure", MTLS_TOPICS))
                for name in names for phase, outcome in phases]
    expected.append(("local", "sa.same", "NOOP", "plan", "already_present"))
    assert audit_rows(spark, warehouse, run_id) == sorted(expected)
    created = {r["topic"]: (r["topic_id"], r["result_partitions"])
               for r in spark.read.format("delta").load(str(warehouse / "topic_audit"))
               .where(f"run_id = '{run_id}' and phase = 'apply'").collect()}
    assert created == {**{n: (after[n]["topic_id"], s["partitions"])
                          for n, s in CREATES.items()},
                       **{n: (secured[n]["topic_id"], p) for n, p in MTLS_TOPICS.items()}}

    # Delta: the apply's intent (plan and validate rows), which made the table, then its
    # results (apply and verify rows), one data file each (no small-file storm on a cluster)
    creates = len(CREATES) + len(MTLS_TOPICS)
    history = (spark.sql(f"DESCRIBE HISTORY '{warehouse / 'topic_audit'}'")
               .orderBy("version").collect())
    assert [(h["version"], h["operation"]) for h in history] == [(v, "WRITE") for v in range(2)]
    assert [(h["operationMetrics"]["numOutputRows"], h["operationMetrics"]["numFiles"])
            for h in history] == [(str(creates * 2 + 1), "1"), (str(creates * 2), "1")]

    # the admin work ran in executors the two workers launched, never in the driver
    log = _events(events)
    executors = {e["Executor ID"]: e["Executor Info"]["Host"] for e in log
                 if e["Event"] == "SparkListenerExecutorAdded"}
    assert len(executors) == WORKERS and set(executors.values()) == {"127.0.0.1"}
    ran = _admin_task_executors(log)
    assert set(ran) == set(ADMIN_JOBS)
    assert set().union(*ran.values()) <= set(executors)
    app_id = next(e["App ID"] for e in log if e["Event"] == "SparkListenerApplicationStart")
    launched_by = {d.name: w.name for w in standalone.work_dirs
                   for d in (w / app_id).iterdir() if d.is_dir()}
    assert set(launched_by) == set(executors)
    assert sorted(launched_by.values()) == sorted(w.name for w in standalone.work_dirs)
    # ...in the bare Python, as the job's check of the executors logged
    assert f"the executors run {BARE_PYTHON} (Python 3.11." in done.output
    # no executor's directory holds the files the conf names
    assert [p for w in standalone.work_dirs for p in (w / app_id).rglob("*")
            if p.name in ("job.key", "job.crt", "key-password")] == []
    key_body = cert.key.read_text().splitlines()[1]
    event_text = "\n".join(f.read_text() for f in events.rglob("events_*"))
    assert '"Event":"SparkListenerApplicationEnd"' in event_text
    leaks = [what for what, secret in (("key", key_body), ("password", MTLS_KEY_PASSWORD))
             for text in (event_text, done.stdout, done.stderr) if secret in text]
    assert leaks == []


def test_executors_without_pyarrow_are_refused_before_anything_is_read(
        standalone: Any, broker: Any, spark: Any, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    write_manifest_table(spark, warehouse / "desired_topics",
                         [{"cluster": "local", "topic": "sa.never", "partitions": 1}])
    conf = write_conf(tmp_path / "conf.yaml", broker.bootstrap_servers, warehouse)
    python = _python_without_pyarrow(tmp_path)
    before = broker_state(broker.bootstrap_servers)

    refused = _submit(standalone, python, ["apply", "--conf", str(conf), "--json"])

    assert refused.returncode == 2, refused.output[-6000:]
    error = refused.json()["error"]
    assert error.startswith("the executors' Python cannot run the admin tasks: missing "
                            f"pyarrow (ModuleNotFoundError: No module named 'pyarrow') in "
                            f"{python} (Python 3.11."), error
    assert broker_state(broker.bootstrap_servers) == before
    assert row_count(spark, warehouse / "topic_snapshots") == 0
    assert row_count(spark, warehouse / "topic_audit") == 0
