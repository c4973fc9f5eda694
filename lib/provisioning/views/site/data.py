"""What the site shows, read from the Delta tables: each table read once, at the version its
history names, aggregated by Spark; only what the pages show is collected.

The window is anchored at the newest run the runs table holds (its day and the `since_days`
days before it), never at the clock: the same commits give the same site.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from provisioning.conf import Conf
from provisioning.delta.manifests import conform_to_manifest
from provisioning.delta.tables import TableRef, latest_commit, load
from provisioning.transforms.trend import check_runs, violation_spans, violations_per_day
from provisioning.views.kind import ViewKind
from provisioning.views.report import latest_snapshot
from schemas import MANIFEST, column_names

# Audit columns the run and topic pages show (and those each kind adds).
AUDIT_COLUMNS = ("run_id", "cluster", "topic", "action", "phase", "outcome", "error_name",
                 "error_message", "recorded_at")
# Topics the inventory page lists as the largest.
LARGEST = 50


@dataclass(frozen=True)
class TableRead:
    """One table the site read: its role, name, the version read and when that version was
    committed (None: the table does not exist)."""

    role: str
    table: str
    version: int | None
    committed_at: dt.datetime | None


@dataclass
class SiteData:
    """Everything the pages show, as plain values."""

    clusters: list[str]
    tables: list[TableRead]
    days: list[dt.date]
    # The kinds whose rows the pages show (each kind's part of the views package).
    kinds: tuple[ViewKind, ...] = ()
    runs: list[dict[str, Any]] = field(default_factory=list)
    audit: list[dict[str, Any]] = field(default_factory=list)
    live: list[dict[str, Any]] = field(default_factory=list)
    manifests: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    spans: list[dict[str, Any]] = field(default_factory=list)
    findings_per_day: list[dict[str, Any]] = field(default_factory=list)
    inventory: list[dict[str, Any]] | None = None
    topic_series: list[dict[str, Any]] = field(default_factory=list)
    bytes_per_day: list[dict[str, Any]] = field(default_factory=list)
    disks: list[dict[str, Any]] | None = None
    # What each kind's own pages show (`ViewKind.site_data`), by kind name.
    kinds_data: dict[str, Any] = field(default_factory=dict)

    def table(self, role: str) -> TableRead:
        return next(t for t in self.tables if t.role == role)


def rows(df: DataFrame) -> list[dict[str, Any]]:
    """The rows as dicts, through Arrow (one batch transfer, fast for wide collects)."""
    return [dict(r) for r in df.toArrow().to_pylist()]


def _read(spark: SparkSession, role: str, table: str) -> tuple[TableRead, DataFrame | None]:
    """The table at its latest version (None when it does not exist), and what was read."""
    ref = TableRef(table)
    commit = latest_commit(spark, ref)
    if commit is None:
        return TableRead(role, table, None, None), None
    micros = json.loads(commit.marks)["timestamp"]
    at = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=int(micros))
    return TableRead(role, table, commit.version, at), load(spark, ref, commit.version)


def _window(runs: DataFrame, since_days: int) -> list[dt.date]:
    """The `since_days` days up to the newest run's (the session's time zone's days)."""
    newest = runs.agg(F.max(F.to_date("started_at")).alias("newest")).first()
    if newest is None or newest["newest"] is None:
        return []
    end: dt.date = newest["newest"]
    return [end - dt.timedelta(days=n) for n in range(since_days - 1, -1, -1)]


def _of_clusters(df: DataFrame, clusters: Sequence[str]) -> DataFrame:
    return df.where(F.col("cluster").isin(*clusters))


def read_site(spark: SparkSession, kinds: Sequence[ViewKind], conf: Conf,
              clusters: Sequence[str], since_days: int, inventory_table: str,
              disks_table: str) -> SiteData:
    """The site's data for `clusters` over the `since_days` days up to the newest run.

    inventory_table, disks_table: `check`'s inventory tables (a missing one is shown as
    missing on the pages that read it)."""
    reads = [_read(spark, role, table) for role, table in (
        ("runs", conf.tables.runs), ("audit", conf.tables.audit),
        ("snapshots", conf.tables.snapshots), ("violations", conf.tables.violations),
        ("inventory", inventory_table), ("disks", disks_table),
        *((f"manifest {i + 1}", t) for i, t in enumerate(conf.tables.manifests)))]
    frames = {read.role: df for read, df in reads}
    data = SiteData(clusters=sorted(clusters), tables=[read for read, _ in reads], days=[],
                    kinds=tuple(kinds))
    runs = frames["runs"]
    if runs is None:
        return data
    runs = runs.where(F.exists(F.col("clusters"), lambda c: c["cluster"].isin(*clusters)))
    data.days = _window(runs, since_days)
    if not data.days:
        return data
    in_window = runs.where(F.to_date("started_at") >= F.lit(data.days[0])).cache()
    data.runs = rows(in_window.select(
        "run_id", "command", "status", "exit_code", "message", "started_at", "finished_at",
        "outcome_counts", F.transform("clusters", lambda c: c["cluster"]).alias("clusters"),
        F.expr("transform(coalesce(plan_counts, array()), c -> c.kind)").alias("kinds"))
        .orderBy(F.col("started_at").desc(), F.col("run_id").desc()))
    if frames["audit"] is not None:
        data.audit = _audit(frames["audit"], in_window, clusters, kinds)
    if frames["snapshots"] is not None:
        data.live = _live(frames["snapshots"], clusters)
    data.manifests = _manifests([df for (read, df) in reads
                                 if read.role.startswith("manifest") and df is not None],
                                clusters)
    checks = check_runs(in_window).where(F.col("cluster").isin(*clusters)).cache()
    if frames["violations"] is not None:
        _findings(data, _of_clusters(frames["violations"], clusters), checks)
    if frames["inventory"] is not None:
        _inventory(data, _of_clusters(frames["inventory"], clusters), checks)
    if frames["disks"] is not None:
        latest = latest_check(checks)
        data.disks = rows(_of_clusters(frames["disks"], clusters)
                          .join(latest, on=["run_id", "cluster"], how="left_semi")
                          .orderBy("cluster", "broker", "log_dir"))

    def read_more(role: str, table: str) -> DataFrame | None:
        read, df = _read(spark, role, table)
        data.tables.append(read)
        return df

    for kind in kinds:
        found = kind.site_data(read_more, conf, clusters, checks)
        if found is not None:
            data.kinds_data[kind.name] = found
    checks.unpersist()
    in_window.unpersist()
    for listed in (data.audit, data.live, data.manifests, data.findings, data.inventory or [],
                   data.topic_series, data.disks or []):
        listed.sort(key=_stable)
    return data


