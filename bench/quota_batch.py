"""Client quotas in bulk (KIP-546): the job's batched AlterClientQuotas against one request per
entity and against one request for all, on the same broker.

    .venv/bin/python bench/quota_batch.py [--entities 1000] [--reps 3] [--methods ...]
        [--batch-size 200] [--out bench/results/quota_batch.json]

One local single-node KRaft broker, PLAINTEXT (dev/devkafka). Its second listener
advertises a loopback proxy (tests/support/tcpproxy), and every method reaches the broker
through it, so the requests counted by API key (DescribeClientQuotas, AlterClientQuotas)
are what each method really sent.

The quotas: `--entities` user entities `bench-NNNNN`, each given producer_byte_rate and
consumer_byte_rate (two quotas an entity). Each method sets them all, then removes them all,
and the broker is checked to hold none of them (DescribeClientQuotas) before the next method
runs. Measured: `set` from launching the process to the last entity set, `remove` from
then to the last entity removed (the job: each a whole run, from launch to exit):

  loop     bench/quota_batch.py direct --per-entity: one AlterClientQuotas per entity,
           sequential, then one per entity removing its keys (what a tool that sends a
           request per entity does)
  floor    bench/quota_batch.py direct: one AlterClientQuotas setting every entity, then one
           removing them all
           (both through the project's provisioning.kinds.quotas.requests.alter_client_quotas, its
           batch size 1 or `--entities`)
  job      ./spark-submit.sh jobs/provision_topics.py apply --conf ... --json (cold, classic
           Spark) over a quota manifest table of the entities (`quotas.max_changes_per_cluster`
           raised to fit, `quotas.batch_size` = --batch-size); then the same table with every
           row `state: absent`, applied with --allow-quota-removals. Each is a whole run:
           manifests, snapshot, plan, policies, validate (AlterClientQuotas validateOnly),
           the requests, verify by DescribeClientQuotas, the audit. Its output's outcome
           counts must be exactly {set: 2N}, then {removed: 2N}.
  connect  the same through --remote, a thin client of a Spark Connect server started and
           warmed once
The job's first run per method makes its tables and is not counted. Nothing asserts a
time; the machine's load is recorded beside each figure.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "lib"), str(REPO)]

from bench.run import JOB, LOAD, SUBMIT, loadavg, machine  # noqa: E402
from dev.devkafka import KafkaCluster, ListenerSpec, free_ports  # noqa: E402
from dev.sparkconnect import ConnectServer, warm_up  # noqa: E402
from tests.support.tcpproxy import KafkaProxy  # noqa: E402

PY = sys.executable
METHODS = ("loop", "floor", "job", "connect")
API = {48: "DescribeClientQuotas", 49: "AlterClientQuotas"}
USER_PREFIX = "bench-"
# Two quotas an entity: values distinct per entity, whole bytes a second.
KEYS = ("producer_byte_rate", "consumer_byte_rate")
TOPIC = "quota-bench.live"
# The product's default `quotas.batch_size` (provisioning.kinds.quotas.conf.QuotasConf).
BATCH_SIZE = 200
# provisioning.run.engine's step lines.
STEP = re.compile(r"step (?P<name>[A-Za-z_ ]+): (?P<secs>[0-9.]+)s \(at [0-9.]+\)")


def users(count: int) -> list[str]:
    return [f"{USER_PREFIX}{i:05d}" for i in range(count)]


def quota_values(index: int) -> dict[str, float]:
    return {"producer_byte_rate": float(1_048_576 + index * 1024),
            "consumer_byte_rate": float(2_097_152 + index * 1024)}


# -- the direct baselines (run as their own process) ----------------------------------------

def direct(args: argparse.Namespace) -> int:
    from provisioning.conf import ClusterConf, KafkaConf
    from provisioning.kafka.client import ClusterAdmin
    from provisioning.kinds.quotas.entities import Entity, QuotaEntry
    from provisioning.kinds.quotas.requests import alter_client_quotas

    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    started = time.time()
    conf = ClusterConf("local", args.bootstrap, client_id="bench-quotas")
    sets = [QuotaEntry(Entity({"user": u}), quota_values(i))
            for i, u in enumerate(users(args.entities))]
    removes = [QuotaEntry(e.entity, dict.fromkeys(KEYS)) for e in sets]
    errors: list[str] = []

    def alter(admin: ClusterAdmin, entries: Sequence[QuotaEntry]) -> None:
        batch = 1 if args.per_entity else len(entries)
        for entry, result in zip(entries, alter_client_quotas(admin, entries, False, batch),
                                 strict=True):
            if result["error_code"] != 0:
                errors.append(f"{dict(entry.entity)}: {result['error_name']} "
                              f"{result['error_message']}")

    with ClusterAdmin(conf, None, KafkaConf(request_timeout_ms=120_000)) as admin:
        connected = time.time()
        alter(admin, sets)
        set_done = time.time()
        alter(admin, removes)
        removed = time.time()
    print(json.dumps({"errors": errors[:5], "started": started, "connected": connected,
                      "set": set_done, "removed": removed}))
    return 1 if errors else 0


def run_direct(bootstrap: str, entities: int, per_entity: bool) -> dict[str, Any]:
    cmd = [PY, str(Path(__file__).resolve()), "direct", "--bootstrap", bootstrap,
           "--entities", str(entities), *(["--per-entity"] if per_entity else [])]
    launched = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    exited = time.time()
    if proc.returncode != 0:
        raise RuntimeError(f"direct failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"set": out["set"] - launched, "remove": out["removed"] - out["set"],
            "set_requests": out["set"] - out["connected"], "exit": exited - launched,
            "command": " ".join(cmd)}


# -- the job --------------------------------------------------------------------------

def job_tables(work: Path, entities: int) -> tuple[Path, Path, Path]:
    """The topic manifest (one topic) and the two quota manifest tables (present, absent),
    written by jobs/load_manifest.py."""
    tables = work / "manifests"
    topics, present, absent = tables / "topics", tables / "quotas", tables / "quotas_absent"
    if (absent / "_delta_log").exists():
        return topics, present, absent
    tables.mkdir(parents=True, exist_ok=True)
    rows = [{"cluster": "local", "entity_user": u, "quotas": quota_values(i)}
            for i, u in enumerate(users(entities))]
    for kind, source, table, data in (
            ("topics", tables / "topics.json", topics,
             [{"cluster": "local", "topic": TOPIC, "partitions": 1, "replication_factor": 1}]),
            ("quotas", tables / "quotas.json", present, rows),
            ("quotas", tables / "absent.json", absent,
             [{"cluster": "local", "entity_user": r["entity_user"], "state": "absent"}
              for r in rows])):
        source.write_text(json.dumps(data))
        proc = subprocess.run([str(SUBMIT), str(LOAD), "--kind", kind, "--source", str(source),
                               "--table", str(table)], capture_output=True, text=True,
                              timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"load_manifest failed: {proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return topics, present, absent


def job_conf(path: Path, bootstrap: str, warehouse: Path, topics: Path, quotas: Path,
             entities: int, batch_size: int) -> Path:
    path.write_text(json.dumps({
        "clusters": {"local": {"bootstrap_servers": bootstrap}},
        "tables": {"manifests": [str(topics)], "quota_manifests": [str(quotas)],
                   "audit": str(warehouse / "topic_audit"),
                   "runs": str(warehouse / "provision_runs"),
                   "snapshots": str(warehouse / "topic_snapshots")},
        # Two quotas an entity, each a change.
        "quotas": {"max_changes_per_cluster": max(2 * entities, 200),
                   "batch_size": batch_size},
        "spark": {"settings": {"spark.sql.session.timeZone": "UTC"}},
    }, indent=2))
    return path


def run_job(work: Path, bootstrap: str, entities: int, batch_size: int,
            spark_args: Sequence[str]) -> dict[str, Any]:
    topics, present, absent = job_tables(work.parent, entities)
    # The job's tables outlive its runs, as in production: one warehouse per method.
    warehouse = work.parent / f"{work.name.split('-r')[0]}-warehouse"
    result: dict[str, Any] = {}
    for name, table, flags, outcome in (
            ("set", present, [], "set"),
            ("remove", absent, ["--allow-quota-removals"], "removed")):
        conf = job_conf(work / f"{name}.json", bootstrap, warehouse, topics, table, entities,
                        batch_size)
        cmd = [str(SUBMIT), *spark_args, str(JOB), "apply", "--conf", str(conf), *flags,
               "--json"]
        launched = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, cwd=work)
        exited = time.time()
        output = proc.stdout + proc.stderr
        (work / f"{name}.log").write_text(output)
        if proc.returncode != 0:
            raise RuntimeError(f"job {name} failed ({proc.returncode}): {output[-4000:]}")
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
        counts = doc["quotas"]["counts"]
        if counts != {outcome: 2 * entities}:
            raise RuntimeError(f"job {name}: quota outcomes {counts}, not "
                               f"{2 * entities} {outcome}")
        steps: dict[str, float] = {}
        for m in STEP.finditer(output):
            steps[m["name"]] = steps.get(m["name"], 0.0) + float(m["secs"])
        result[name] = exited - launched
        result[f"{name}_steps"] = {k: round(v, 2) for k, v in steps.items()}
        result[f"{name}_command"] = " ".join(cmd)
    return result


# -- harness --------------------------------------------------------------------------

def live_bench_quotas(cluster: KafkaCluster) -> int:
    """The bench's quotas (entity keys) the broker holds."""
    from provisioning.conf import ClusterConf, KafkaConf
    from provisioning.kafka.client import ClusterAdmin
    from provisioning.kinds.quotas.requests import describe_client_quotas

    conf = ClusterConf("local", cluster.bootstrap_servers)
    with ClusterAdmin(conf, None, KafkaConf()) as admin:
        found = describe_client_quotas(admin)
    return sum(len(values) for entity, values in found.items()
               if str(entity.get("user") or "").startswith(USER_PREFIX))


