"""A per-cluster run lock kept in a Delta table, so two applies never change one cluster at once.

The table is a log: a run appends events (`claim`, `renew`, `release`), one row per
cluster, and never rewrites a row. Delta's row tracking gives every row the version
of the commit that wrote it, and that order, which every reader sees the same, decides
who holds each cluster (`leases`): a claim wins a cluster that no live lease holds
when it is written; a renewal extends only a lease that has not expired; a release
ends it. Blind appends never conflict, so taking the lock costs one append and one
read back.

A run proceeds only when the read-back shows its own live lease on every cluster it
will change; a held lock (LockHeld), a table that is not a lock table or a failed
append or read (LockUnavailable) stops it before any snapshot or request, naming
the table and the cause. A lease expires unless its heartbeat renews it (every third
of the TTL). A holder is dead only when its lease has expired, or when it ran on this
machine and is provably gone (same host name, boot id and PID namespace, and no process
with its pid and start time: `processes.provably_gone`); its lock may then be taken over
at once (the claim names it). Expiry compares one machine's clock with another's (the
holder wrote its expiry, the claimer reads its own clock), so a lease counts as expired to
another run only `clock_skew` seconds after its expiry: clocks that differ by less never
let two runs hold a cluster. The holder itself keeps its lease only while its own
monotonic clock says the last renewal is younger than the TTL.

When the heartbeat cannot renew in time, or a read-back shows another holder, the lock
is `lost` and the run starts no further request that changes Kafka (`check_held`
raises: before each phase, reading the log back, and before each wave of requests).

Tables written by the MERGE-based lock of earlier releases are upgraded in place
(row tracking on, the event columns added by the next append); their rows count as
claims or releases.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from provisioning import retry
from provisioning.delta.tables import (
    CHECKPOINT_INTERVAL,
    TableRef,
    append,
    create_table,
    load,
    sql_name,
    table_schema,
)
from provisioning.errors import LockHeld, LockUnavailable
from provisioning.processes import ProcessIdentity, provably_gone, this_process
from provisioning.results import utc_now
from schemas import LOCKS

log = logging.getLogger(__name__)

CLAIM, RENEW, RELEASE = "claim", "renew", "release"
# Columns added since the MERGE-based lock: a table of an earlier release lacks them until
# its next append.
_EVENT_COLUMNS = ("event", "written_epoch", "takes_over", "boot_id", "pid_namespace",
                  "pid_start")
# Table properties of a lock table: row tracking gives each row its commit version (the
# order of events); auto compaction keeps the file count of a table every run appends to
# small between `maintain` runs; its checkpoints are `maintain`'s, as the job's other
# tables' (`delta.tables.CHECKPOINT_INTERVAL`).
LOCK_TABLE_PROPERTIES = {
    "delta.enableRowTracking": "true",
    "delta.autoOptimize.autoCompact": "true",
    "delta.checkpointInterval": CHECKPOINT_INTERVAL,
}


@dataclass(frozen=True)
class Event:
    """One row of the lock table, with the version of the commit that wrote it."""

    version: int
    name: str
    run_id: str
    command: str
    holder: ProcessIdentity
    event: str
    written_epoch: int
    expires_epoch: int
    takes_over: str | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Event:
        kind = row.get("event")
        if kind is None:
            # A row of the MERGE-based lock: a claim until it was released.
            kind = RELEASE if row["released"] else CLAIM
        holder = ProcessIdentity(row["host"] or "", row.get("boot_id"),
                                 row.get("pid_namespace"), int(row["pid"] or 0),
                                 row.get("pid_start"))
        return cls(int(row["version"]), row["name"], row["run_id"], row["command"] or "",
                   holder, kind, int(row.get("written_epoch") or 0),
                   int(row["expires_epoch"] or 0), row.get("takes_over"))


@dataclass(frozen=True)
class Lease:
    """Who holds one cluster, until when (by the holder's clock)."""

    name: str
    run_id: str
    command: str
    holder: ProcessIdentity
    expires_epoch: int

    def live(self, now: float, skew: int, gone: Callable[[ProcessIdentity], bool]) -> bool:
        """Whether another run must treat it as held at `now` (its own clock)."""
        return self.expires_epoch + skew > now and not gone(self.holder)


def leases(events: Iterable[Event], skew: int = 0) -> dict[str, Lease]:
    """The lease of each cluster after `events`, judged in commit order (pure).

    A claim takes a cluster when no lease holds it at the claim's own time (the lease
    expired more than `skew` seconds before the claim was written), when the lease is the
    claimer's own, or when it names the holder as taken over (its process was seen gone);
    otherwise it is refused and never counts later. A renewal extends the claimer's lease
    if it had not expired when written. A release ends it.
    """
    held: dict[str, Lease] = {}
    for e in sorted(events, key=lambda e: (e.version, e.name, e.run_id)):
        current = held.get(e.name)
        mine = current is not None and current.run_id == e.run_id
        if e.event == CLAIM:
            if (current is None or mine or current.expires_epoch + skew <= e.written_epoch
                    or (e.takes_over is not None and e.takes_over == current.run_id)):
                held[e.name] = Lease(e.name, e.run_id, e.command, e.holder, e.expires_epoch)
        elif e.event == RENEW:
            if current is not None and mine and current.expires_epoch > e.written_epoch:
                held[e.name] = replace(current, expires_epoch=e.expires_epoch)
        elif e.event == RELEASE and mine:
            del held[e.name]
    return held


def _properties() -> str:
    return ", ".join(f"'{k}' = '{v}'" for k, v in LOCK_TABLE_PROPERTIES.items())


@dataclass(frozen=True)
class Standing:
    """What a read-back says of one run's lock."""

    missing: tuple[str, ...]        # our clusters without a live lease of ours
    others: tuple[Lease, ...]       # live leases of other runs on our clusters
    stale: tuple[Lease, ...]        # other runs' leases expired or whose process is gone

    @property
    def held(self) -> bool:
        return not self.missing


def standing(held: Mapping[str, Lease], names: Sequence[str], run_id: str, now: float,
             skew: int = 0,
             gone: Callable[[ProcessIdentity], bool] = provably_gone) -> Standing:
    """Judge the leases of `names` for `run_id` at `now` (this machine's clock)."""
    missing: list[str] = []
    others: list[Lease] = []
    stale: list[Lease] = []
    for name in names:
        lease = held.get(name)
        if lease is not None and lease.run_id == run_id and lease.expires_epoch > now:
            continue
        missing.append(name)
        if lease is None or lease.run_id == run_id:
            continue
        # Expired by more than the skew, or its process provably gone: a claim may take it.
        (others if lease.live(now, skew, gone) else stale).append(lease)
    return Standing(tuple(missing), tuple(others), tuple(stale))


class RunLock:
    """The lock on a set of clusters for one run."""

    def __init__(self, spark: SparkSession, table: str, clusters: Sequence[str], run_id: str,
                 command: str, ttl_seconds: int, clock_skew_seconds: int = 0) -> None:
        self.spark = spark
        self.ref = TableRef(table)
        self.names = sorted(set(clusters))
        self.run_id = run_id
        self.command = command
        self.ttl = ttl_seconds
        self.skew = clock_skew_seconds
        self.me = this_process()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._claimed = False
        # Until when (time.monotonic()) the last renewal keeps our lease, by our own clock.
        self._held_until = 0.0
        # Why the lock was lost while the run held it (None: still held).
        self.lost: str | None = None

    # -- the table --------------------------------------------------------------

    def _ensure_table(self) -> None:
        """Refuse a table that is not a lock table and upgrade one of an earlier release
        (before anything is appended to it). A missing lock table at a path is made by the
        first claim, in one commit with its properties (`_append`); two runs that make it
        at once conflict on its first commit, and the loser's claim is appended again
        (`delta.tables.retry_conflicts`). A missing catalog table is created first."""
        try:
            schema = table_schema(self.spark, self.ref)
        except PySparkException as exc:
            raise self._unavailable("it could not be read", exc) from exc
        if schema is not None:
            self._check_schema(schema)
            return
        if self.ref.is_path:
            return
        try:
            create_table(self.spark, LOCKS, self.ref, LOCK_TABLE_PROPERTIES)
        except PySparkException as exc:
            # Another run may have created it at the same moment.
            schema = table_schema(self.spark, self.ref)
            if schema is None:
                raise self._unavailable("it could not be created", exc) from exc
            self._check_schema(schema)

    def _check_schema(self, schema: StructType) -> None:
        have = {f.name: f.dataType.simpleString() for f in schema.fields}
        # A table of an earlier release lacks the event columns: its next append adds them.
        legacy = "event" not in have
        required = [f for f in LOCKS.fields if not (legacy and f.name in _EVENT_COLUMNS)]
        wrong = [f"{f.name} ({f.dataType.simpleString()})" for f in required
                 if have.get(f.name) != f.dataType.simpleString()]
        if wrong:
            raise LockUnavailable(
                f"cannot take the run lock: {self.ref.text} is not a lock table (missing or "
                f"mistyped columns: {', '.join(wrong)}); point tables.locks at a table of "
                "its own")
        if legacy:
            log.warning("upgrading the lock table %s (row tracking on, event columns)",
                        self.ref.text)
            self.spark.sql(f"ALTER TABLE {sql_name(self.spark, self.ref)} "
                           f"SET TBLPROPERTIES ({_properties()})")

    def _unavailable(self, what: str, exc: BaseException) -> LockUnavailable:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        return LockUnavailable(f"cannot take the run lock in {self.ref.text}: {what}: "
                               f"{type(exc).__name__}: {first}")

    # -- events -----------------------------------------------------------------

    def _append(self, event: str, takes_over: Mapping[str, str] | None = None) -> None:
        """Append one `event` row per cluster of the run (one commit)."""
        now = utc_now()
        written = int(now.timestamp())
        expires = written + (0 if event == RELEASE else self.ttl)
        me = self.me
        rows = [(name, self.run_id, self.command, me.host, me.pid, now,
                 dt.datetime.fromtimestamp(expires, dt.UTC).replace(tzinfo=None), expires,
                 event == RELEASE, event, written, (takes_over or {}).get(name), me.boot_id,
                 me.pid_namespace, me.start_ticks)
                for name in self.names]
        append(self.spark.createDataFrame(rows, LOCKS), self.ref, schema=LOCKS,
               properties=LOCK_TABLE_PROPERTIES)

    def _events(self) -> list[Event]:
        """Every event on our clusters, with its commit version."""
        rows = (load(self.spark, self.ref)
                .where(F.col("name").isin(*self.names))
                .select("*", F.col("_metadata.row_commit_version").alias("version"))
                .collect())
        return [Event.of(r.asDict()) for r in rows]

    def _standing(self) -> Standing:
        return standing(leases(self._events(), self.skew), self.names, self.run_id,
                        time.time(), self.skew)

    # -- taking, keeping, giving back ---------------------------------------------

    def acquire(self) -> None:
        """Take every cluster's lock or raise LockHeld naming the holder (LockUnavailable
        when the table or a write fails); never waits.

        One append (the claim) and one read back; a holder whose process is gone from
        this host costs a second claim that names it, and a second read.
        """
        try:
            self._ensure_table()
            claimed = time.monotonic()
            # Marked before the append: an append that fails may still have landed, and a
            # release of a claim that never landed ends nothing of anyone's.
            self._claimed = True
            self._append(CLAIM)
            now = self._standing()
            if now.stale and not now.others:
                for lease in now.stale:
                    log.warning("taking over the lock on %s from run %s (pid %d on %s is "
                                "gone)", lease.name, lease.run_id, lease.holder.pid,
                                lease.holder.host)
                claimed = time.monotonic()
                self._append(CLAIM, {lease.name: lease.run_id for lease in now.stale})
                now = self._standing()
        except (LockUnavailable, LockHeld):
            self._give_back()
            raise
        except PySparkException as exc:
            self._give_back()
            raise self._unavailable("the claim could not be written or read back",
                                    exc) from exc
        except BaseException:
            # Whatever else went wrong (an interrupt, a driver-side error), the claim is
            # given back rather than left standing until it expires.
            self._give_back()
            raise
        if now.others:
            self._give_back()
            raise LockHeld(_held_message(now.others))
        if not now.held:
            self._give_back()
            raise LockUnavailable(
                f"cannot take the run lock in {self.ref.text}: the read-back shows no live "
                f"claim of run {self.run_id} on cluster(s) {', '.join(now.missing)}")
        self._held_until = claimed + self.ttl
        self._heartbeat = threading.Thread(target=self._beat, name="run-lock-heartbeat",
                                           daemon=True)
        self._heartbeat.start()

    def renew(self) -> None:
        """One heartbeat: extend our leases, read them back; sets `lost` when another run
        holds a cluster, or our lease is gone or expired, or it could not be renewed
        before it expired."""
        attempted = time.monotonic()
        try:
            self._append(RENEW)
            now = self._standing()
        except Exception as exc:
            log.warning("lock heartbeat failed (%s); retrying", type(exc).__name__)
            if self._held_until <= time.monotonic() + 1:
                self.lost = (f"the lock in {self.ref.text} could not be renewed before it "
                             f"expired ({type(exc).__name__})")
            return
        self.lost = self.lost or _why_lost(now, self.run_id, self.ref.text)
        if self.lost is None:
            self._held_until = attempted + self.ttl

    def check_held(self, read_back: bool = True) -> None:
        """Raise LockUnavailable unless the run still holds its lock (fencing): the heartbeat
        has not lost it, the last renewal is younger than the TTL by this process's own
        monotonic clock, and, with `read_back`, the lock log now shows our live lease on
        every cluster (before each phase that changes Kafka; between waves of requests the
        heartbeat's word is taken)."""
        if self.lost is None and time.monotonic() >= self._held_until:
            self.lost = (f"the lease in {self.ref.text} was not renewed within its TTL of "
                         f"{self.ttl}s")
        if self.lost is None and read_back:
            self.lost = _why_lost(self._standing(), self.run_id, self.ref.text)
        if self.lost is not None:
            raise LockUnavailable(f"lock lost: {self.lost}")

    def _beat(self) -> None:
        interval = max(1.0, self.ttl / 3)
        while not self._stop.wait(interval):
            self.renew()
            if self.lost is not None:
                log.error("run %s: %s; no further change is started", self.run_id, self.lost)
                return

    def release(self) -> None:
        """Give the locks back (also when the run failed): a release event ends our leases
        and leaves anyone else's alone."""
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=30)
        self._give_back()

    def _give_back(self) -> None:
        """Append the release, tried again with a growing pause (`retry.GIVE_BACK`); when
        every attempt fails the lease expires by itself."""
        if not self._claimed:
            return

        def failed(attempt: int, exc: BaseException) -> None:
            log.warning("releasing the lock failed (attempt %d: %s: %s)", attempt,
                        type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc)
                        else "")

        try:
            retry.tries(retry.GIVE_BACK, lambda: self._append(RELEASE),
                        lambda exc: isinstance(exc, Exception), failed=failed)
        except Exception:
            log.error("could not release the lock; it expires by itself after %ss", self.ttl)
            return
        self._claimed = False


def _why_lost(now: Standing, run_id: str, table: str) -> str | None:
    """Why the run no longer holds its lock, or None."""
    if now.others:
        return "taken over: " + _held_message(now.others)
    if now.missing:
        return (f"the claim of run {run_id} on cluster(s) {', '.join(now.missing)} is gone "
                f"from {table} or expired")
    return None


def _held_message(held: Sequence[Lease]) -> str:
    def until(h: Lease) -> str:
        return f"{dt.datetime.fromtimestamp(h.expires_epoch, dt.UTC):%Y-%m-%d %H:%M:%S} UTC"

    parts = [f"cluster {h.name} is locked by {h.command} run {h.run_id} (pid "
             f"{h.holder.pid} on {h.holder.host}, until {until(h)} unless renewed)"
             for h in sorted(held, key=lambda h: h.name)]
    return "another run holds the lock: " + "; ".join(parts)
