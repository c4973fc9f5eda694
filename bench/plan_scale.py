"""Plan-only scale test: synthetic manifests and snapshots across many clusters, no broker.

    .venv/bin/python bench/plan_scale.py --rows 100000,300000,1000000 [--clusters 100]

For each row count, two processes through ./spark-submit.sh (local[2], --driver-memory
1200m unless --driver-memory says otherwise):

generate  writes the synthetic manifest table (N desired rows over --clusters clusters)
          and the synthetic snapshot table (the live topics) as Delta tables.
plan      reads them and runs the product's own chain up to the plan's audit rows
          (provisioning.kinds.topics.planning: read_desired, plan_rows, judge_plan with every
          configurable create and delete policy after the always-on ones; then
          plan_audit), and appends the audit rows to a Delta table as one commit (local
          checkpoints as the run takes them; the snapshot table is read into a local
          checkpoint first, as the run holds the live snapshot). Only this process is
          timed and measured.

While `plan` runs, the parent samples the resident memory (RSS) of the whole process
tree (spark-submit's JVM, which in local mode is driver and executor, and the Python
driver) every 0.2 s, and reads each process's VmHWM (the kernel's peak RSS).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SUBMIT = REPO / "spark-submit.sh"
DRIVER_MEMORY = "1200m"

POLICIES: dict[str, Any] = {
    "create": [
        {"name": "topic_name_pattern", "default": "[a-z0-9._-]+",
         "by_owner": {"team-1": "svc1[0-9]*\\..+"}},
        {"name": "partitions_range", "min": 1, "max": 64},
        {"name": "replication_factor_range", "min": 1, "max": 3},
        {"name": "required_configs", "configs": {"retention.ms": "\\d+"}},
        {"name": "forbidden_configs", "configs": ["unclean.leader.election.enable"]},
        {"name": "min_insync_below_rf"},
        {"name": "partition_budget", "max_partitions": 5_000_000},
        {"name": "owner_partition_quota", "quotas": {"team-7": 1000}, "default": 1_000_000},
    ],
    "delete": [{"name": "protected_patterns", "patterns": ["audit.*", "*.dlq"]}],
}


# -- the children (run inside spark-submit) ---------------------------------------------

def _conf(work: Path, clusters: int, settings: Sequence[str] = ()) -> Any:
    """The conf of the plan: `settings` (KEY=VALUE) go into its spark.settings."""
    from tests.helpers import parse_conf

    return parse_conf({
        "spark": {"settings": dict(item.split("=", 1) for item in settings)},
        "clusters": {f"c{i:03d}": {"bootstrap_servers": f"127.0.0.1:{10000 + i}"}
                     for i in range(clusters)},
        "tables": {"manifests": [str(work / "desired_topics")],
                   "audit": str(work / "topic_audit"), "runs": str(work / "provision_runs"),
                   "snapshots": str(work / "topic_snapshots")},
        "deletes": {"max_per_cluster": 10},
        "policies": POLICIES,
    }, "bench/plan_scale.py")


def generate(work: Path, rows: int, clusters: int) -> dict[str, Any]:
    """Write the synthetic manifest and snapshot tables (Spark column expressions only)."""
    from pyspark.sql import functions as F

    from provisioning.session import build_session
    from schemas import MANIFEST, SNAPSHOT, column_names

    spark = build_session("plan-scale-generate")
    started = time.monotonic()
    ids = spark.range(rows).withColumn("i", F.col("id").cast("int"))
    cluster = F.format_string("c%03d", F.col("i") % clusters)
    topic = F.format_string("svc%d.events.%d", F.col("i") % 1000, F.col("i"))
    retention = (F.lit(86_400_000) * (1 + F.col("i") % 7)).cast("string")
    desired = ids.select(
        cluster.alias("cluster"),
        topic.alias("topic"),
        F.when(F.col("i") % 100 == 99, "absent").otherwise("present").alias("state"),
        (1 + F.col("i") % 12).alias("partitions"),
        (1 + F.col("i") % 3).alias("replication_factor"),
        F.lit(None).cast(MANIFEST["replica_assignment"].dataType).alias("replica_assignment"),
        F.create_map(F.lit("retention.ms"), retention, F.lit("cleanup.policy"),
                     F.when(F.col("i") % 5 == 0, "compact").otherwise("delete"))
        .alias("configs"),
        F.format_string("team-%d", F.col("i") % 50).alias("owner"),
        F.lit(None).cast("boolean").alias("force"),
    ).select(*column_names(MANIFEST))
    desired.write.format("delta").mode("overwrite").save(str(work / "desired_topics"))

    # Live: every even id (some drifting) and every `absent` row exist, plus one
    # live-only topic per ten desired rows and the internal topic of every cluster.
    def entry(name: str, value: Any) -> Any:
        return F.struct(F.lit(name).alias("name"), value.alias("value"),
                        F.lit("DYNAMIC_TOPIC_CONFIG").alias("source"),
                        F.lit(False).alias("read_only"), F.lit(False).alias("sensitive"))

    drifts = F.col("i") % 10 == 0
    existing = ids.where((F.col("i") % 2 == 0) | (F.col("i") % 100 == 99)).select(
        "i", cluster.alias("cluster"), topic.alias("topic"),
        F.when(drifts, 12).otherwise(1 + F.col("i") % 12).alias("partitions"),
        F.array(entry("retention.ms", F.when(drifts, F.lit("1000")).otherwise(retention)))
        .alias("configs"))
    legacy = spark.range(rows // 10).withColumn("i", F.col("id").cast("int")).select(
        "i", cluster.alias("cluster"), F.format_string("legacy.%d", F.col("i")).alias("topic"),
        F.lit(1).alias("partitions"), F.array().cast(SNAPSHOT["configs"].dataType)
        .alias("configs"))
    internal = spark.range(clusters).withColumn("i", F.col("id").cast("int")).select(
        "i", cluster.alias("cluster"), F.lit("__consumer_offsets").alias("topic"),
        F.lit(50).alias("partitions"), F.array().cast(SNAPSHOT["configs"].dataType)
        .alias("configs"))
    live = existing.unionByName(legacy).unionByName(internal).select(
        F.lit("synthetic").alias("run_id"),
        "cluster",
        F.concat(F.lit("id-"), F.col("cluster")).alias("cluster_id"),
        "topic",
        F.sha2(F.concat_ws("/", "cluster", "topic"), 256).substr(1, 22).alias("topic_id"),
        F.col("topic").startswith("__").alias("internal"),
        "partitions",
        F.lit(1).alias("replication_factor"),
        F.lit(None).cast(SNAPSHOT["replica_assignment"].dataType).alias("replica_assignment"),
        "configs",
        F.when(F.col("i") % 20 == 0, F.array(F.lit("readers"))).otherwise(
            F.array().cast("array<string>")).alias("consumer_groups"),
        F.lit(None).cast("string").alias("error_name"),
        F.current_timestamp().alias("snapshot_at"),
        F.lit(None).cast(SNAPSHOT["partition_states"].dataType).alias("partition_states"),
        F.lit(None).cast(SNAPSHOT["default_configs"].dataType).alias("default_configs"),
    ).select(*column_names(SNAPSHOT))
    live.write.format("delta").mode("overwrite").save(str(work / "topic_snapshots"))
    written = spark.read.format("delta").load(str(work / "topic_snapshots")).count()
    spark.stop()
    return {"desired_rows": rows, "live_rows": written,
            "generate_s": round(time.monotonic() - started, 1)}


def plan(work: Path, clusters: int, settings: Sequence[str] = ()) -> dict[str, Any]:
    """The plan phase over the synthetic tables; timings of its steps."""
    from pyspark.sql import functions as F

    from provisioning.delta.tables import TableRef, append, read_table
    from provisioning.kafka.client import ClusterState
    from provisioning.kinds.topics.planning import planned_plan, read_desired
    from provisioning.registry import AUDIT
    from provisioning.results import new_run_id, utc_now
    from provisioning.session import build_session
    from provisioning.transforms.audit import plan_audit
    from provisioning.transforms.scope import in_scope

    launched = float(os.environ.get("PLAN_SCALE_LAUNCHED", time.time()))
    conf = _conf(work, clusters, settings)
    spark = build_session("plan-scale", conf.spark.settings)
    session = time.time() - launched
    started = time.monotonic()
    names = tuple(conf.clusters)
    run_id = new_run_id()
    # The run holds the live snapshot as a local checkpoint (taken from Kafka), not as
    # a Delta scan: the same here, timed apart from the plan.
    live = read_table(spark, TableRef(conf.tables.snapshots)).localCheckpoint(eager=True)
    snapshot_read = time.monotonic() - started
    started = time.monotonic()
    live_in_scope = live.transform(in_scope(names, None, names))
    desired = read_desired(spark, conf, names, None)
    read = time.monotonic()
    states = {n: ClusterState(cluster_id=f"id-{n}", controller_id=1, broker_ids=(1, 2, 3),
                              default_partitions=3, default_replication_factor=3)
              for n in names}
    built = time.monotonic()
    # What the run's plan phase does (provisioning.kinds.topics.phases.Plan).
    planned, _ = planned_plan(spark, conf, states, desired, live, live_in_scope, None)
    checkpointed = time.monotonic()
    rows = plan_audit(planned, run_id, utc_now(), AUDIT)
    append(rows, TableRef(conf.tables.audit))
    written = time.monotonic()
    last = spark.sql(f"DESCRIBE HISTORY delta.`{conf.tables.audit}` LIMIT 1").first()
    metrics = dict(last["operationMetrics"]) if last else {}
    outcomes = {r["outcome"]: r["n"] for r in rows.groupBy("outcome")
                .agg(F.count(F.lit(1)).alias("n")).collect()}
    spark.stop()
    return {
        "session_s": round(session, 1),
        "snapshot_read_s": round(snapshot_read, 1),
        "manifest_read_s": round(read - started, 1),
        "build_s": round(built - read, 1),
        "plan_and_policies_s": round(checkpointed - built, 1),
        "audit_write_s": round(written - checkpointed, 1),
        "plan_total_s": round(written - started, 1),
        "audit_rows": int(metrics.get("numOutputRows", -1)),
        "audit_files": int(metrics.get("numFiles", -1)),
        "outcomes": outcomes,
        "create_policies": [p.name for p in conf.create_policies],
        "delete_policies": [p.name for p in conf.delete_policies],
    }


# -- the parent: run the children, sample their memory ----------------------------------

def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:80]
    except OSError:
        return ""


def run_child(args: Sequence[str], env: dict[str, str], sample: bool,
              driver_memory: str = DRIVER_MEMORY) -> tuple[dict[str, Any], dict[str, Any]]:
    cmd = [str(SUBMIT), "--driver-memory", driver_memory, str(Path(__file__).resolve()),
           *args]
    launched = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # A long computation in the driver JVM (local mode): the JVM's
                            # own JIT, not the quick one spark-submit.sh gives short runs.
                            env={"PROVISIONING_DRIVER_JIT": "full", **os.environ, **env,
                                 "PLAN_SCALE_LAUNCHED": str(launched)})
    peak_sum = 0
    hwm: dict[int, tuple[int, str]] = {}
    stop = threading.Event()

    def sampler() -> None:
        nonlocal peak_sum
        while not stop.wait(0.2):
            pids = _tree(proc.pid)
            peak_sum = max(peak_sum, sum(_status_kb(p, "VmRSS") for p in pids))
            for p in pids:
                kb = _status_kb(p, "VmHWM")
                if kb >= hwm.get(p, (0, ""))[0]:
                    hwm[p] = (kb, _cmdline(p) or hwm.get(p, (0, ""))[1])

    thread = threading.Thread(target=sampler, daemon=True)
    if sample:
        thread.start()
    out, err = proc.communicate()
    stop.set()
    if sample:
        thread.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-5000:]}")
    big = {f"{p} {c.split(' ')[0].rsplit('/', 1)[-1]}": round(kb / 1024) for p, (kb, c)
           in hwm.items() if kb > 50 * 1024}
    memory = {"peak_rss_tree_mib": round(peak_sum / 1024),
              "sum_vmhwm_mib": round(sum(kb for kb, _ in hwm.values()) / 1024),
              "vmhwm_mib_by_process": big}
    result = json.loads(out.strip().splitlines()[-1])
    result["process_wall_s"] = round(time.time() - launched, 1)
    return result, memory


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="100000,300000,1000000")
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--child", choices=("generate", "plan"))
    parser.add_argument("--dir")
    parser.add_argument("--n", type=int, default=0)
    parser.add_argument("--out", default=None)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--spark-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="a spark.settings entry of the plan's conf (repeatable)")
    parser.add_argument("--driver-memory", default=DRIVER_MEMORY,
                        help="the plan process's --driver-memory (JVM heap), default %(default)s")
    args = parser.parse_args(argv)

    if args.child == "generate":
        print(json.dumps(generate(Path(args.dir), args.n, args.clusters)))
        return 0
    if args.child == "plan":
        print(json.dumps(plan(Path(args.dir), args.clusters, args.spark_setting)))
        return 0

    results = []
    for n in [int(x) for x in args.rows.split(",")]:
        work = Path(tempfile.mkdtemp(prefix=f"plan-scale-{n}-"))
        try:
            gen, _ = run_child(["--child", "generate", "--dir", str(work), "--n", str(n),
                                "--clusters", str(args.clusters)], {}, sample=False)
            load = os.getloadavg()
            measured, memory = run_child(["--child", "plan", "--dir", str(work),
                                          "--clusters", str(args.clusters),
                                          *(f"--spark-setting={kv}" for kv in
                                            args.spark_setting)], {}, sample=True,
                                         driver_memory=args.driver_memory)
        finally:
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
        result = {"rows": n, "clusters": args.clusters, **gen, **measured, **memory,
                  "load_before": [round(x, 2) for x in load],
                  "driver_memory": args.driver_memory}
        print(json.dumps(result), flush=True)
        results.append(result)
    lines = [
        f"Plan only: manifests over {args.clusters} clusters, every configurable policy, "
        f"`./spark-submit.sh --driver-memory {args.driver_memory}` (local[2]).", "",
        "| desired rows | live rows | plan total s | manifest read s | plan + policies s "
        "| audit write s | process wall s (incl. session, snapshot read) "
        "| peak RSS, JVM + Python (MiB) | audit rows / files | load before |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['rows']:,} | {r['live_rows']:,} | {r['plan_total_s']} | "
            f"{r['manifest_read_s']} | {r['plan_and_policies_s']} | {r['audit_write_s']} | "
            f"{r['process_wall_s']} | "
            f"{r['peak_rss_tree_mib']} | {r['audit_rows']:,} / {r['audit_files']} | "
            f"{r['load_before'][0]} |")
    summary = "\n".join(lines)
    print(summary)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
        Path(args.out).with_suffix(".md").write_text(summary + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
