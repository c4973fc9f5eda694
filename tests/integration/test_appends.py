"""The job's appends land once (`provisioning.delta.idempotent`): an append that runs again
after its commit had landed (in the same process, or after an error raised once the commit
was written) writes nothing twice, and one whose commit never landed is written once; on
path and catalog tables alike, classic and Spark Connect; every commit names its
transaction in its userMetadata, and Delta's own transaction ids are never looked up; tables
the job creates keep those ids (should a user's writer set them) for a bounded time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from provisioning.delta import tables
from provisioning.delta.audit_log import AuditLog
from provisioning.delta.idempotent import FENCE_PROPERTY, MARK_KEY
from provisioning.delta.runs import write_run
from provisioning.results import RunRecord

pytestmark = [pytest.mark.integration]


def _rows(spark: Any, run_id: str, phase: str, n: int) -> Any:
    from provisioning.registry import AUDIT

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


def _failing_once(monkeypatch: pytest.MonkeyPatch, after_commit: bool) -> list[str]:
    """`tables.write` raising once, after (or instead of) writing its commit: what a lost
    connection or a failed call after the commit looks like to the job."""
    real = tables.write
    failed: list[str] = []

    def write(*args: Any, **kwargs: Any) -> None:
        if not failed:
            failed.append("once")
            if after_commit:
                real(*args, **kwargs)
            raise ConnectionResetError("the connection to the driver was reset")
        real(*args, **kwargs)

    monkeypatch.setattr(tables, "write", write)
    return failed


def _commits(spark: Any, table: Path) -> list[tuple[int, str, dict[str, Any]]]:
    """(version, operation, userMetadata as JSON) of every commit."""
    return [(h["version"], h["operation"], json.loads(h["userMetadata"] or "{}"))
            for h in spark.sql(f"DESCRIBE HISTORY '{table}'").orderBy("version").collect()]


def _txn_actions(table: Path) -> list[dict[str, Any]]:
    """The `txn` actions (Delta's own transaction ids) of every commit's log file."""
    return [a["txn"] for f in sorted((table / "_delta_log").glob("*.json"))
            for a in map(json.loads, f.read_text().splitlines()) if "txn" in a]


@pytest.fixture(params=["classic", pytest.param("connect", marks=pytest.mark.lane("connect"))])
def session(request: pytest.FixtureRequest, spark: Any) -> Any:
    """Both modes: on Spark Connect an append that raised is interrupted and its table
    fenced before its history is read (the server may still be running it); on classic
    Spark its call returned when it was done. make test runs each in its lane's own
    session."""
    from provisioning.session import is_connect

    if is_connect(spark) != (request.param == "connect"):
        pytest.skip(f"runs in make test's {request.param} lane, on that lane's session")
    return spark, str(request.param)


@pytest.mark.parametrize("after_commit", [True, False],
                         ids=["the commit had landed", "the commit never landed"])
def test_an_append_that_raised_is_found_in_the_history_or_written_once(
        session: tuple[Any, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        after_commit: bool) -> None:
    spark, mode = session
    table = tmp_path / "audit"
    AuditLog(spark, str(table), "r0").write("plan", _rows(spark, "r0", "plan", 1))
    failed = _failing_once(monkeypatch, after_commit)
    AuditLog(spark, str(table), "r1").write("plan", _rows(spark, "r1", "plan", 2))
    assert failed == ["once"]
    rows = spark.read.format("delta").load(str(table)).collect()
    assert sorted((r["run_id"], r["topic"]) for r in rows) == [
        ("r0", "t0"), ("r1", "t0"), ("r1", "t1")]
    first = (0, "WRITE", {MARK_KEY: "topic-provisioning-audit-r0:1"})
    mark = "topic-provisioning-audit-r1:1"
    written = ("WRITE", {MARK_KEY: mark})
    fenced = ("SET TBLPROPERTIES", {})
    if mode == "classic":  # the call returned: the history is read at once
        assert _commits(spark, table) == [first, (1, *written)]
    else:  # the table fenced before its history is read: before or after the append
        steps = [written, fenced] if after_commit else [fenced, written]
        assert _commits(spark, table) == [first, *[(v, *c) for v, c in enumerate(steps, 1)]]
        properties = dict(spark.sql(f"DESCRIBE DETAIL '{table}'").first()["properties"])
        assert properties[FENCE_PROPERTY] == mark
    # Delta's own transaction ids are never asked for.
    assert _txn_actions(table) == []


def test_a_fence_fails_a_commit_that_read_the_table_before_it(spark: Any,
                                                              tmp_path: Path) -> None:
    """Why an append sent again through Spark Connect cannot land twice: a commit of the
    failed append that the server was still making had read the table before the fence,
    and Delta refuses it. Its transaction is held open here through the classic session's
    JVM (Delta's own transaction API), across the fence."""
    from provisioning.delta.idempotent import Transaction, fence
    from provisioning.delta.tables import TableRef
    from provisioning.registry import AUDIT
    from provisioning.session import is_connect

    if is_connect(spark):
        pytest.skip("holds a Delta transaction open in a classic session's JVM")
    table = tmp_path / "audit"
    AuditLog(spark, str(table), "r0").write("plan", _rows(spark, "r0", "plan", 1))
    jvm = spark.sparkContext._jvm
    ghost = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
        spark._jsparkSession, str(table)).startTransaction()
    fence(spark, TableRef(str(table)), "topic-provisioning append none",
          Transaction("topic-provisioning-audit-r1", 1), AUDIT)
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()

    def scala_object(name: str) -> Any:
        return jvm.java.lang.Class.forName(name, True, loader).getField("MODULE$").get(None)

    nothing = scala_object("scala.collection.immutable.Nil$")
    update = scala_object("org.apache.spark.sql.delta.DeltaOperations$ManualUpdate$")
    with pytest.raises(Exception, match=r"MetadataChangedException|DELTA_METADATA_CHANGED"):
        ghost.commit(nothing, update)
    assert [c[:2] for c in _commits(spark, table)] == [(0, "WRITE"), (1, "SET TBLPROPERTIES")]
