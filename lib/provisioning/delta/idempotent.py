"""Appends that land once, whatever fails, and read nothing back unless one fails.

The audit's, runs', snapshots' and violations' appends of a run must each land once: an
append retried after an error raised once its commit was written must not write its rows
twice. Delta's own idempotent write (the `txnAppId` and `txnVersion` options) does it by
looking up the table's transaction ids before every append, and that lookup rebuilds the
table's state at each new version: Spark jobs of their own, 0.5 to 0.8 s of a small append
on a warm classic session (BENCHMARKS.md: What one commit costs), paid by every append of
every run. Here the guarantee costs nothing until an append fails:

- every commit names its transaction in its `userMetadata` (`MARK_KEY`: "<app id>:<version>",
  the app id naming the table's role and the run), which DESCRIBE HISTORY shows;
- an append of a transaction this process has committed already is skipped;
- an append that raised anything but Delta's conflicts (which Delta raises before it writes
  a commit) may have landed. On classic Spark its call returned when the driver was done
  with it. On Spark Connect the server may still be running it after its client gave up,
  so it is interrupted (by its own operation tag, which cancels its Spark jobs) and
  fenced: a metadata commit of the table (`FENCE_PROPERTY` set to the transaction's mark),
  or the table made when it is missing, which makes Delta fail any commit whose
  transaction read the table before it (MetadataChangedException, ProtocolChangedException).
  Then the table's latest commits are read for the mark: found, the append is done; not
  found, it is sent once more.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from provisioning.delta.tables import (
    TABLE_PROPERTIES,
    TableRef,
    append,
    create_table,
    is_conflict,
    latest_commit,
    not_a_table,
    retry_conflicts,
    sql_name,
    sql_target,
)
from provisioning.session import APPEND_TAG, is_connect, job_label

log = logging.getLogger(__name__)

# The `userMetadata` key of an append's transaction.
MARK_KEY = "provisioning.txn"
# The table property a fence sets (to the mark of the append it fences for).
FENCE_PROPERTY = "provisioning.fence"
# How many of a table's latest commits are read for a mark (other runs append meanwhile).
HISTORY_SEARCHED = 200


@dataclass(frozen=True)
class Transaction:
    """One append's identity in its table: the app id names the table's role and the run,
    the version the append's number in the run."""

    app_id: str
    version: int

    @property
    def mark(self) -> str:
        return f"{self.app_id}:{self.version}"


def marked(metadata: str | None, txn: Transaction) -> bool:
    """Whether a commit's `userMetadata` carries `txn`'s mark."""
    try:
        found = json.loads(metadata or "")
    except ValueError:
        return False
    return isinstance(found, dict) and found.get(MARK_KEY) == txn.mark


# (table, app id, version) of every append this process committed.
_committed: set[tuple[str, str, int]] = set()
_committed_lock = threading.Lock()


def append_once(df: DataFrame, ref: TableRef, txn: Transaction, *,
                user_metadata: Mapping[str, Any] | None = None,
                schema: StructType | None = None, attempts: int = 5) -> None:
    """`tables.append` of `df` that lands once (the module docstring says how)."""
    key = (ref.text, txn.app_id, txn.version)
    with _committed_lock:
        if key in _committed:
            log.info("%s: %s was committed already; not appended again", ref.text, txn.mark)
            return
    spark = df.sparkSession
    metadata = {**(user_metadata or {}), MARK_KEY: txn.mark}
    tag = f"{APPEND_TAG}{txn.mark}"
    for sent in (1, 2):
        try:
            with job_label(spark, tag):
                append(df, ref, attempts=attempts, user_metadata=metadata, schema=schema)
            break
        except Exception as exc:
            if sent == 2 or is_conflict(exc):  # a conflict is raised before the commit
                raise
            log.warning("appending %s to %s failed (%s); looking for its commit", txn.mark,
                        ref.text, type(exc).__name__)
            if is_connect(spark):
                fence(spark, ref, tag, txn, schema or df.schema)
            if landed(spark, ref, txn):
                log.warning("%s: %s had landed before the error", ref.text, txn.mark)
                break
            log.warning("%s: %s had not landed; sending it again", ref.text, txn.mark)
    with _committed_lock:
        _committed.add(key)


def fence(spark: SparkSession, ref: TableRef, tag: str, txn: Transaction,
          schema: StructType) -> None:
    """Make sure no operation tagged `tag` commits to `ref` from now on: interrupt those
    still running, then commit a metadata change of the table (or make it, when missing),
    which fails any commit that read the table before it."""
    try:
        stopped = spark.interruptTag(tag)
    except PySparkException as exc:
        log.warning("could not interrupt %s: %s", tag, exc)
        stopped = []
    log.info("fencing %s after %s (%d operation(s) interrupted)", ref.text, txn.mark,
             len(stopped))
    if latest_commit(spark, ref) is None:
        try:
            create_table(spark, schema, ref, TABLE_PROPERTIES)
        except Exception as exc:
            if not is_conflict(exc):  # made meanwhile: that commit fences it as well
                raise
        return
    statement = (f"ALTER TABLE {sql_name(spark, ref)} SET TBLPROPERTIES "
                 f"('{FENCE_PROPERTY}' = '{txn.mark}')")
    retry_conflicts(lambda: spark.sql(statement), ref)


def landed(spark: SparkSession, ref: TableRef, txn: Transaction) -> bool:
    """Whether one of the table's latest commits carries `txn`'s mark."""
    try:
        rows = spark.sql(f"DESCRIBE HISTORY {sql_target(spark, ref)} "
                         f"LIMIT {HISTORY_SEARCHED}").select("userMetadata").collect()
    except PySparkException as exc:
        if not_a_table(exc):
            return False
        raise
    return any(marked(r["userMetadata"], txn) for r in rows)
