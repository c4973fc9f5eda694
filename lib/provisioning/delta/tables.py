"""Delta tables by path or catalog name: read at a version, write, append, retry
conflicts. Every write of the job goes through `write`. Only DataFrame and SQL APIs, which
classic Spark and Spark Connect share.

Paths. A table path is given to Spark as written, except a relative one in classic client
mode, which is resolved here (`spark_path`) against the directory the job runs from; in
cluster deploy mode a relative path is refused (the driver runs in a directory of the
cluster's), and on Spark Connect it is resolved by the server, as Spark resolves any
relative path. SQL never names a relative ``delta.`path` `` (Delta's catalog reads that form
as a path only when it is absolute): a version comes from ``DESCRIBE HISTORY '<path>'``,
and a statement that needs a table identifier gets the table's own location (`sql_name`).
`TableRef.text` stays as written: it is what the audit records (`source_table`).

Types. Every write casts each column to its type's plain DDL name (`plain_types`): through
Spark Connect a string column can otherwise reach the Delta log as `string collate
UTF8_BINARY`, which no other Delta reader accepts.

Creation. A table of the job is made by its first append (`append`: the table, its
properties and its first rows in one commit), except the few a run must find in place
(`run.commands.job_tables`: the tables a command reads before it writes them, and a lock
log named in the catalog; a lock log at a path is made by the first claim, its properties
given to that append, `append(properties=...)`). Those are made in one place,
`prepare_tables`: a run starts it as soon as it has a session, and each missing table is
created on a helper thread of its own while the run reads its manifests and the clusters.
A read or write of a table being created waits for its creation; one that failed leaves
the table to the first write.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from provisioning import retry
from provisioning.errors import UsageError
from provisioning.session import helper, is_connect, profile

log = logging.getLogger(__name__)

# Delta's optimistic concurrency errors that a blind append can simply try again.
_RETRYABLE = re.compile(
    r"ConcurrentAppendException|ConcurrentWriteException|ProtocolChangedException"
    r"|MetadataChangedException|ConcurrentTransactionException|DELTA_CONCURRENT"
)


@dataclass(frozen=True)
class TableRef:
    """A Delta table given as a path or as a catalog name (`text`, as written)."""

    text: str

    @property
    def is_path(self) -> bool:
        return "/" in self.text or "\\" in self.text or "://" in self.text

    @property
    def name(self) -> str:
        """The table's last name: a path's last part, a catalog name's table."""
        return re.split(r"[/\\.]", self.text.rstrip("/\\"))[-1] or self.text

    @property
    def is_relative(self) -> bool:
        """A path with neither a scheme nor a leading slash."""
        return (self.is_path and ":" not in self.text.split("/", 1)[0]
                and not os.path.isabs(self.text))


class RelativePathRefused(UsageError):
    """A relative table path where the job has no directory to resolve it against."""


def spark_path(spark: SparkSession, ref: TableRef) -> str:
    """The path Spark is given for the path table `ref` (the one place relative paths are
    resolved; see the module docstring)."""
    if not ref.is_relative or is_connect(spark):
        return ref.text
    if (spark.conf.get("spark.submit.deployMode", "client") or "client") == "cluster":
        raise RelativePathRefused(
            f"table path {ref.text!r} is relative, and in cluster deploy mode the driver runs "
            "in a directory of the cluster's: give an absolute path, a URI (s3://..., "
            "hdfs://...) or a catalog table name")
    return os.path.abspath(ref.text)


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_target(spark: SparkSession, ref: TableRef) -> str:
    """How a Delta SQL statement that accepts a path string (DESCRIBE HISTORY, DESCRIBE
    DETAIL, OPTIMIZE, VACUUM) names the table: the quoted path, or the catalog name."""
    return _quoted(spark_path(spark, ref)) if ref.is_path else ref.text


def sql_name(spark: SparkSession, ref: TableRef) -> str:
    """A table identifier for any SQL statement (ALTER, DELETE, MERGE, DESCRIBE TABLE): the
    catalog name, or ``delta.`location` `` with the existing table's own location (a
    relative path on Spark Connect is asked of the server)."""
    if not ref.is_path:
        return ref.text
    path = spark_path(spark, ref)
    if TableRef(path).is_relative:
        detail = spark.sql(f"DESCRIBE DETAIL {_quoted(path)}").select("location").first()
        path = str(detail["location"]) if detail is not None else path
    return "delta.`" + path.replace("`", "``") + "`"


# What Delta answers when a path holds no Delta table (or nothing at all).
_NOT_DELTA = ("DELTA_TABLE_ONLY_OPERATION", "DELTA_MISSING_DELTA_TABLE", "PATH_NOT_FOUND",
              "TABLE_OR_VIEW_NOT_FOUND", "DELTA_TABLE_NOT_FOUND")


def not_a_table(exc: PySparkException) -> bool:
    condition = exc.getCondition() or ""
    return condition in _NOT_DELTA or any(c in str(exc)[:300] for c in _NOT_DELTA)


