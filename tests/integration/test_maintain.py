"""`maintain` on real Delta tables, through spark-submit.sh as a thin client of the session's
Spark Connect server: compaction, snapshot retention, VACUUM and each table's checkpoint, with
every row the job must keep kept."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from provisioning.delta.maintenance import maintain_tables
from provisioning.errors import UsageError
from tests.builders import audit_df, snapshot_df
from tests.helpers import Completed, load_conf, write_conf

OLD = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
RECENT = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(days=1)


def _append(df: Any, path: Path) -> None:
    # one data file per append, as the job's one-commit-per-phase appends of small runs
    df.coalesce(1).write.format("delta").mode("append").save(str(path))


def _parquet_files(path: Path) -> set[str]:
    return {f.name for f in path.glob("*.parquet")}


def _live_files(spark: Any, path: Path) -> set[str]:
    return {Path(f).name for f in spark.read.format("delta").load(str(path)).inputFiles()}


def _rows(spark: Any, path: Path) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(str(path))
                  .select("run_id", "cluster", "topic").collect())


def test_maintain_compacts_prunes_old_snapshots_and_vacuums(spark: Any,
                                                            cli: Callable[..., Completed],
                                                            tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    audit, snapshots = warehouse / "topic_audit", warehouse / "topic_snapshots"
    for i in range(4):
        _append(audit_df(spark, [{"run_id": f"run-{i}", "cluster": "c", "topic": f"t{i}",
                                  "phase": "plan", "outcome": "planned"}]), audit)
    # The first file holds expired rows and a recent one: the prune rewrites it. Cluster d
    # has only expired snapshots: its newest one stays (it is still d's state).
    for batch in ((("c", "snap-0", OLD), ("c", "snap-1", RECENT),
                   ("d", "snap-4", OLD - dt.timedelta(days=1)), ("d", "snap-5", OLD)),
                  (("c", "snap-2", RECENT),), (("c", "snap-3", RECENT),)):
        _append(snapshot_df(spark, [{"run_id": run, "cluster": cluster,
                                     "topic": f"s{run[-1]}", "snapshot_at": at}
                                    for cluster, run, at in batch]), snapshots)
    audit_before = _rows(spark, audit)
    conf = write_conf(tmp_path / "conf.yaml", "127.0.0.1:9", warehouse, extra={
        "maintenance": {"vacuum_retain_hours": 0, "snapshot_retention_days": 30},
        "spark": {"settings": {"spark.sql.session.timeZone": "UTC",
                               "spark.databricks.delta.retentionDurationCheck.enabled": False}},
    })

    done = cli(["maintain", "--conf", str(conf), "--json"])

    assert done.returncode == 0, done.output[-4000:]
    doc = done.json()
    assert doc["tables"] == [
        # 4 appends compacted into 1 file; the 4 replaced files vacuumed
        {"role": "audit", "table": str(audit), "files_before": 4, "files_after": 1,
         "rows_deleted": 0, "files_vacuumed": 4, "retyped_columns": []},
        # the first file rewritten without the expired row, then the 3 compacted: the 3
        # originals and the rewrite vacuumed
        {"role": "snapshots", "table": str(snapshots), "files_before": 3, "files_after": 1,
         "rows_deleted": 2, "files_vacuumed": 4, "retyped_columns": []},
    ]
    # every audit row kept; only the snapshots older than 30 days gone, but d's newest
    assert _rows(spark, audit) == audit_before
    assert _rows(spark, snapshots) == [("snap-1", "c", "s1"), ("snap-2", "c", "s2"),
                                       ("snap-3", "c", "s3"), ("snap-5", "d", "s5")]
    # on disk: exactly the files the current versions read
    assert _parquet_files(audit) == _live_files(spark, audit)
    assert _parquet_files(snapshots) == _live_files(spark, snapshots)
    assert len(_parquet_files(audit)) == 1
    # Each table's checkpoint written by maintain (at its next-to-last commit: the one that
    # set the interval to 1; the last sets it back), and tables made by an earlier release
    # given the job's checkpoint interval: a run's commits write none.
    for path in (audit, snapshots):
        history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select(
            "version", "operation").orderBy("version").collect()
        latest = history[-1]["version"]
        assert [tuple(r) for r in history[-2:]] == [
            (latest - 1, "SET TBLPROPERTIES"), (latest, "SET TBLPROPERTIES")]
        assert sorted(f.name for f in (path / "_delta_log").glob("*.checkpoint.parquet")) == [
            f"{latest - 1:020d}.checkpoint.parquet"]
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").select("properties").first()
        assert detail is not None
        assert detail["properties"] == {
            "delta.checkpointInterval": "1000",
            "delta.setTransactionRetentionDuration": "interval 7 days"}
    runs = (spark.read.format("delta").load(str(warehouse / "provision_runs"))
            .select("run_id", "command", "status", "exit_code", "outcome_counts").collect())
    assert [tuple(r) for r in runs] == [
        (doc["run_id"], "maintain", "succeeded", 0,
         {"files_compacted": 5, "snapshot_rows_deleted": 2, "files_vacuumed": 8})]


def test_maintain_without_any_table_says_so(spark: Any, tmp_path: Path) -> None:
    conf = load_conf(write_conf(tmp_path / "conf.yaml", "127.0.0.1:9", tmp_path / "none"), {})
    with pytest.raises(UsageError) as err:
        maintain_tables(spark, conf, dt.datetime.now(dt.UTC))
    assert str(err.value) == (
        "none of the job's tables exists yet (tables.audit, tables.runs, tables.snapshots, "
        "tables.locks): nothing to maintain")