def measure(method: str, rep: int, root: Path, cluster: KafkaCluster, proxy: KafkaProxy,
            args: argparse.Namespace, connect: str | None) -> dict[str, Any]:
    bootstrap = f"127.0.0.1:{proxy.port}"
    before = dict(proxy.requests)
    load = loadavg()[0]
    if method in ("loop", "floor"):
        result = run_direct(bootstrap, args.entities, method == "loop")
    else:
        work = root / f"{method}-r{rep}"
        work.mkdir(parents=True)
        spark_args = ["--remote", connect] if method == "connect" and connect else \
            ["--driver-memory", "1g"]
        result = run_job(work, bootstrap, args.entities, args.batch_size, spark_args)
    # Counted before the check below, which reads the broker directly (not through the proxy).
    result["requests"] = {API[k]: proxy.requests[k] - before.get(k, 0) for k in API}
    left = live_bench_quotas(cluster)
    if left:
        raise RuntimeError(f"{method}: {left} bench quotas left on the broker")
    result.update(method=method, rep=rep, load=load)
    print(json.dumps(result), flush=True)
    return result


def summarize(results: Sequence[Mapping[str, Any]], entities: int, batch_size: int) -> str:
    rows = [f"{entities:,} user entities x {len(KEYS)} quotas, medians of "
            f"{max(r['rep'] for r in results) + 1} repetitions; seconds from launching the "
            f"process (job: quotas.batch_size {batch_size})", "",
            "| method | set | remove | AlterClientQuotas | DescribeClientQuotas | load |",
            "|---|---|---|---|---|---|"]
    for method in METHODS:
        mine = [r for r in results if r["method"] == method]
        if not mine:
            continue
        set_s = statistics.median(r["set"] for r in mine)
        remove_s = statistics.median(r["remove"] for r in mine)
        req = mine[-1]["requests"]
        rows.append(f"| {method} | {set_s:.1f} | {remove_s:.1f} | {req['AlterClientQuotas']} | "
                    f"{req['DescribeClientQuotas']} | "
                    f"{statistics.median(r['load'] for r in mine):.2f} |")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", choices=("direct",), default=None)
    parser.add_argument("--bootstrap")
    parser.add_argument("--per-entity", action="store_true")
    parser.add_argument("--entities", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE,
                        help="the job's quotas.batch_size (entities per AlterClientQuotas)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--out", default=None, help="write results JSON here (and .md beside)")
    args = parser.parse_args(argv)
    if args.entities < 1:
        parser.error("--entities must be at least 1")
    if args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    if args.command == "direct":
        return direct(args)
    methods = [m for m in args.methods.split(",") if m]
    unknown = set(methods) - set(METHODS)
    if unknown:
        parser.error(f"unknown method(s) {sorted(unknown)}; known: {', '.join(METHODS)}")

    root = Path(tempfile.mkdtemp(prefix="quota-bench-"))
    (port,) = free_ports(1)
    proxy = KafkaProxy(port)
    cluster = KafkaCluster(root / "kafka", nodes=1, heap_mb=1024,
                           listeners=(ListenerSpec(),
                                      ListenerSpec("PROXIED", "PLAINTEXT",
                                                   advertised_port=port)))
    server: ConnectServer | None = None
    results: list[dict[str, Any]] = []
    try:
        cluster.start(timeout_s=120)
        proxy.upstream_port = int(cluster.bootstrap_servers_for("PROXIED").split(":")[1])
        proxy.start()
        if "connect" in methods:
            server = ConnectServer(root / "connect")
            server.start()
            warm_up(server.address)
        # The job's first run makes its tables (and pays for it): not counted.
        for method in ("job", "connect"):
            if method in methods:
                measure(method, -1, root, cluster, proxy, args,
                        server.address if server else None)
        for rep in range(args.reps):
            for method in methods:
                results.append(measure(method, rep, root, cluster, proxy, args,
                                       server.address if server else None))
    finally:
        if server is not None:
            server.stop()
        proxy.stop()
        cluster.stop()
    summary = summarize(results, args.entities, args.batch_size)
    print(summary)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"machine": machine(), "entities": args.entities,
                                   "batch_size": args.batch_size, "results": results},
                                  indent=1))
        out.with_suffix(".md").write_text(summary + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