# Creations `prepare_tables` started and that have not ended: (session, table) -> future.
_creating: dict[tuple[int, str], Future[None]] = {}
_creating_lock = threading.Lock()
# Set on the threads that create a table: their own reads and writes never wait.
_creator = threading.local()


def _settled(spark: SparkSession, ref: TableRef) -> None:
    """Return once a creation of `ref` that `prepare_tables` started has ended (at once when
    none is under way); its failure is left to the caller's own read or write."""
    if getattr(_creator, "creating", False):
        return
    with _creating_lock:
        creating = _creating.get((id(spark), ref.text))
    if creating is not None and creating.exception() is not None:
        log.debug("creating %s failed beforehand: %s", ref.text, creating.exception())


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
    _settled(spark, ref)
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return reader.load(spark_path(spark, ref)) if ref.is_path else reader.table(ref.text)


def table_schema(spark: SparkSession, ref: TableRef) -> StructType | None:
    """The table's columns; None when it is not a Delta table (one analysis, no job)."""
    try:
        return load(spark, ref).schema
    except PySparkException as exc:
        if not_a_table(exc):
            return None
        raise


@dataclass(frozen=True)
class Commit:
    """A table's latest commit: its `version`, and `marks` that tell it from the same version
    of another table at the same path or name (a table dropped and made again): its
    timestamp, operation and metrics, from the same history row."""

    version: int
    marks: str


def latest_commit(spark: SparkSession, ref: TableRef) -> Commit | None:
    """The latest commit of the table; None when it is not a Delta table.

    DESCRIBE HISTORY, which classic Spark and Spark Connect both run (Delta's Python
    DeltaTable needs Delta's own Connect plugin on a Connect server), reading one row.
    """
    _settled(spark, ref)
    try:
        row = spark.sql(f"DESCRIBE HISTORY {sql_target(spark, ref)} LIMIT 1").select(
            "version",
            F.to_json(F.struct(F.unix_micros("timestamp").alias("timestamp"), "operation",
                               "operationMetrics")).alias("marks"),
        ).first()
    except PySparkException as exc:
        if not_a_table(exc):
            return None
        raise
    return None if row is None else Commit(int(row["version"]), str(row["marks"]))


def table_version(spark: SparkSession, ref: TableRef) -> int | None:
    """The latest committed version of the table; None when it is not a Delta table."""
    commit = latest_commit(spark, ref)
    return None if commit is None else commit.version


def last_commit(spark: SparkSession, ref: TableRef) -> tuple[int, str | None] | None:
    """The latest commit's version and `userMetadata`; None when it is not a Delta table."""
    _settled(spark, ref)
    try:
        row = spark.sql(f"DESCRIBE HISTORY {sql_target(spark, ref)} LIMIT 1"
                        ).select("version", "userMetadata").first()
    except PySparkException as exc:
        if not_a_table(exc):
            return None
        raise
    return None if row is None else (int(row["version"]), row["userMetadata"])


def collated_columns(spark: SparkSession, ref: TableRef) -> list[str]:
    """The columns whose type in the table's schema carries a collation (`string collate
    UTF8_BINARY`, written through Spark Connect by earlier releases), by name."""
    described = spark.sql(f"DESCRIBE TABLE {sql_name(spark, ref)}").collect()
    found = []
    for row in described:
        name = row["col_name"] or ""
        if not name or name.startswith("#"):
            break  # partitioning and detail sections follow the columns
        if " collate " in (row["data_type"] or "").lower():
            found.append(name)
    return found


def plain_types(df: DataFrame, schema: StructType | None = None) -> DataFrame:
    """`df` with every column cast to its type's DDL name: the same values and types, written
    to Delta as plain types whichever way Spark built them (see the module docstring).

    schema: `df`'s schema when the caller built it with one (on Spark Connect, asking the
      server for it is a request)."""
    return df.select(*[F.col(f"`{f.name}`").cast(f.dataType.simpleString()).alias(f.name)
                       for f in (schema or df.schema).fields])


# How long a table keeps Delta's transaction ids (txnAppId / txnVersion) in its log: earlier
# releases wrote one with every append (`delta.idempotent` says why no longer), and a
# user's own writer may.
TRANSACTION_RETENTION = "interval 7 days"
# How many commits of a job's table come between two of its checkpoints. Delta writes one
# in the commit that reaches the interval (by default every tenth, 1.0 to 1.5 s of that
# commit), so a run's commits would pay one every few runs; the job's tables take one only
# every thousandth commit, and `maintain` writes one after its own commits
# (`delta.maintenance`), which keeps the log a reader replays short.
CHECKPOINT_INTERVAL = "1000"
TABLE_PROPERTIES = {"delta.setTransactionRetentionDuration": TRANSACTION_RETENTION,
                    "delta.checkpointInterval": CHECKPOINT_INTERVAL}


