"""`check` over many live topics: the job (cold spark-submit, warm Spark Connect) and
topicctl's `check`, on the same broker and the same topics.

    .venv/bin/python bench/check_scale.py --topics 10000 [--topicctl BINARY] [--reps 2]
        [--connect-only] [--tree CHECKOUT]

One local KRaft broker holds `--topics` single-partition topics (`chk.NNNNNN`, replication
factor 1, retention.ms 86400000), created up front with batched CreateTopics. A manifest
table names nine in ten of them as they are (the tenth are unmanaged), so `check` judges
every topic: the health rules, drift against the manifest, the always-on create policies.
topicctl gets one topic file per topic (bench/topicctl_peer.py's layout: retentionMinutes
1440, placement `any`), the files matching the live topics.

Measured, each from launching the process to its exit:
  job       ./spark-submit.sh jobs/provision_topics.py check --conf ... --json
            (classic Spark, a cold JVM per run); the first run, which creates the job's
            tables, is reported apart from the later ones
  connect   the same through --remote, a thin client of a Spark Connect server started
            once (and warmed) for the measurement
  usage     the connect runs measure usage (the inventory: DescribeLogDirs per broker,
            ListOffsets per leader, the groups' offsets); `no-usage` runs the same with
            `checks.usage: false`, so the difference is what usage costs
  topicctl  topicctl check --cluster-config cluster.yaml 'topics/*.yaml'
`--connect-only` leaves the cold runs out; `--tree` measures another checkout's job (an
older commit's, for a before-and-after) on the same kind of broker, topics and server.
Each job run's steps (the engine's "step NAME: Ns" lines) are kept beside its time: where
the time goes. One more connect run with `--profile`, left out of the medians, gives its
requests to the Spark Connect server by kind and its Delta commits by table
(`connect_round_trips`); older checkouts without request counts give its steps only.
Nothing asserts a time; the machine's load is recorded beside each figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "lib"), str(REPO)]

from bench import topicctl_peer  # noqa: E402
from bench.run import JOB, SUBMIT, load_manifest, machine, write_conf  # noqa: E402
from bench.waits import checkout_commit  # noqa: E402
from dev.devkafka import KafkaCluster  # noqa: E402
from dev.sparkconnect import ConnectServer, warm_up  # noqa: E402

PREFIX = "chk."
RETENTION_MS = "86400000"  # topicctl_peer's retentionMinutes: 1440


def create_topics(bootstrap: str, names: list[str], batch: int = 1000) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=120000)
    try:
        for start in range(0, len(names), batch):
            admin.create_topics(
                [NewTopic(n, 1, 1, topic_configs={"retention.ms": RETENTION_MS})
                 for n in names[start:start + batch]], timeout_ms=120000)
        deadline = time.monotonic() + 600
        while len(set(names) - set(admin.list_topics())) and time.monotonic() < deadline:
            time.sleep(1)
        missing = set(names) - set(admin.list_topics())
        if missing:
            raise RuntimeError(f"{len(missing)} topic(s) never appeared")
    finally:
        admin.close()


def write_manifest(work: Path, names: list[str]) -> Path:
    rows = [{"cluster": "local", "topic": n, "partitions": 1, "replication_factor": 1,
             "configs": {"retention.ms": RETENTION_MS}, "owner": "bench"}
            for i, n in enumerate(names) if i % 10 != 9]
    return load_manifest(rows, work / "manifest.json", work / "warehouse" / "desired_topics")


def run_check(work: Path, conf: Path, spark_args: list[str], name: str,
              tree: Path = REPO, profiled: bool = False) -> dict[str, Any]:
    cmd = [str(tree / SUBMIT.relative_to(REPO)), *spark_args, str(tree / JOB.relative_to(REPO)),
           "check", "--conf", str(conf), "--json", *(["--profile"] if profiled else [])]
    load = os.getloadavg()[0]
    launched = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=7200, cwd=work)
    seconds = time.monotonic() - launched
    output = proc.stdout + proc.stderr
    (work / f"{name}.log").write_text(output)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"check exited {proc.returncode}: {output[-4000:]}")
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    steps: dict[str, float] = {}
    for step, took in re.findall(r"provisioning\.run\.engine: step (.+?): ([\d.]+)s", output):
        steps[step] = steps.get(step, 0.0) + float(took)
    return {"seconds": seconds, "exit_code": proc.returncode, "counts": doc.get("counts"),
            "violations": len(doc.get("violations") or []), "load_1m": load,
            "steps": steps, "command": " ".join(cmd), "profile": doc.get("profile")}


def round_trips(profile: dict[str, Any] | None) -> dict[str, Any] | None:
    """A profiled run's requests to the Spark Connect server by kind and Delta commits by
    table (the totals of its `--profile`)."""
    if not profile:
        return None
    totals = profile["totals"]
    return {"server_requests": {k["name"]: k["count"]
                                for k in totals["server_requests"]["by_kind"]},
            "commits": {c["name"]: c["count"] for c in totals["commits"]}}


def run_topicctl(binary: Path, work: Path, bootstrap: str, topics: int) -> dict[str, Any]:
    cluster = topicctl_peer.write_topic_files(work / "topicctl", bootstrap, topics,
                                              prefix=PREFIX)
    cmd = [str(binary), "check", "--cluster-config", str(cluster),
           topicctl_peer.topics_glob(work / "topicctl")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOPICCTL_")}
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile() as out:
        launched = time.monotonic()
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out,
                              stderr=subprocess.STDOUT, env=env, timeout=7200, check=False)
        seconds = time.monotonic() - launched
        out.seek(0)
        text = out.read().decode("utf-8", errors="replace")
    (work / "topicctl-check.log").write_text(text)
    return {"seconds": seconds, "exit_code": proc.returncode, "load_1m": load,
            "version": topicctl_peer.version(binary), "output_tail": text[-1000:],
            "command": " ".join(cmd)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=10000)
    parser.add_argument("--reps", type=int, default=2,
                        help="measured runs per method after the first")
    parser.add_argument("--topicctl", type=Path, default=None)
    parser.add_argument("--connect-memory", default="2g")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    parser.add_argument("--tree", type=Path, default=REPO,
                        help="the checkout whose job is measured (default: this one); an "
                             "older commit's, for a before-and-after")
    parser.add_argument("--connect-only", action="store_true",
                        help="no cold spark-submit runs: only the warm client's")
    args = parser.parse_args(argv)
    tree = args.tree.resolve()

    work = (args.work or Path(tempfile.mkdtemp(prefix="check-scale-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    names = [topicctl_peer.topic_name(i, PREFIX) for i in range(args.topics)]
    cluster = KafkaCluster(work / "kafka", nodes=1, heap_mb=1024)
    cluster.start(timeout_s=120)
    server = None
    try:
        create_topics(cluster.bootstrap_servers, names)
        write_manifest(work, names)
        warehouse = work / "warehouse"
        conf = write_conf(work / "conf.json", cluster.bootstrap_servers, warehouse, 1000)
        result: dict[str, Any] = {"topics": args.topics, "machine": machine(),
                                  "tree": str(tree), "commit": checkout_commit(tree)}
        if not args.connect_only:
            result["job_first"] = run_check(work, conf, [], "job-0", tree)
            job = [run_check(work, conf, [], f"job-{i + 1}", tree) for i in range(args.reps)]
            result.update(job=job, job_median=statistics.median(r["seconds"] for r in job))
        server = ConnectServer(work / "spark-connect", driver_memory=args.connect_memory)
        server.start()
        warm_up(server.address)
        remote = ["--remote", server.address]
        connect = [run_check(work, conf, remote, f"connect-{i}", tree)
                   for i in range(args.reps + 1)]
        plain = work / "conf-no-usage.json"
        plain.write_text(json.dumps({**json.loads(conf.read_text()),
                                     "checks": {"usage": False}}))
        no_usage = [run_check(work, plain, remote, f"no-usage-{i}", tree)
                    for i in range(args.reps)]
        result.update(no_usage=no_usage,
                      no_usage_median=statistics.median(r["seconds"] for r in no_usage))
        # One more run with --profile (left out of the medians: the profile costs a little),
        # for its requests to the server and its commits.
        profiled = run_check(work, conf, remote, "connect-profiled", tree, profiled=True)
        result.update(connect=connect, connect_profiled=profiled,
                      connect_round_trips=round_trips(profiled["profile"]),
                      connect_first=connect[0]["seconds"],
                      connect_median=statistics.median(r["seconds"] for r in connect[1:]))
        if args.topicctl is not None:
            result["topicctl"] = run_topicctl(args.topicctl, work, cluster.bootstrap_servers,
                                              args.topics)
    finally:
        if server is not None:
            server.stop()
        cluster.stop()
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    out = args.out / f"check-scale-{args.topics}-{stamp}.json"
    out.write_text(json.dumps(result, indent=2, default=str))
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