def _stable(row: dict[str, Any]) -> str:
    """A total order of rows whatever order Spark gave them in."""
    return json.dumps(row, default=str, sort_keys=True)


def _audit(audit: DataFrame, runs: DataFrame, clusters: Sequence[str],
           kinds: Sequence[ViewKind]) -> list[dict[str, Any]]:
    extra = [c for k in kinds for c in k.report_columns]
    wanted = [c for c in dict.fromkeys((*AUDIT_COLUMNS, *extra)) if c in audit.columns]
    return rows(_of_clusters(audit, clusters)
                .join(runs.select("run_id"), on="run_id", how="left_semi")
                .select(*wanted))


def _live(snapshots: DataFrame, clusters: Sequence[str]) -> list[dict[str, Any]]:
    """Each cluster's live topics (not internal) of its newest snapshot."""
    return rows(latest_snapshot(_of_clusters(snapshots, clusters))
                .where(~F.coalesce("internal", F.lit(False)))
                .select("cluster", "topic", "partitions", "replication_factor",
                        "snapshot_at"))


def _manifests(tables: Sequence[DataFrame], clusters: Sequence[str]) -> list[dict[str, Any]]:
    if not tables:
        return []
    union = functools.reduce(DataFrame.unionByName,
                             [t.transform(conform_to_manifest).select(*column_names(MANIFEST))
                              for t in tables])
    return rows(_of_clusters(union, clusters))


def latest_check(checks: DataFrame) -> DataFrame:
    """Each cluster's newest check run (run_id, cluster, checked_at)."""
    newest = Window.partitionBy("cluster").orderBy(F.col("checked_at").desc(),
                                                  F.col("run_id").desc())
    return (checks.withColumn("_n", F.row_number().over(newest)).where(F.col("_n") == 1)
            .select("run_id", "cluster", "checked_at"))


def _findings(data: SiteData, violations: DataFrame, checks: DataFrame) -> None:
    found = violations.join(checks.select("run_id", "cluster"), on=["run_id", "cluster"],
                            how="left_semi").cache()
    spans = violation_spans(found, checks)
    data.spans = rows(spans.orderBy("cluster", "topic", "rule", "started_at"))
    latest = latest_check(checks)
    current = (found.join(latest.select("run_id", "cluster"), on=["run_id", "cluster"],
                          how="left_semi")
               .select("cluster", "topic", "rule", "severity", "detail", "managed", "owner"))
    data.findings = rows(current)
    data.findings_per_day = rows(
        violations_per_day(found, checks)
        .groupBy("cluster", "day").agg(F.sum("violations").cast("long").alias("findings"))
        .orderBy("cluster", "day"))
    data.findings_per_day = [r for r in data.findings_per_day if r["day"] in data.days]
    found.unpersist()


def last_check_of_day(checks: DataFrame) -> DataFrame:
    """Each cluster's last check run of each day (run_id, cluster, day)."""
    day_last = Window.partitionBy("cluster", "_day").orderBy(F.col("checked_at").desc(),
                                                            F.col("run_id").desc())
    return (checks.withColumn("_day", F.to_date("checked_at"))
            .withColumn("_n", F.row_number().over(day_last)).where(F.col("_n") == 1)
            .select("run_id", "cluster", F.col("_day").alias("day")))


def _inventory(data: SiteData, inventory: DataFrame, checks: DataFrame) -> None:
    """The newest check run's inventory of each cluster, each topic's size and records per
    day, and each cluster's bytes per day (each day's last check run)."""
    daily = inventory.join(last_check_of_day(checks), on=["run_id", "cluster"],
                           how="inner").cache()
    data.bytes_per_day = [r for r in rows(
        daily.groupBy("cluster", "day").agg(
            F.sum("size_bytes").cast("long").alias("size_bytes"),
            F.sum("stored_bytes").cast("long").alias("stored_bytes"))
        .orderBy("cluster", "day")) if r["day"] in data.days]
    data.topic_series = rows(daily.groupBy("cluster", "topic").agg(
        F.sort_array(F.collect_list(F.struct("day", "size_bytes", "records"))).alias("points")))
    latest = latest_check(checks)
    data.inventory = rows(
        inventory.join(latest.select("run_id", "cluster"), on=["run_id", "cluster"],
                       how="left_semi")
        .select("cluster", "topic", "partitions", "replication_factor", "size_bytes",
                "stored_bytes", "records", "last_write_at",
                F.size(F.coalesce("consumer_groups", F.array())).alias("groups"),
                "retention_ms", "retention_bytes", "checked_at"))
    daily.unpersist()
