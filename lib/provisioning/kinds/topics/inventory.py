"""`report --inventory`: what the clusters hold and who uses it, from `check`'s inventory
and disks tables: per cluster its totals and brokers' disks at the last check run, the
largest topics, the idle and empty ones with their evidence; with `--since`, bytes and
records per cluster per day."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from provisioning.conf import Conf
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.results import utc_now
from provisioning.transforms.scope import topics_matching
from provisioning.views.report import byte_size, rows_of

Row = Mapping[str, Any]


def _latest(df: DataFrame) -> DataFrame:
    """The rows of each cluster's last check run."""
    last = Window.partitionBy("cluster").orderBy(F.col("checked_at").desc(),
                                                 F.col("run_id").desc())
    runs = (df.select("cluster", "run_id", "checked_at").distinct()
            .withColumn("_n", F.row_number().over(last)).where(F.col("_n") == 1)
            .select("cluster", "run_id"))
    return df.join(runs, ["cluster", "run_id"], "left_semi")


def inventory_view(spark: SparkSession, conf: Conf, clusters: Sequence[str], idle_only: bool,
                   largest: int | None, since_days: int | None,
                   topics_glob: str | None = None) -> dict[str, Any]:
    """The payload of `report --inventory` (see the module)."""
    ref, disks_ref = TableRef(conf.tables.inventory), TableRef(conf.tables.disks)
    if not table_exists(spark, ref):
        return {"inventory": {"table": conf.tables.inventory, "clusters": []}}
    every = read_table(spark, ref).transform(topics_matching(clusters, topics_glob))
    if since_days is not None:
        return {"inventory": {"table": conf.tables.inventory,
                              "trend": _trend(every, since_days)}}
    latest = _latest(every).cache()
    now = utc_now()
    idle_since = now - dt.timedelta(days=conf.checks.idle_days)
    totals = {r["cluster"]: r for r in rows_of(latest.groupBy("cluster", "run_id").agg(
        F.max("checked_at").alias("checked_at"), F.count(F.lit(1)).alias("topics"),
        F.sum("size_bytes").alias("size_bytes"), F.sum("stored_bytes").alias("stored_bytes"),
        F.sum("records").alias("records"),
        F.count(F.when(F.col("records") == 0, 1)).alias("empty"),
        F.count(F.when((F.col("records") > 0)
                       & (F.col("last_write_at") < F.lit(idle_since)), 1)).alias("idle")))}
    disks: dict[str, list[dict[str, Any]]] = {}
    if table_exists(spark, disks_ref) and totals:
        runs = [r["run_id"] for r in totals.values()]
        for d in rows_of(read_table(spark, disks_ref).where(F.col("run_id").isin(*runs))
                       .orderBy("cluster", "broker", "log_dir")):
            disks.setdefault(d["cluster"], []).append(d)
    shown = ("topic", "size_bytes", "stored_bytes", "records", "last_write_at",
             "consumer_groups", "partitions", "replication_factor")
    per_cluster = []
    for cluster in sorted(totals):
        mine = latest.where(F.col("cluster") == cluster)
        idle = rows_of(mine.where((F.col("records") > 0)
                                & (F.col("last_write_at") < F.lit(idle_since)))
                     .orderBy("last_write_at", "topic").select(*shown))
        entry: dict[str, Any] = {**totals[cluster], "idle_days": conf.checks.idle_days,
                                 "idle_topics": idle, "disks": disks.get(cluster, [])}
        if not idle_only:
            entry["largest"] = rows_of(mine.orderBy(F.col("size_bytes").desc_nulls_last(),
                                                  "topic").limit(largest or 10)
                                     .select(*shown))
            entry["empty_topics"] = [r["topic"] for r in rows_of(
                mine.where(F.col("records") == 0).orderBy("topic").select("topic"))]
        per_cluster.append(entry)
    latest.unpersist()
    return {"inventory": {"table": conf.tables.inventory, "clusters": per_cluster}}


