"""`report --site` over 10,000 topics and 30 days of daily runs.

    .venv/bin/python bench/site_scale.py [--topics 10000] [--days 30] [--out FILE]

Synthesises the tables a month of daily runs leaves (Delta, with the real schemas), one
cluster of `--topics` topics:
  runs        an `apply` and a `check` a day
  audit       the first day's apply creates every topic (plan, validate, apply, verify
              rows); each later apply alters 20 topics and fails one
  snapshots   every topic, once a day
  violations  each check: 5% of the topics without a required config (error), 2% idle
              (warning), 1% empty (info), and a disk forecast (warning, no topic)
  inventory   each check: every topic, growing a little each day
  disks       each check: three brokers' log directories
  manifests   every topic
then times `./spark-submit.sh jobs/provision_topics.py report --site DIR` (classic Spark,
a cold JVM) twice: the first site, and the same again with no new commit (whose files must
be the same, byte for byte). Nothing asserts a time; the machine's load is recorded.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "lib"), str(REPO)]

from bench.run import JOB, SUBMIT, machine  # noqa: E402

START = dt.datetime(2026, 10, 1, 2, 0, tzinfo=dt.UTC)


def _session() -> Any:
    from provisioning.session import build_session

    jars = sorted(str(p) for p in (REPO / ".cache" / "jars" / "delta").glob("*.jar"))
    return build_session("site-bench", {
        "spark.master": "local[2]", "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC",
        "spark.databricks.delta.snapshotPartitions": "2", "spark.driver.memory": "2g"},
        jars=jars)


def _shaped(df: Any, schema: Any) -> Any:
    """`df`'s columns as `schema` has them, the missing ones null."""
    from pyspark.sql import functions as F

    return df.select(*[(F.col(f.name) if f.name in df.columns else F.lit(None))
                       .cast(f.dataType).alias(f.name) for f in schema.fields])


def synthesise(spark: Any, wh: Path, topics: int, days: int) -> None:
    from pyspark.sql import functions as F

    from provisioning.registry import AUDIT
    from schemas import DISKS, INVENTORY, MANIFEST, RUNS, SNAPSHOT, VIOLATIONS

    def save(df: Any, schema: Any, name: str) -> None:
        _shaped(df, schema).write.format("delta").mode("overwrite").save(str(wh / name))

    topic = F.format_string("site.%06d", F.col("t"))
    ids = spark.range(topics).withColumnRenamed("id", "t")
    day_list = spark.range(days).withColumnRenamed("id", "d")

    def at(hours: int) -> Any:
        return (F.lit(START) + F.make_dt_interval(F.col("d").cast("int"), F.lit(hours - 2)))

    apply_id = F.format_string("apply-%03d", F.col("d"))
    check_id = F.format_string("check-%03d", F.col("d"))
    cluster = F.array(F.struct(F.lit("local").alias("cluster"), F.lit("id-1").alias(
        "cluster_id"), F.lit(3).alias("brokers"), F.lit(topics).cast("long").alias("topics"),
        F.lit(None).cast("string").alias("error")))
    applies = day_list.select(apply_id.alias("run_id"), F.lit("apply").alias("command"),
                              F.lit('{"clusters": [], "topics": null}').alias("arguments"),
                              at(2).alias("started_at"),
                              (at(2) + F.expr("interval 40 seconds")).alias("finished_at"),
                              F.lit("succeeded").alias("status"), F.lit(0).alias("exit_code"),
                              F.create_map(F.lit("created"), F.lit(1)).alias("outcome_counts"),
                              cluster.alias("clusters"))
    checks = day_list.select(check_id.alias("run_id"), F.lit("check").alias("command"),
                             F.lit('{"clusters": [], "topics": null}').alias("arguments"),
                             at(3).alias("started_at"),
                             (at(3) + F.expr("interval 30 seconds")).alias("finished_at"),
                             F.lit("completed with errors").alias("status"),
                             F.lit(1).alias("exit_code"), cluster.alias("clusters"))
    save(applies.unionByName(checks, allowMissingColumns=True), RUNS, "provision_runs")

    phases = F.array(*[F.struct(F.lit(p).alias("phase"), F.lit(o).alias("outcome"))
                       for p, o in (("plan", "planned"), ("validate", "validated"),
                                    ("apply", "created"), ("verify", "created"))])
    created = (ids.select(topic.alias("topic"), F.explode(phases).alias("p"))
               .select(F.lit("apply-000").alias("run_id"), "topic", F.lit("CREATE")
                       .alias("action"), "p.phase", "p.outcome",
                       F.lit(START).alias("recorded_at")))
    altered = (day_list.where("d > 0").crossJoin(spark.range(21).withColumnRenamed("id", "k"))
               .select("d", apply_id.alias("run_id"),
                       F.format_string("site.%06d", (F.col("d") * 97 + F.col("k") * 331)
                                       % topics).alias("topic"),
                       F.when(F.col("k") == 20, F.lit("failed")).otherwise("altered")
                       .alias("result"), at(2).alias("recorded_at"))
               .select("run_id", "topic", F.lit("ALTER").alias("action"), "recorded_at",
                       F.explode(F.array(
                           F.struct(F.lit("plan").alias("phase"),
                                    F.lit("planned").alias("outcome")),
                           F.struct(F.lit("apply").alias("phase"),
                                    F.col("result").alias("outcome")))).alias("p"))
               .select("run_id", "topic", "action", "p.phase", "p.outcome", "recorded_at"))
    save(created.unionByName(altered).withColumn("cluster", F.lit("local")), AUDIT,
         "topic_audit")

    both = day_list.crossJoin(ids)
    save(both.select(apply_id.alias("run_id"), F.lit("local").alias("cluster"),
                     topic.alias("topic"), F.lit(False).alias("internal"),
                     F.lit(3).alias("partitions"), F.lit(3).alias("replication_factor"),
                     at(2).alias("snapshot_at")), SNAPSHOT, "topic_snapshots")
    rule = (F.when(F.col("t") % 20 == 0, F.lit("required_configs"))
            .when(F.col("t") % 50 == 1, F.lit("idle_topic"))
            .when(F.col("t") % 100 == 2, F.lit("empty_topic")))
    severity = F.when(F.col("rule") == "required_configs", F.lit("error")).when(
        F.col("rule") == "idle_topic", F.lit("warning")).otherwise(F.lit("info"))
    found = (both.select(check_id.alias("run_id"), topic.alias("topic"), rule.alias("rule"),
                         at(3).alias("snapshot_at"))
             .where(F.col("rule").isNotNull())
             .withColumn("severity", severity)
             .unionByName(day_list.select(check_id.alias("run_id"),
                                          F.lit("disk_forecast").alias("rule"),
                                          F.lit("warning").alias("severity"),
                                          at(3).alias("snapshot_at")),
                          allowMissingColumns=True))
    save(found.select("*", F.lit("local").alias("cluster"),
                      F.concat(F.lit("broker 1: "), F.col("rule")).alias("detail"),
                      F.lit(True).alias("managed"), F.lit("bench").alias("owner"),
                      F.col("snapshot_at").alias("recorded_at")), VIOLATIONS,
         "provision_runs_violations")
    size = (F.col("t") % 1000 + 1) * 1_000_000 + F.col("d") * 10_000
    save(both.select(check_id.alias("run_id"), F.lit("local").alias("cluster"),
                     topic.alias("topic"), F.lit(3).alias("partitions"),
                     F.lit(3).alias("replication_factor"), size.alias("size_bytes"),
                     (size * 3).alias("stored_bytes"), (size / 100).cast("long")
                     .alias("records"), at(1).alias("last_write_at"),
                     F.array().alias("consumer_groups"), at(3).alias("checked_at")),
         INVENTORY, "provision_runs_inventory")
    save(day_list.crossJoin(spark.range(1, 4).withColumnRenamed("id", "b")).select(
        check_id.alias("run_id"), F.lit("local").alias("cluster"), F.col("b").alias("broker"),
        F.lit("/var/lib/kafka").alias("log_dir"), F.lit(2**40).alias("total_bytes"),
        (F.lit(2**39) - F.col("d") * 2**33).alias("usable_bytes"),
        (F.lit(2**39) + F.col("d") * 2**33).alias("used_bytes"),
        (F.lit(2**38) + F.col("d") * 2**33).alias("kafka_bytes"),
        at(3).alias("checked_at")), DISKS, "provision_runs_disks")
    save(ids.select(F.lit("local").alias("cluster"), topic.alias("topic"),
                    F.lit("present").alias("state"), F.lit(3).alias("partitions"),
                    F.lit(3).alias("replication_factor"), F.lit("bench").alias("owner")),
         MANIFEST, "desired_topics")


