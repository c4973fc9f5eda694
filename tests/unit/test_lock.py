"""The run lock on a real Delta table: it proceeds only on a read-back of its own live
claim, stops on a failing MERGE or a foreign table, and notices when it is lost."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PySparkException

from provisioning.delta.lock import RunLock
from provisioning.errors import LockHeld, LockUnavailable


class FailingMerge(RunLock):
    """A lock whose MERGE fails for a reason that is not a concurrent commit."""

    fail_with: Exception | None = None

    def _merge(self, released: bool, only_mine: bool, stale: Any = ()) -> None:
        if self.fail_with is not None and not released:
            raise self.fail_with
        super()._merge(released, only_mine, stale)


def _claims(spark: Any, table: Path) -> list[tuple[str, str, bool]]:
    return sorted((r["name"], r["run_id"], r["released"])
                  for r in spark.read.format("delta").load(str(table)).collect())


def _schema_error(spark: Any) -> PySparkException:
    try:
        spark.sql("SELECT no_such_column FROM range(1)").collect()
    except PySparkException as exc:
        return exc
    raise AssertionError("the query should have failed")


def test_a_failing_merge_stops_the_run_and_leaves_no_claim(spark: Any, tmp_path: Path
                                                           ) -> None:
    table = tmp_path / "locks"
    lock = FailingMerge(spark, str(table), ["local"], "r1", "apply", 60)
    lock.fail_with = _schema_error(spark)
    with pytest.raises(LockUnavailable) as err:
        lock.acquire()
    assert str(err.value).startswith(
        f"cannot take the run lock in {table}: the MERGE that claims it failed: "
        "AnalysisException: ")
    assert _claims(spark, table) == []


def test_a_table_that_is_not_a_lock_table_is_named(spark: Any, tmp_path: Path) -> None:
    table = tmp_path / "not_locks"
    spark.range(1).write.format("delta").save(str(table))
    with pytest.raises(LockUnavailable) as err:
        RunLock(spark, str(table), ["local"], "r1", "apply", 60).acquire()
    assert str(err.value) == (
        f"cannot take the run lock: {table} is not a lock table (missing or mistyped "
        "columns: name (string), run_id (string), command (string), host (string), pid (int), "
        "acquired_at (timestamp), expires_at (timestamp), expires_epoch (bigint), released "
        "(boolean)); point tables.locks at a table of its own")


def test_a_held_lock_is_refused_and_a_released_one_taken(spark: Any, tmp_path: Path) -> None:
    table = str(tmp_path / "locks")
    first = RunLock(spark, table, ["a", "b"], "r1", "apply", 60)
    first.acquire()
    with pytest.raises(LockHeld):
        RunLock(spark, table, ["b"], "r2", "apply", 60).acquire()
    first.release()
    second = RunLock(spark, table, ["b"], "r2", "apply", 60)
    second.acquire()
    second.release()
    assert _claims(spark, tmp_path / "locks") == [("a", "r1", True), ("b", "r2", True)]


def test_a_failing_heartbeat_loses_the_lock_once_the_claim_expires(spark: Any, tmp_path: Path
                                                                   ) -> None:
    lock = FailingMerge(spark, str(tmp_path / "locks"), ["local"], "r1", "apply", 60)
    lock.acquire()
    lock._stop.set()  # drive the heartbeat by hand
    lock.fail_with = RuntimeError("storage unreachable")
    lock._last_renewed = time.time()
    lock.renew()
    assert lock.lost is None  # one failed renewal well inside the TTL: still held
    lock.check_held()
    lock._last_renewed = time.time() - 60
    lock.renew()
    assert lock.lost == (f"the lock in {tmp_path / 'locks'} could not be renewed before it "
                         "expired (RuntimeError)")
    with pytest.raises(LockUnavailable):
        lock.check_held()
    lock.fail_with = None
    lock.release()


def test_a_takeover_is_noticed_by_the_next_heartbeat(spark: Any, tmp_path: Path) -> None:
    table = str(tmp_path / "locks")
    lock = RunLock(spark, table, ["local"], "r1", "apply", 60)
    lock.acquire()
    lock._stop.set()
    # Another run takes the cluster over (as it would a stale claim).
    spark.sql(f"UPDATE delta.`{table}` SET run_id = 'r2', pid = 1, host = 'elsewhere' "
              "WHERE name = 'local'")
    lock.renew()
    assert lock.lost is not None
    assert lock.lost.startswith("taken over: another run holds the lock: "
                                "cluster local is locked by apply run r2 (pid 1 on elsewhere")
    with pytest.raises(LockUnavailable):
        lock.check_held()