def _trend(every: DataFrame, since_days: int) -> list[dict[str, Any]]:
    """Bytes and records per cluster per day (each day's last check run)."""
    since = utc_now() - dt.timedelta(days=since_days)
    recent = every.where(F.col("checked_at") >= F.lit(since)).withColumn(
        "day", F.to_date("checked_at"))
    last = Window.partitionBy("cluster", "day").orderBy(F.col("checked_at").desc(),
                                                        F.col("run_id").desc())
    runs = (recent.select("cluster", "day", "run_id", "checked_at").distinct()
            .withColumn("_n", F.row_number().over(last)).where(F.col("_n") == 1)
            .select("cluster", "day", "run_id"))
    return rows_of(recent.join(runs, ["cluster", "day", "run_id"], "left_semi")
                 .groupBy("cluster", "day", "run_id")
                 .agg(F.count(F.lit(1)).alias("topics"),
                      F.sum("size_bytes").alias("size_bytes"),
                      F.sum("stored_bytes").alias("stored_bytes"),
                      F.sum("records").alias("records"))
                 .orderBy("cluster", "day"))


def _bytes(n: int | None) -> str:
    return byte_size(n, none="unknown")


def _readers(groups: Sequence[Row] | None) -> str:
    if groups is None:
        return "readers unknown"
    if not groups:
        return "no consumer group"
    return ", ".join(f"{g['group_id']} (lag {g['lag']})" for g in groups)


def _when(at: Any) -> str:
    return at.strftime("%Y-%m-%d %H:%M") if isinstance(at, dt.datetime) else "never"


def render_inventory(payload: Mapping[str, Any]) -> list[str]:
    """Lines for a person: per cluster its totals and disks, the largest topics, the idle
    and empty ones; or the trend per day."""
    inv = payload["inventory"]
    if "trend" in inv:
        trend = ["bytes and records per cluster per day (each day's last check run)"]
        if not inv["trend"]:
            return [*trend, "  no check run recorded in the window"]
        for t in inv["trend"]:
            trend.append(f"  {t['cluster']}  {t['day']}  {t['topics']} topic(s)  "
                         f"{_bytes(t['size_bytes'])} (stored {_bytes(t['stored_bytes'])})  "
                         f"{t['records']} record(s)")
        return trend
    if not inv["clusters"]:
        return [f"no check run recorded in {inv['table']}: run `check` first"]
    lines: list[str] = []
    for c in inv["clusters"]:
        lines.append(f"cluster {c['cluster']} (check run {c['run_id']} at "
                     f"{_when(c['checked_at'])}): {c['topics']} topic(s), "
                     f"{_bytes(c['size_bytes'])} (stored {_bytes(c['stored_bytes'])}), "
                     f"{c['records']} record(s); {c['idle']} idle, {c['empty']} empty")
        for d in c["disks"]:
            used = ("" if not d.get("total_bytes") else
                    f"{100 * d['used_bytes'] / d['total_bytes']:.1f}% used of "
                    f"{_bytes(d['total_bytes'])}, ")
            lines.append(f"  broker {d['broker']} {d['log_dir']}: {used}Kafka "
                         f"{_bytes(d['kafka_bytes'])}"
                         + (f" ({d['error']})" if d.get("error") else ""))
        if "largest" in c:
            lines.append("  largest:")
            for t in c["largest"]:
                lines.append(f"    {t['topic']}  {_bytes(t['size_bytes'])}  "
                             f"{t['records']} record(s)  last write {_when(t['last_write_at'])}")
        lines.append(f"  idle (no record newer than {c['idle_days']} days): "
                     f"{len(c['idle_topics']) or 'none'}")
        for t in c["idle_topics"]:
            lines.append(f"    {t['topic']}  last write {_when(t['last_write_at'])}  "
                         f"{_bytes(t['size_bytes'])}  {_readers(t['consumer_groups'])}")
        if "empty_topics" in c:
            lines.append(f"  empty: {', '.join(c['empty_topics']) or 'none'}")
    return lines
