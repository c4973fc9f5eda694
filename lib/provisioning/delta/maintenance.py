"""Table maintenance for the job's own Delta tables: compaction, snapshot retention, VACUUM.

Every run appends one small commit per phase to the audit table, so a table written by
an hourly schedule gathers thousands of small files a month. `maintain` compacts them
(OPTIMIZE), drops snapshot rows older than the configured retention (never a cluster's
newest snapshot) and the lock events
of runs whose leases ended over a day ago, removes the files no version inside the
VACUUM retention still needs, and writes each table's checkpoint (the job's tables take one
only every CHECKPOINT_INTERVAL commits, so that a run's commits do not pay for it).

The audit and runs tables are never pruned: they are the record of what was changed.
The manifest tables are not the job's and are left alone (`report --topic` reads their
history by time travel).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from provisioning.conf import Conf
from provisioning.delta.tables import (
    CHECKPOINT_INTERVAL,
    TABLE_PROPERTIES,
    TableRef,
    collated_columns,
    load,
    retry_conflicts,
    sql_name,
    sql_target,
    table_exists,
)
from provisioning.errors import ProvisioningError, UsageError
from provisioning.results import TableMaintenance
from provisioning.session import job_label

# Lock events of runs whose leases ended longer ago than this are deleted by `maintain`.
LOCK_EVENTS_KEPT = dt.timedelta(days=1)


class MaintenanceFailed(ProvisioningError):
    """A Delta operation on one of the job's tables failed."""


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]



def _collect(spark: SparkSession, sql: str) -> None:
    spark.sql(sql).collect()


def _file_count(spark: SparkSession, ref: TableRef) -> int:
    row = spark.sql(f"DESCRIBE DETAIL {sql_target(spark, ref)}").select("numFiles").first()
    return int(row["numFiles"]) if row is not None else 0


def _last_metric(spark: SparkSession, ref: TableRef, operation: str, metric: str) -> int:
    """`metric` of the table's last commit when it was `operation` (0 otherwise: another
    writer committed since)."""
    last = spark.sql(f"DESCRIBE HISTORY {sql_target(spark, ref)} LIMIT 1").select(
        "operation", "operationMetrics").first()
    if last is None or last["operation"] != operation:
        return 0
    return int((last["operationMetrics"] or {}).get(metric, 0))


def _vacuumed(spark: SparkSession, ref: TableRef) -> int:
    """The files the table's newest VACUUM deleted, as its `VACUUM END` commit records them
    (one listing of the table's files, not a DRY RUN first)."""
    for entry in spark.sql(f"DESCRIBE HISTORY {sql_target(spark, ref)} LIMIT 10").select(
            "operation", "operationMetrics").collect():
        if entry["operation"] == "VACUUM END":
            return int((entry["operationMetrics"] or {}).get("numDeletedFiles", 0))
    return 0


def _delete_older_snapshots(spark: SparkSession, ref: TableRef, cutoff: dt.datetime) -> int:
    """Delete the snapshots taken before `cutoff`, but never a cluster's newest one: a run
    records a snapshot only when the cluster changed (`delta.snapshots`), so the newest one
    may be old and is still the cluster's state (`report --unmanaged` reads it)."""
    table = sql_name(spark, ref)
    sql = (f"MERGE INTO {table} t USING (SELECT cluster, run_id FROM ("
           f"SELECT cluster, run_id, max(snapshot_at) AS taken, row_number() OVER ("
           f"PARTITION BY cluster ORDER BY max(snapshot_at) DESC, run_id DESC) AS newest "
           f"FROM {table} GROUP BY cluster, run_id) "
           f"WHERE newest > 1 AND taken < TIMESTAMP '{cutoff:%Y-%m-%d %H:%M:%S}') s "
           "ON t.cluster = s.cluster AND t.run_id = s.run_id WHEN MATCHED THEN DELETE")
    retry_conflicts(functools.partial(_collect, spark, sql), ref)
    return _last_metric(spark, ref, "MERGE", "numTargetRowsDeleted")


def _delete_ended_leases(spark: SparkSession, ref: TableRef, cutoff: dt.datetime) -> int:
    """Delete the lock events of every run whose leases all ended before `cutoff`: no lease
    of theirs can hold a cluster again, so who holds what now is unchanged."""
    table = sql_name(spark, ref)
    sql = (f"MERGE INTO {table} t USING (SELECT run_id FROM {table} GROUP BY run_id "
           f"HAVING max(expires_epoch) < {int(cutoff.replace(tzinfo=dt.UTC).timestamp())}) s "
           "ON t.run_id = s.run_id WHEN MATCHED THEN DELETE")
    retry_conflicts(functools.partial(_collect, spark, sql), ref)
    return _last_metric(spark, ref, "MERGE", "numTargetRowsDeleted")