def append(df: DataFrame, ref: TableRef, *, attempts: int = 5,
           user_metadata: Mapping[str, Any] | None = None,
           schema: StructType | None = None, properties: Mapping[str, str] | None = None,
           options: Mapping[str, str] | None = None) -> None:
    """Append `df` as one commit, creating the table on first use (with TABLE_PROPERTIES
    and `properties`); retry on conflicts (`df` must be materialized, no Kafka I/O in its
    lineage: a retry recomputes it). `user_metadata` goes into the commit's `userMetadata`
    as a JSON object (DESCRIBE HISTORY shows it); `options`, more writer options.
    `schema`: `df`'s, when it was built with one (`plain_types`). An append that must land
    once whatever fails is `delta.idempotent.append_once`.
    """
    # Tables written by an older release gain the columns added since then; the properties
    # take effect only when the append creates the table.
    given = {"mergeSchema": "true", **TABLE_PROPERTIES, **(properties or {}),
             **(options or {})}
    if user_metadata:
        given["userMetadata"] = json.dumps(dict(user_metadata), sort_keys=True)
    retry_conflicts(lambda: write(df, ref, "append", given, schema), ref, attempts)


@dataclass(frozen=True)
class JobTable:
    """A table the job writes, as `prepare_tables` creates it when it is missing: its
    columns and its Delta table properties."""

    text: str
    schema: StructType
    properties: Mapping[str, str] = field(default_factory=lambda: dict(TABLE_PROPERTIES))


def prepare_tables(spark: SparkSession, tables: Sequence[JobTable]) -> list[Future[None]]:
    """Start creating each of `tables` that does not exist yet, each on a helper thread of
    its own (Delta commits to different tables do not conflict), and return their futures
    at once. Until a creation ends, reads and writes of that table wait for it (`_settled`);
    a creation that fails (another writer made the table first, no permission) is left to
    the first write."""
    started = []
    for table in tables:
        if not table.text:
            continue
        ref = TableRef(table.text)
        key = (id(spark), ref.text)

        def create(table: JobTable = table, ref: TableRef = ref,
                   key: tuple[int, str] = key) -> None:
            _creator.creating = True
            try:
                if table_schema(spark, ref) is None:
                    create_table(spark, table.schema, ref, table.properties)
                    log.info("created the table %s", ref.text)
            finally:
                with _creating_lock:
                    _creating.pop(key, None)

        with _creating_lock:
            if key in _creating:
                continue
            _creating[key] = future = helper(spark, f"create {ref.text}", create)
        started.append(future)
    return started


def create_table(spark: SparkSession, schema: StructType, ref: TableRef,
                 properties: Mapping[str, str]) -> None:
    """Create the empty table `ref` with `schema` and Delta table `properties` (one commit);
    a table created meanwhile by another writer is left as it is (the caller checks it)."""
    if ref.is_path:
        # Delta takes `delta.*` writer options as the new table's properties; a path table
        # is created this way whether the path is absolute or relative.
        write(spark.createDataFrame([], schema), ref, "append", dict(properties))
        return
    columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in schema.fields)
    listed = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
    spark.sql(f"CREATE TABLE IF NOT EXISTS {ref.text} ({columns}) USING delta"
              + (f" TBLPROPERTIES ({listed})" if listed else ""))


def is_conflict(exc: BaseException) -> bool:
    """Whether `exc` is Delta's optimistic-concurrency conflict (another writer committed)."""
    return bool(_RETRYABLE.search(str(exc)))


def retry_conflicts(action: Callable[[], object], ref: TableRef, attempts: int = 5) -> None:
    """Run `action` (one Delta commit to `ref`), again on an optimistic-concurrency conflict,
    up to `attempts` tries (`retry.COMMIT`).

    On classic Spark, PySpark raises Delta's conflicts (`io.delta.exceptions.*`, which it
    does not convert) as py4j's Py4JJavaError, not as a PySparkException: any exception
    that names a conflict is retried."""

    def again(attempt: int, _exc: BaseException) -> None:
        log.warning("Delta commit conflict on %s (attempt %d/%d), retrying",
                    ref.text, attempt, attempts)

    retry.tries(retry.COMMIT, action,
                lambda exc: isinstance(exc, Exception) and is_conflict(exc),
                attempts=attempts, again=again)


def write(df: DataFrame, ref: TableRef, mode: str,
          options: Mapping[str, str] | None = None, schema: StructType | None = None
          ) -> None:
    """Write `df` to the table as one commit (`mode` append, overwrite, error...), its
    columns in plain types (`schema`: `df`'s, when it was built with one)."""
    _settled(df.sparkSession, ref)
    started = time.time()
    writer = plain_types(df, schema).write.format("delta").mode(mode)
    for k, v in (options or {}).items():
        writer = writer.option(k, v)
    if ref.is_path:
        writer.save(spark_path(df.sparkSession, ref))
    else:
        writer.saveAsTable(ref.text)
    profile.commit(ref.name, started, time.time() - started)
