"""The run lock: who holds a cluster is judged from the lock log in commit order (pure), and
on a real Delta table a run proceeds only on a read-back of its own live lease, stops on a
failing append or a foreign table, and notices when the lease is lost."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PySparkException

from provisioning.delta.lock import (
    CLAIM,
    RELEASE,
    RENEW,
    Event,
    Lease,
    RunLock,
    leases,
    standing,
)
from provisioning.errors import LockHeld, LockUnavailable
from provisioning.processes import ProcessIdentity, provably_gone, this_process
from schemas import LOCKS

H = ProcessIdentity("h", None, None, 1, None)


def ev(version: int, run_id: str, event: str, written: int, expires: int, name: str = "c",
       takes_over: str | None = None, holder: ProcessIdentity = H) -> Event:
    return Event(version, name, run_id, "apply", holder, event, written, expires, takes_over)


def lease(run_id: str, expires: int, name: str = "c", holder: ProcessIdentity = H) -> Lease:
    return Lease(name, run_id, "apply", holder, expires)


# -- the judgement, pure ------------------------------------------------------------------

def test_the_first_claim_in_commit_order_wins_and_a_refused_claim_never_counts() -> None:
    events = [ev(2, "b", CLAIM, 101, 700), ev(1, "a", CLAIM, 100, 700),
              ev(3, "a", RELEASE, 200, 200)]
    # b's claim came while a held the cluster: refused, and a's release does not revive it
    assert leases(events[:2]) == {"c": lease("a", 700)}
    assert leases(events) == {}


def test_a_claim_takes_an_expired_lease_or_one_it_names_as_taken_over() -> None:
    expired = [ev(1, "a", CLAIM, 100, 160), ev(2, "b", CLAIM, 170, 770)]
    assert leases(expired) == {"c": lease("b", 770)}
    named = [ev(1, "a", CLAIM, 100, 700), ev(2, "b", CLAIM, 110, 710),
             ev(3, "b", CLAIM, 120, 720, takes_over="a")]
    assert leases(named) == {"c": lease("b", 720)}
    wrong_name = [ev(1, "a", CLAIM, 100, 700), ev(2, "b", CLAIM, 120, 720, takes_over="x")]
    assert leases(wrong_name) == {"c": lease("a", 700)}


def test_another_clock_takes_an_expired_lease_only_past_the_skew_margin() -> None:
    # a's lease expires at 160 by its clock; b's clock may run up to 30 s ahead
    early = [ev(1, "a", CLAIM, 100, 160), ev(2, "b", CLAIM, 185, 785)]
    assert leases(early, skew=30) == {"c": lease("a", 160)}
    late = [ev(1, "a", CLAIM, 100, 160), ev(2, "b", CLAIM, 190, 790)]
    assert leases(late, skew=30) == {"c": lease("b", 790)}
    # to a reader, another run's lease stays live until its expiry plus the margin
    held = {"c": lease("a", 160)}
    assert standing(held, ["c"], "me", 185, skew=30, gone=lambda _: False).others == (
        lease("a", 160),)
    assert standing(held, ["c"], "me", 191, skew=30, gone=lambda _: False).stale == (
        lease("a", 160),)


def test_a_renewal_extends_only_a_live_lease_of_its_own() -> None:
    assert leases([ev(1, "a", CLAIM, 100, 160), ev(2, "a", RENEW, 150, 210)]) == {
        "c": lease("a", 210)}
    # written after the lease expired: too late, it stays expired
    assert leases([ev(1, "a", CLAIM, 100, 160), ev(2, "a", RENEW, 170, 230)]) == {
        "c": lease("a", 160)}
    # another run's renewal or release changes nothing
    assert leases([ev(1, "a", CLAIM, 100, 160), ev(2, "b", RENEW, 150, 210),
                   ev(3, "b", RELEASE, 150, 150)]) == {"c": lease("a", 160)}


def test_clusters_are_judged_each_on_its_own() -> None:
    events = [ev(1, "a", CLAIM, 100, 700, name="x"), ev(2, "b", CLAIM, 101, 701, name="x"),
              ev(2, "b", CLAIM, 101, 701, name="y")]
    assert leases(events) == {"x": lease("a", 700, "x"), "y": lease("b", 701, "y")}


def test_rows_of_the_merge_based_lock_are_claims_until_released() -> None:
    legacy = {"version": 4, "name": "c", "run_id": "old", "command": "apply", "host": "h",
              "pid": 7, "released": False, "expires_epoch": 900}
    assert Event.of(legacy) == Event(4, "c", "old", "apply",
                                     ProcessIdentity("h", None, None, 7, None), CLAIM, 0, 900,
                                     None)
    assert Event.of({**legacy, "released": True}).event == RELEASE


def test_standing_names_missing_clusters_live_holders_and_stale_ones() -> None:
    dead = ProcessIdentity("h", "boot", "pid:[1]", 2, 50)
    held = {"a": lease("me", 500, "a"), "b": lease("other", 500, "b"),
            "c": lease("gone", 500, "c"), "d": lease("me", 90, "d")}
    now = standing(held, ["a", "b", "c", "d", "e"], "me", 100, gone=lambda p: p == dead)
    assert now.missing == ("b", "c", "d", "e")
    assert now.others == (lease("other", 500, "b"), lease("gone", 500, "c"))
    assert now.stale == ()
    held["c"] = lease("gone", 500, "c", holder=dead)
    later = standing(held, ["c"], "me", 100, gone=lambda p: p == dead)
    assert (later.others, later.stale) == ((), (held["c"],))
    assert standing({"a": lease("me", 500, "a")}, ["a"], "me", 100).held


def test_a_holder_is_provably_gone_only_on_this_machine_boot_and_pid_namespace() -> None:
    me = this_process()
    assert me.boot_id and me.pid_namespace and me.start_ticks
    # this very process: alive
    assert not provably_gone(me)
    # same pid, another start time: the pid was reused, the holder is gone
    assert provably_gone(ProcessIdentity(me.host, me.boot_id, me.pid_namespace, me.pid,
                                         me.start_ticks + 1))
    # no process with that pid
    gone = ProcessIdentity(me.host, me.boot_id, me.pid_namespace, 4_000_000, 5)
    assert provably_gone(gone)
    # the same pid facts but another container sharing the host name, another boot, or a
    # record without them (an earlier release's claim): not proof, the lease runs out
    for other in (ProcessIdentity(me.host, me.boot_id, "pid:[99]", 4_000_000, 5),
                  ProcessIdentity(me.host, "another-boot", me.pid_namespace, 4_000_000, 5),
                  ProcessIdentity("elsewhere", me.boot_id, me.pid_namespace, 4_000_000, 5),
                  ProcessIdentity(me.host, None, None, 4_000_000, None)):
        assert not provably_gone(other), other


# -- on a real Delta table --------------------------------------------------------------

class FailingAppend(RunLock):
    """A lock whose appends of one kind fail for a reason that is not a concurrent commit."""

    fail_with: Exception | None = None
    fail_on: str = CLAIM

    def _append(self, event: str, takes_over: Any = None) -> None:
        if self.fail_with is not None and event == self.fail_on:
            raise self.fail_with
        super()._append(event, takes_over)


def _log(spark: Any, table: Path) -> list[tuple[str, str, str]]:
    rows = (spark.read.format("delta").load(str(table))
            .select("name", "run_id", "event", "_metadata.row_commit_version").collect())
    return [(r["name"], r["run_id"], r["event"])
            for r in sorted(rows, key=lambda r: (r["row_commit_version"], r["name"]))]


def _schema_error(spark: Any) -> PySparkException:
    try:
        spark.sql("SELECT no_such_column FROM range(1)").collect()
    except PySparkException as exc:
        return exc
    raise AssertionError("the query should have failed")


def test_a_failing_claim_stops_the_run_and_leaves_no_claim(spark: Any, tmp_path: Path
                                                           ) -> None:
    table = tmp_path / "locks"
    lock = FailingAppend(spark, str(table), ["local"], "r1", "apply", 60)
    lock.fail_with = _schema_error(spark)
    with pytest.raises(LockUnavailable) as err:
        lock.acquire()
    assert str(err.value).startswith(
        f"cannot take the run lock in {table}: the claim could not be written or read back: "
        "AnalysisException: ")
    # A claim whose append failed may still have landed: it is given back (a release ends
    # nothing of anyone else's).
    assert _log(spark, table) == [("local", "r1", RELEASE)]


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
    assert spark.read.format("delta").load(str(table)).columns == ["id"]


def test_a_held_lock_is_refused_and_a_released_one_taken(spark: Any, tmp_path: Path) -> None:
    table = tmp_path / "locks"
    first = RunLock(spark, str(table), ["a", "b"], "r1", "apply", 60)
    first.acquire()
    with pytest.raises(LockHeld) as err:
        RunLock(spark, str(table), ["b"], "r2", "apply", 60).acquire()
    assert str(err.value).startswith(
        "another run holds the lock: cluster b is locked by apply run r1 (pid ")
    first.release()
    second = RunLock(spark, str(table), ["b"], "r2", "apply", 60)
    second.acquire()
    second.release()
    assert _log(spark, table) == [
        ("a", "r1", CLAIM), ("b", "r1", CLAIM), ("b", "r2", CLAIM), ("b", "r2", RELEASE),
        ("a", "r1", RELEASE), ("b", "r1", RELEASE), ("b", "r2", CLAIM), ("b", "r2", RELEASE)]
    properties = {r["key"]: r["value"] for r in
                  spark.sql(f"SHOW TBLPROPERTIES delta.`{table}`").collect()}
    assert properties["delta.enableRowTracking"] == "true"


def test_a_failing_heartbeat_loses_the_lock_once_the_claim_expires(spark: Any, tmp_path: Path
                                                                   ) -> None:
    lock = FailingAppend(spark, str(tmp_path / "locks"), ["local"], "r1", "apply", 60)
    lock.acquire()
    lock._stop.set()  # drive the heartbeat by hand
    lock.fail_on, lock.fail_with = RENEW, RuntimeError("storage unreachable")
    lock.renew()
    assert lock.lost is None  # one failed renewal well inside the TTL: still held
    lock.check_held()
    lock._held_until = time.monotonic() + 0.5
    lock.renew()
    assert lock.lost == (f"the lock in {tmp_path / 'locks'} could not be renewed before it "
                         "expired (RuntimeError)")
    with pytest.raises(LockUnavailable):
        lock.check_held()
    lock.release()


def test_a_takeover_is_noticed_by_the_next_heartbeat(spark: Any, tmp_path: Path) -> None:
    table = tmp_path / "locks"
    lock = RunLock(spark, str(table), ["local"], "r1", "apply", 60)
    lock.acquire()
    lock._stop.set()
    # Another run takes the cluster over, as it would from a holder whose process is gone.
    usurper = RunLock(spark, str(table), ["local"], "r2", "apply", 60)
    usurper.me = ProcessIdentity("elsewhere", None, None, 1, None)
    usurper._append(CLAIM, {"local": "r1"})
    lock.renew()
    assert lock.lost is not None
    assert lock.lost.startswith("taken over: another run holds the lock: "
                                "cluster local is locked by apply run r2 (pid 1 on elsewhere")
    with pytest.raises(LockUnavailable):
        lock.check_held()
    lock.release()
    # the fenced run's renewal and release leave the usurper's lease alone
    assert _log(spark, table)[-3:] == [("local", "r2", CLAIM), ("local", "r1", RENEW),
                                       ("local", "r1", RELEASE)]
    with pytest.raises(LockHeld):
        RunLock(spark, str(table), ["local"], "r3", "apply", 60).acquire()


def test_a_lease_not_renewed_within_its_ttl_is_lost_by_the_holders_own_clock(
        spark: Any, tmp_path: Path) -> None:
    lock = RunLock(spark, str(tmp_path / "locks"), ["local"], "r1", "apply", 60)
    lock.acquire()
    lock._stop.set()  # no heartbeat
    lock.check_held(read_back=False)
    lock._held_until = time.monotonic() - 1  # the last renewal is older than the TTL
    with pytest.raises(LockUnavailable, match="was not renewed within its TTL of 60s"):
        lock.check_held(read_back=False)
    lock.release()


def test_a_lock_table_of_the_merge_based_lock_is_upgraded_in_place(spark: Any, tmp_path: Path
                                                                   ) -> None:
    table = tmp_path / "locks"
    legacy = [f for f in LOCKS.fields if f.name not in (
        "event", "written_epoch", "takes_over", "boot_id", "pid_namespace", "pid_start")]
    now = dt.datetime(2026, 1, 1)
    spark.createDataFrame(
        [("a", "old-done", "apply", "h", 1, now, now, 100, True),
         ("b", "old-live", "apply", "elsewhere", 1, now, now, int(time.time()) + 600, False)],
        ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in legacy),
    ).write.format("delta").save(str(table))
    with pytest.raises(LockHeld, match="cluster b is locked by apply run old-live"):
        RunLock(spark, str(table), ["a", "b"], "r1", "apply", 60).acquire()
    taken = RunLock(spark, str(table), ["a"], "r2", "apply", 60)
    taken.acquire()
    taken.check_held()
    taken.release()
    properties = {r["key"]: r["value"] for r in
                  spark.sql(f"SHOW TBLPROPERTIES delta.`{table}`").collect()}
    assert properties["delta.enableRowTracking"] == "true"
    assert spark.read.format("delta").load(str(table)).columns == [f.name for f in LOCKS.fields]


def test_any_error_after_the_claim_gives_it_back(spark: Any, tmp_path: Path) -> None:
    table = tmp_path / "locks"

    class BrokenReadBack(RunLock):
        def _standing(self) -> Any:
            raise KeyError("the read-back broke on the driver")

    with pytest.raises(KeyError, match="the read-back broke"):
        BrokenReadBack(spark, str(table), ["local"], "r1", "apply", 60).acquire()
    assert _log(spark, table) == [("local", "r1", CLAIM), ("local", "r1", RELEASE)]
    # The cluster is free at once, not when the claim expires.
    taken = RunLock(spark, str(table), ["local"], "r2", "apply", 60)
    taken.acquire()
    taken.release()


def test_giving_back_retries_with_a_growing_pause(spark: Any, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from provisioning import retry

    paused: list[float] = []
    monkeypatch.setattr(retry, "pause", paused.append)
    lock = FailingAppend(spark, str(tmp_path / "locks"), ["local"], "r1", "apply", 60)
    lock.acquire()
    lock.fail_with, lock.fail_on = OSError("storage unreachable"), RELEASE
    lock.release()
    assert paused == [0.5, 1.0, 2.0, 4.0]
    assert _log(spark, tmp_path / "locks") == [("local", "r1", CLAIM)]