def _plain_schema(spark: SparkSession, ref: TableRef) -> list[str]:
    """Rewrite a table whose schema has collated string types (written through Spark Connect
    by earlier releases) with plain types, keeping every row and the table's properties; the
    columns retyped.

    REPLACE TABLE, because Delta sees `string collate UTF8_BINARY` and `string` as equal and
    keeps the old schema on an overwrite: a replacement writes the query's plain schema.
    """
    collated = collated_columns(spark, ref)
    if not collated:
        return collated
    table = sql_name(spark, ref)
    columns = ", ".join(f"CAST(`{f.name}` AS {f.dataType.simpleString()}) AS `{f.name}`"
                        for f in load(spark, ref).schema.fields)
    detail = spark.sql(f"DESCRIBE DETAIL {sql_target(spark, ref)}").select("properties").first()
    properties = dict(detail["properties"] or {}) if detail is not None else {}
    listed = ", ".join(f"'{k}' = '{v}'" for k, v in sorted(properties.items()))
    statement = (f"REPLACE TABLE {table} USING delta"
                 + (f" TBLPROPERTIES ({listed})" if listed else "")
                 + f" AS SELECT {columns} FROM {table}")
    # A concurrent append makes the replacement conflict: it reads the table again.
    retry_conflicts(functools.partial(_collect, spark, statement), ref)
    return collated


def _set_properties(spark: SparkSession, ref: TableRef,
                    wanted: Mapping[str, str] = TABLE_PROPERTIES) -> None:
    """Give a table created by an earlier release the properties the job's tables get when
    it creates them (TABLE_PROPERTIES: the transaction ids of idempotent writes expire, a
    checkpoint every CHECKPOINT_INTERVAL commits)."""
    detail = spark.sql(f"DESCRIBE DETAIL {sql_target(spark, ref)}").select("properties").first()
    have = dict(detail["properties"] or {}) if detail is not None else {}
    missing = {k: v for k, v in wanted.items() if have.get(k) != v}
    if missing:
        listed = ", ".join(f"'{k}' = '{v}'" for k, v in missing.items())
        retry_conflicts(functools.partial(
            _collect, spark, f"ALTER TABLE {sql_name(spark, ref)} SET TBLPROPERTIES ({listed})"),
            ref)


def _checkpoint(spark: SparkSession, ref: TableRef) -> None:
    """Write a checkpoint of the table, off any run's path: Delta writes one after a commit
    whose version the table's `delta.checkpointInterval` divides, so a commit that sets the
    interval to 1 writes one, and the next sets it back (CHECKPOINT_INTERVAL). A reader then
    replays one commit after the checkpoint."""
    for interval in ("1", CHECKPOINT_INTERVAL):
        statement = (f"ALTER TABLE {sql_name(spark, ref)} "
                     f"SET TBLPROPERTIES ('delta.checkpointInterval' = '{interval}')")
        retry_conflicts(functools.partial(_collect, spark, statement), ref)


def maintain_tables(spark: SparkSession, conf: Conf, now: dt.datetime,
                    optimize: bool = True) -> list[TableMaintenance]:
    """Compact, prune snapshots and VACUUM each of the job's tables that exists."""
    keep = conf.maintenance
    cutoff = (now - dt.timedelta(days=keep.snapshot_retention_days)
              if keep.snapshot_retention_days is not None else None)
    roles = (("audit", conf.tables.audit), ("runs", conf.tables.runs),
             ("snapshots", conf.tables.snapshots), ("locks", conf.tables.locks))
    done = []
    for role, name in roles:
        ref = TableRef(name)
        if not table_exists(spark, ref):
            continue
        with job_label(spark, f"maintain: {role} table"):
            before = _file_count(spark, ref)
            deleted = 0
            try:
                # The lock log is never rewritten (its order is its rows' commit versions),
                # and was always created with plain types.
                retyped = _plain_schema(spark, ref) if role != "locks" else []
                _set_properties(spark, ref, TABLE_PROPERTIES if role != "locks"
                                else {"delta.checkpointInterval": CHECKPOINT_INTERVAL})
                if role == "snapshots" and cutoff is not None:
                    deleted = _delete_older_snapshots(spark, ref, cutoff)
                if role == "locks":
                    deleted = _delete_ended_leases(spark, ref, now - LOCK_EVENTS_KEPT)
                if optimize:
                    # a running job's appends may conflict: compaction simply runs again
                    optimize_sql = f"OPTIMIZE {sql_target(spark, ref)}"
                    retry_conflicts(functools.partial(_collect, spark, optimize_sql), ref)
                hours = keep.vacuum_retain_hours
                spark.sql(f"VACUUM {sql_target(spark, ref)} RETAIN {hours} HOURS").collect()
                doomed = _vacuumed(spark, ref)
                _checkpoint(spark, ref)
            except PySparkException as exc:
                raise MaintenanceFailed(
                    f"{role} table {name}: {_first_line(exc)} (tables before it were "
                    "maintained; run `maintain` again)") from exc
            done.append(TableMaintenance(role, name, before, _file_count(spark, ref),
                                         deleted, doomed, retyped))
    if not done:
        raise UsageError("none of the job's tables exists yet (tables.audit, tables.runs, "
                         "tables.snapshots, tables.locks): nothing to maintain")
    return done
