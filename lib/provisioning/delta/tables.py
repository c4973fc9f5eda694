"""Delta tables by path or catalog name: read at a version, write, append idempotently, retry
conflicts. Every write of the job goes through `write`. Only DataFrame and SQL APIs, which
classic Spark and Spark Connect share."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from provisioning.errors import UsageError

log = logging.getLogger(__name__)

# Delta's optimistic concurrency errors that a blind append can simply try again.
_RETRYABLE = re.compile(
    r"ConcurrentAppendException|ConcurrentWriteException|ProtocolChangedException"
    r"|MetadataChangedException|ConcurrentTransactionException|DELTA_CONCURRENT"
)


@dataclass(frozen=True)
class TableRef:
    """A Delta table given as a path or as a catalog name."""

    text: str

    @property
    def is_path(self) -> bool:
        return "/" in self.text or "\\" in self.text or "://" in self.text

    def sql(self) -> str:
        return f"delta.`{self.text}`" if self.is_path else self.text


# What Delta answers when a path holds no Delta table (or nothing at all).
_NOT_DELTA = ("DELTA_TABLE_ONLY_OPERATION", "DELTA_MISSING_DELTA_TABLE", "PATH_NOT_FOUND",
              "TABLE_OR_VIEW_NOT_FOUND", "DELTA_TABLE_NOT_FOUND")


def _not_a_table(exc: PySparkException) -> bool:
    condition = exc.getCondition() or ""
    return condition in _NOT_DELTA or any(c in str(exc)[:300] for c in _NOT_DELTA)


def table_exists(spark: SparkSession, ref: TableRef) -> bool:
    """Whether `ref` is a Delta table (a path) or names a table in the catalog."""
    if not ref.is_path:
        return bool(spark.catalog.tableExists(ref.text))
    return table_version(spark, ref) is not None


def read_table(spark: SparkSession, ref: TableRef, version: int | None = None) -> DataFrame:
    """The table (at `version` when given); a missing table is a usage error naming it."""
    if version is None and not table_exists(spark, ref):
        raise UsageError(f"table {ref.text} does not exist or is not a Delta table")
    return load(spark, ref, version)


def load(spark: SparkSession, ref: TableRef, version: int | None = None) -> DataFrame:
    """The table (at `version` when given), unchecked: for callers that know it exists."""
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return reader.load(ref.text) if ref.is_path else reader.table(ref.text)


def table_schema(spark: SparkSession, ref: TableRef) -> StructType | None:
    """The table's columns; None when it is not a Delta table (one analysis, no job)."""
    try:
        return load(spark, ref).schema
    except PySparkException as exc:
        if _not_a_table(exc):
            return None
        raise


def table_version(spark: SparkSession, ref: TableRef) -> int | None:
    """The latest committed version of the table; None when it is not a Delta table.

    DESCRIBE HISTORY, which classic Spark and Spark Connect both run (Delta's Python
    DeltaTable needs Delta's own Connect plugin on a Connect server).
    """
    try:
        row = spark.sql(f"DESCRIBE HISTORY {ref.sql()} LIMIT 1").select("version").first()
    except PySparkException as exc:
        if _not_a_table(exc):
            return None
        raise
    return None if row is None else int(row["version"])


def append(df: DataFrame, ref: TableRef, *, committed: Callable[[], bool] | None = None,
           attempts: int = 5) -> None:
    """Append `df` as one commit, creating the table on first use; retry on conflicts.

    Before a retry, `committed()` is asked whether the earlier attempt's rows
    did land after all (an error raised after the commit), so a retry never
    writes them twice. `df` must be materialized (no Kafka I/O in its lineage),
    because a retry recomputes it.
    """
    # Tables written by an older release gain the columns added since then.
    retry_conflicts(lambda: write(df, ref, "append", {"mergeSchema": "true"}),
                    ref, attempts, done=committed)


def is_conflict(exc: BaseException) -> bool:
    """Whether `exc` is Delta's optimistic-concurrency conflict (another writer committed)."""
    return bool(_RETRYABLE.search(str(exc)))


def retry_conflicts(action: Callable[[], object], ref: TableRef, attempts: int = 5,
                    done: Callable[[], bool] | None = None) -> None:
    """Run `action` (one Delta commit to `ref`), again on an optimistic-concurrency conflict.

    Before a retry, `done()` (when given) is asked whether the failed attempt committed
    after all; then nothing is retried.
    """
    for attempt in range(1, attempts + 1):
        if attempt > 1 and done is not None and done():
            log.info("the change to %s was committed by the previous attempt", ref.text)
            return
        try:
            action()
            return
        except PySparkException as exc:
            if attempt == attempts or not is_conflict(exc):
                raise
            log.warning("Delta commit conflict on %s (attempt %d/%d), retrying",
                        ref.text, attempt, attempts)
            time.sleep(0.2 * attempt)


def write(df: DataFrame, ref: TableRef, mode: str,
          options: Mapping[str, str] | None = None) -> None:
    """Write `df` to the table as one commit (`mode` append, overwrite, error...)."""
    writer = df.write.format("delta").mode(mode)
    for k, v in (options or {}).items():
        writer = writer.option(k, v)
    if ref.is_path:
        writer.save(ref.text)
    else:
        writer.saveAsTable(ref.text)
