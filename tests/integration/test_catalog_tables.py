"""Every table of the conf as a catalog name of a persistent catalog: Spark's Hive metastore on
embedded Derby, chosen with ordinary Spark settings given to spark-submit.sh, nothing of
the job's own.

Each command is a separate process (`load_manifest`, `apply`, `report --topic`, `maintain`),
so every table a later one reads was found by name in the metastore, where the first use
created it as a managed Delta table: the manifest by `apply`, the audit by `report`, and
the audit, lock, runs and snapshot tables by `maintain`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import audit_rows_of, broker_state, run_cli, write_conf

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

TOPICS = {
    "cat.orders": {"partitions": 3, "replication_factor": 1,
                   "configs": {"retention.ms": "3600000"}},
    "cat.events": {"partitions": 1, "replication_factor": 1, "configs": {}},
}


def _metastore(base: Path) -> list[str]:
    """spark-submit options for a Hive metastore on embedded Derby under `base`."""
    return ["--conf", "spark.sql.catalogImplementation=hive",
            "--conf", f"spark.sql.warehouse.dir={base / 'warehouse'}",
            "--conf", "spark.hadoop.javax.jdo.option.ConnectionURL="
                      f"jdbc:derby:;databaseName={base / 'metastore_db'};create=true"]


def test_catalog_tables_across_processes(kafka: Any, spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "manifest.yaml"
    source.write_text("".join(
        f"- {{cluster: local, topic: {name}, partitions: {s['partitions']}, "
        f"replication_factor: 1, configs: {s['configs']}, owner: cat-team}}\n"
        for name, s in TOPICS.items()))
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, tmp_path, extra={
        "tables": {"manifests": ["default.desired_topics"], "audit": "default.topic_audit",
                   "runs": "default.provision_runs", "snapshots": "default.topic_snapshots",
                   "locks": "default.provision_locks"}})
    options = _metastore(tmp_path)

    def job(*args: str, script: str = "jobs/provision_topics.py") -> Any:
        done = run_cli(list(args), job=script, spark_args=options, cwd=tmp_path)
        assert done.returncode == 0, done.output[-4000:]
        return done

    job("--source", str(source), "--table", "default.desired_topics",
        script="jobs/load_manifest.py")
    first = job("apply", "--conf", str(conf), "--json").json()
    history = job("report", "--conf", str(conf), "--topic", "cat.orders").output
    maintained = job("maintain", "--conf", str(conf), "--json").json()

    state = broker_state(kafka.bootstrap_servers)
    assert {n: {k: v for k, v in s.items() if k != "topic_id"}
            for n, s in state.items() if n.startswith("cat.")} == TOPICS
    managed = tmp_path / "warehouse"  # the metastore's managed tables live here
    assert sorted(p.name for p in managed.iterdir()) == [
        "desired_topics", "provision_locks", "provision_runs", "topic_audit",
        "topic_snapshots"]
    assert audit_rows_of(spark, managed / "topic_audit", first["run_id"]) == sorted(
        ("local", name, "CREATE", phase, outcome) for name in TOPICS
        for phase, outcome in (("plan", "planned"), ("validate", "validated"),
                               ("apply", "created"), ("verify", "created")))
    # the topic's history names the catalog table and reads the manifest row at its version
    assert "manifest default.desired_topics@0" in history
    assert ("default.desired_topics@0: cluster=local topic=cat.orders partitions=3 "
            "replication_factor=1 configs={retention.ms: 3600000} owner=cat-team") in history
    assert sorted((t["role"], t["table"]) for t in maintained["tables"]) == [
        ("audit", "default.topic_audit"), ("locks", "default.provision_locks"),
        ("runs", "default.provision_runs"), ("snapshots", "default.topic_snapshots")]
    runs = {r["run_id"]: (r["command"], r["exit_code"]) for r in
            spark.read.format("delta").load(str(managed / "provision_runs")).collect()}
    assert runs == {first["run_id"]: ("apply", 0), maintained["run_id"]: ("maintain", 0)}
