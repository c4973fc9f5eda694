"""The job's appends are idempotent Delta writes (txnAppId / txnVersion): an append that runs
again after its commit had landed (an error raised after the commit, a retry) writes
nothing twice, on path and catalog tables alike; tables the job creates keep those ids for
a bounded time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from provisioning.delta.audit_log import AuditLog
from provisioning.delta.runs import write_run
from provisioning.results import RunRecord

pytestmark = [pytest.mark.integration]


def _rows(spark: Any, run_id: str, phase: str, n: int) -> Any:
    from schemas import AUDIT

    return spark.createDataFrame(
        [tuple({"run_id": run_id, "cluster": "local", "topic": f"t{i}", "phase": phase}.get(
            f.name) for f in AUDIT.fields) for i in range(n)], AUDIT)


@pytest.mark.parametrize("kind", ["path", "catalog"])
def test_an_audit_commit_written_again_lands_once(spark: Any, tmp_path: Path,
                                                  kind: str) -> None:
    table = str(tmp_path / "audit") if kind == "path" else f"default.audit_{tmp_path.name}"
    first = AuditLog(spark, table, "r1")
    first.write("plan", _rows(spark, "r1", "plan", 3))
    # the same run's first commit again (a retry after the commit landed): skipped
    AuditLog(spark, table, "r1").write("plan", _rows(spark, "r1", "plan", 3))
    first.write("validate", _rows(spark, "r1", "validate", 2))
    AuditLog(spark, table, "r2").write("plan", _rows(spark, "r2", "plan", 1))
    read = (spark.read.format("delta").load(table) if kind == "path"
            else spark.table(table))
    assert sorted((r["run_id"], r["phase"], r["topic"]) for r in read.collect()) == [
        ("r1", "plan", "t0"), ("r1", "plan", "t1"), ("r1", "plan", "t2"),
        ("r1", "validate", "t0"), ("r1", "validate", "t1"), ("r2", "plan", "t0")]
    target = f"'{table}'" if kind == "path" else table
    history = spark.sql(f"DESCRIBE HISTORY {target}").orderBy("version").collect()
    created = "WRITE" if kind == "path" else "CREATE TABLE AS SELECT"
    # three commits: the skipped one wrote nothing
    assert [h["operation"] for h in history] == [created, "WRITE", "WRITE"]
    properties = dict(spark.sql(f"DESCRIBE DETAIL {target}").first()["properties"])
    assert properties["delta.setTransactionRetentionDuration"] == "interval 7 days"


def test_a_runs_row_written_again_lands_once(spark: Any, tmp_path: Path) -> None:
    record = RunRecord("r1", "plan", {}, "digest")
    record.finish("succeeded", 0)
    for _ in range(2):
        write_run(spark, str(tmp_path / "runs"), record)
    rows = spark.read.format("delta").load(str(tmp_path / "runs")).collect()
    assert [(r["run_id"], r["status"]) for r in rows] == [("r1", "succeeded")]
