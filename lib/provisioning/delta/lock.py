"""A per-cluster run lock kept in a Delta table, so two applies never change one cluster at once.

Acquiring is a MERGE (which Delta serializes against concurrent writers of
the table) followed by a read-back: a run proceeds only when the read-back shows
its own live claim on every cluster, and should two acquisitions ever both commit,
the lower run id wins and the other backs off, so at most one run proceeds. A
MERGE that fails for any reason but a concurrent commit, or a table that is not a
lock table, stops the run (LockUnavailable) naming the table and the cause.

A lock expires unless its holder's heartbeat renews it (every third of the TTL),
and a holder on this host whose process is gone is stale at once: a killed driver
never blocks the next run for long. The heartbeat reads its claim back after each
renewal; when it cannot renew before the claim expires, or another run holds the
cluster, the lock is `lost` and the run starts no further phase that changes Kafka
(`check_held` raises).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from provisioning.delta.tables import (
    TableRef,
    append,
    delta_table,
    is_conflict,
    read_table,
    table_exists,
)
from provisioning.errors import LockHeld, LockUnavailable
from provisioning.processes import process_exists
from provisioning.results import utc_now
from schemas import LOCKS, column_names

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Holder:
    name: str
    run_id: str
    command: str
    host: str
    pid: int
    expires_epoch: int

    @classmethod
    def of(cls, row: Row) -> Holder:
        return cls(row["name"], row["run_id"], row["command"], row["host"], row["pid"],
                   row["expires_epoch"])

    def live(self, now: float) -> bool:
        return self.expires_epoch > now and _alive_here(self.host, self.pid)


def _alive_here(host: str, pid: int) -> bool:
    """False only when the holder ran on this host and its process is gone."""
    return host != socket.gethostname() or process_exists(pid)


class RunLock:
    """The lock on a set of clusters for one run."""

    def __init__(self, spark: SparkSession, table: str, clusters: Sequence[str], run_id: str,
                 command: str, ttl_seconds: int) -> None:
        self.spark = spark
        self.ref = TableRef(table)
        self.names = sorted(set(clusters))
        self.run_id = run_id
        self.command = command
        self.ttl = dt.timedelta(seconds=ttl_seconds)
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        # Why the lock was lost while the run held it (None: still held).
        self.lost: str | None = None

    # -- reading --------------------------------------------------------------

    def _claims(self) -> list[Holder]:
        """Unreleased rows for our clusters, whoever wrote them (the table exists)."""
        rows = (read_table(self.spark, self.ref)
                .where(F.col("name").isin(*self.names) & ~F.col("released")).collect())
        return [Holder.of(r) for r in rows]

    # -- writing --------------------------------------------------------------

    def _source(self, released: bool) -> DataFrame:
        now = utc_now()
        expires = now + self.ttl
        rows = [(name, self.run_id, self.command, self.host, self.pid, now, expires,
                 int(expires.timestamp()), released) for name in self.names]
        return self.spark.createDataFrame(rows, LOCKS)

    def _merge(self, released: bool, only_mine: bool,
               stale: Sequence[Holder] = ()) -> None:
        merge = delta_table(self.spark, self.ref).alias("t").merge(
            self._source(released).alias("s"), "t.name = s.name")
        values: dict[str, str | Column] = {c: f"s.{c}" for c in column_names(LOCKS)}
        if only_mine:
            merge.whenMatchedUpdate(condition="t.run_id = s.run_id", set=values).execute()
            return
        free = (f"t.released OR t.expires_epoch < {int(time.time())} OR t.run_id = s.run_id"
                + "".join(f" OR t.run_id = '{h.run_id}'" for h in stale))
        merge.whenMatchedUpdate(condition=free, set=values).whenNotMatchedInsertAll().execute()

    def _create_table(self) -> bool:
        """Create the table when missing; True when it already existed (and is a lock
        table: LockUnavailable otherwise)."""
        if table_exists(self.spark, self.ref):
            self._check_schema()
            return True
        try:
            append(self.spark.createDataFrame([], LOCKS), self.ref)
        except PySparkException as exc:
            if not table_exists(self.spark, self.ref):
                raise self._unavailable("it could not be created", exc) from exc
        return False

    def _check_schema(self) -> None:
        have = {f.name: f.dataType.simpleString()
                for f in read_table(self.spark, self.ref).schema.fields}
        wrong = [f"{f.name} ({f.dataType.simpleString()})" for f in LOCKS.fields
                 if have.get(f.name) != f.dataType.simpleString()]
        if wrong:
            raise LockUnavailable(
                f"cannot take the run lock: {self.ref.text} is not a lock table (missing or "
                f"mistyped columns: {', '.join(wrong)}); point tables.locks at a table of "
                "its own")

    def _unavailable(self, what: str, exc: BaseException) -> LockUnavailable:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        return LockUnavailable(f"cannot take the run lock in {self.ref.text}: {what}: "
                               f"{type(exc).__name__}: {first}")

    def acquire(self) -> None:
        """Take every cluster's lock or raise LockHeld naming the holder (LockUnavailable
        when the table or a MERGE fails); never waits.

        One read (live holders, stale claims), one MERGE, one read-back.
        """
        claims = self._claims() if self._create_table() else []
        now = time.time()
        others = [h for h in claims if h.run_id != self.run_id]
        held = [h for h in others if h.live(now)]
        if held:
            raise LockHeld(_held_message(held))
        stale = [h for h in others if not h.live(now)]
        for h in stale:
            log.warning("taking over the lock on %s from run %s (pid %d on %s is gone)",
                        h.name, h.run_id, h.pid, h.host)
        try:
            self._merge(released=False, only_mine=False, stale=stale)
        except PySparkException as exc:
            if not is_conflict(exc):
                raise self._unavailable("the MERGE that claims it failed", exc) from exc
            # A concurrent acquisition committed first; the read-back names it.
            log.info("lock MERGE conflicted: %s", type(exc).__name__)
        self._check_owned()
        self._heartbeat = threading.Thread(target=self._beat, name="run-lock-heartbeat",
                                           daemon=True)
        self._heartbeat.start()

    def _owners(self) -> tuple[list[str], list[Holder]]:
        """Our clusters without a live claim of ours, and the live claims of other runs that
        come before ours (lower run id) or stand alone."""
        now = time.time()
        owners: dict[str, list[Holder]] = {}
        for h in self._claims():
            if h.live(now):
                owners.setdefault(h.name, []).append(h)
        unclaimed: list[str] = []
        others: list[Holder] = []
        for name in self.names:
            claims = sorted(owners.get(name, []), key=lambda h: h.run_id)
            if not any(c.run_id == self.run_id for c in claims):
                unclaimed.append(name)
            if claims and claims[0].run_id != self.run_id:
                others.extend(c for c in claims if c.run_id != self.run_id)
        return unclaimed, others

    def _check_owned(self) -> None:
        unclaimed, others = self._owners()
        if others:
            self.release()
            raise LockHeld(_held_message(others))
        if unclaimed:
            self.release()
            raise LockUnavailable(
                f"cannot take the run lock in {self.ref.text}: the read-back shows no live "
                f"claim of run {self.run_id} on cluster(s) {', '.join(unclaimed)}")

    def renew(self) -> None:
        """One heartbeat: extend our claims, read them back; sets `lost` when another run
        holds a cluster or our claim is gone or expired."""
        expires = time.time() + self.ttl.total_seconds()
        try:
            self._merge(released=False, only_mine=True)
        except Exception as exc:
            log.warning("lock heartbeat failed (%s); retrying", type(exc).__name__)
            if self._last_renewed + self.ttl.total_seconds() <= time.time() + 1:
                self.lost = (f"the lock in {self.ref.text} could not be renewed before it "
                             f"expired ({type(exc).__name__})")
            return
        self.lost = self._why_lost()
        if self.lost is None:
            self._last_renewed = expires - self.ttl.total_seconds()

    _last_renewed: float = 0.0

    def _why_lost(self) -> str | None:
        """Read the claims back: why the run no longer holds its lock, or None."""
        unclaimed, others = self._owners()
        if others:
            return "taken over: " + _held_message(others)
        if unclaimed:
            return (f"the claim of run {self.run_id} on cluster(s) {', '.join(unclaimed)} "
                    f"is gone from {self.ref.text}")
        return None

    def check_held(self) -> None:
        """Raise LockUnavailable unless the run still holds its lock: the heartbeat has not
        lost it and a read-back now shows our live claim on every cluster, no one else's
        (fencing: called before each phase that changes Kafka)."""
        if self.lost is None:
            self.lost = self._why_lost()
        if self.lost is not None:
            raise LockUnavailable(f"lock lost: {self.lost}")

    def _beat(self) -> None:
        self._last_renewed = time.time()
        interval = max(1.0, self.ttl.total_seconds() / 3)
        while not self._stop.wait(interval):
            self.renew()
            if self.lost is not None:
                log.error("run %s: %s; no further change is started", self.run_id, self.lost)
                return

    def release(self) -> None:
        """Give the locks back (also when the run failed)."""
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=30)
        for attempt in range(5):
            try:
                self._merge(released=True, only_mine=True)
                return
            except PySparkException as exc:
                log.warning("releasing the lock failed (attempt %d: %s)", attempt + 1,
                            type(exc).__name__)
        log.error("could not release the lock; it expires by itself after %s", self.ttl)


def _held_message(held: Sequence[Holder]) -> str:
    def until(h: Holder) -> str:
        return f"{dt.datetime.fromtimestamp(h.expires_epoch, dt.UTC):%Y-%m-%d %H:%M:%S} UTC"

    parts = [f"cluster {h.name} is locked by {h.command} run {h.run_id} (pid {h.pid} on "
             f"{h.host}, until {until(h)} unless renewed)"
             for h in sorted(held, key=lambda h: h.name)]
    return "another run holds the lock: " + "; ".join(parts)