def _digest(root: Path) -> tuple[int, str]:
    h = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for p in files:
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return len(files), h.hexdigest()


def time_site(conf: Path, site: Path) -> dict[str, Any]:
    load = os.getloadavg()[0]
    started = time.monotonic()
    proc = subprocess.run([str(SUBMIT), "--driver-memory", "2g", str(JOB), "report", "--conf",
                           str(conf), "--site", str(site), "--json"],
                          capture_output=True, text=True, timeout=3600)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout[-3000:] + proc.stderr[-3000:])
    files, digest = _digest(site)
    return {"seconds": round(seconds, 1), "load_before": round(load, 2), "files": files,
            "digest": digest, "site_mib": round(sum(p.stat().st_size for p in site.rglob("*")
                                                    if p.is_file()) / 2**20, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" /
                        "site_scale.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="site-bench-") as tmp:
        work = Path(tmp)
        wh = work / "warehouse"
        spark = _session()
        t0 = time.monotonic()
        synthesise(spark, wh, args.topics, args.days)
        spark.stop()
        made = round(time.monotonic() - t0, 1)
        conf = work / "conf.json"
        conf.write_text(json.dumps({
            "clusters": {"local": {"bootstrap_servers": "127.0.0.1:9"}},
            "tables": {"manifests": [str(wh / "desired_topics")],
                       "audit": str(wh / "topic_audit"), "runs": str(wh / "provision_runs"),
                       "snapshots": str(wh / "topic_snapshots")},
            "spark": {"settings": {"spark.sql.session.timeZone": "UTC"}}}))
        first = time_site(conf, work / "site")
        again = time_site(conf, work / "site")
        result = {"topics": args.topics, "days": args.days, "synthesis_seconds": made,
                  "first": first, "again": again,
                  "same_bytes": first["digest"] == again["digest"], "machine": machine(),
                  "command": f"./spark-submit.sh --driver-memory 2g {JOB.relative_to(REPO)} "
                             "report --conf CONF --site DIR --json"}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if result["same_bytes"] else 1


if __name__ == "__main__":
    sys.exit(main())
