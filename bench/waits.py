"""The seconds a person waits (issue 53): small changes over many live topics, the job beside
topicctl on the same brokers, back to back, each job run with its `--profile`.

    .venv/bin/python bench/waits.py --topicctl /path/to/topicctl            # every case
    .venv/bin/python bench/waits.py --cases change,noop,one --reps 3 --remote sc://...

Cases (every time is launch to exit, the 1-minute load average recorded before each run):

change    `apply --allow-alter` of 10 config changes over 1,000 live topics, warm (a thin
          client of a Spark Connect server), against `topicctl apply` over 1,000 topic files
          with 10 changed. The job and topicctl manage the same 1,000 topics on one broker
          (1 partition, retention.ms 86400000 = topicctl's retentionMinutes 1440) and take
          turns: the job moves `max.message.bytes` of 10 topics from A to B, topicctl moves
          them back; each run makes exactly its 10 changes (checked on the broker).
noop      the job's no-op `apply` over the same topics (its manifest unchanged since the
          run before, as a daily run finds it) against topicctl's no-op apply.
one       a one-topic change, warm: one topic's `max.message.bytes`, there and back (two
          runs, each launch to exit).
cold      the same 10 changes through classic `spark-submit` (a new JVM), right after the
          warm change of the same repetition.
clusters  4 local brokers of 1,000 topics each: one warm run with 10 changes per cluster
          (40), against topicctl applied cluster after cluster; with the job's admin tasks'
          overlap (its per-cluster parallelism: the tasks' time over their steps' time).

`check` with usage over 10,000 topics is bench/check_scale.py. The manifest changes between
runs are written with jobs/load_manifest.py (not timed). Results go to
bench/results/waits-<stamp>.json, with every run's command and profile.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
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

import yaml  # noqa: E402

from bench import kafka_direct, topicctl_peer  # noqa: E402
from bench.run import machine, versions  # noqa: E402
from dev.devkafka import KafkaCluster  # noqa: E402
from dev.sparkconnect import ConnectServer, warm_up  # noqa: E402

CASES = ("change", "noop", "one", "cold", "clusters")
TOPICS = 1000
CHANGES = 10
PREFIX = "wait."
KEY = "max.message.bytes"
A, B = "1000000", "2000000"
RETENTION = {"retention.ms": "86400000"}


def names(topics: int = TOPICS) -> list[str]:
    return [topicctl_peer.topic_name(i, PREFIX) for i in range(topics)]


def changed(all_names: Sequence[str], count: int = CHANGES) -> list[str]:
    step = len(all_names) // count
    return [all_names[i * step] for i in range(count)]


# The topic the one-topic case changes: managed by both tools, never one of the ten.
def single(all_names: Sequence[str]) -> str:
    return all_names[1]


def manifest_rows(cluster: str, all_names: Sequence[str], values: Mapping[str, str]
                  ) -> list[dict[str, Any]]:
    """The job's desired topics: every topic with RETENTION, and KEY where `values` says."""
    return [{"cluster": cluster, "topic": n, "partitions": 1, "replication_factor": 1,
             "configs": {**RETENTION, **({KEY: values[n]} if n in values else {})},
             "owner": "bench"} for n in all_names]


def topic_files(directory: Path, bootstrap: str, all_names: Sequence[str],
                values: Mapping[str, str]) -> tuple[Path, str]:
    """topicctl's files for the same desired state (retentionMinutes 1440, KEY in
    `settings` where `values` says); the cluster file and the files' glob."""
    cluster = topicctl_peer.write_topic_files(directory, bootstrap, len(all_names),
                                              prefix=PREFIX)
    for name, value in values.items():
        path = directory / topicctl_peer.TOPICS_DIR / f"{name}.yaml"
        doc = yaml.safe_load(path.read_text())
        doc["spec"]["settings"] = {KEY: int(value)}
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return cluster, topicctl_peer.topics_glob(directory)


def create_topics(bootstrap: str, all_names: Sequence[str], values: Mapping[str, str]) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=120000)
    try:
        for start in range(0, len(all_names), 1000):
            admin.create_topics([NewTopic(n, 1, 1, topic_configs={
                **RETENTION, **({KEY: values[n]} if n in values else {})})
                for n in all_names[start:start + 1000]], timeout_ms=120000)
        kafka_direct.wait_ready(admin, list(all_names))
    finally:
        admin.close()


def check_values(bootstrap: str, wanted: Mapping[str, str]) -> None:
    live = kafka_direct.topic_config(bootstrap, list(wanted), KEY)
    wrong = {t: v for t, v in live.items() if v != wanted[t]}
    if wrong:
        raise RuntimeError(f"{KEY} is not as the run should have left it: {wrong}")


class Job:
    """The job on one warehouse and conf; every run with --profile and --json."""

    def __init__(self, work: Path, clusters: Mapping[str, str], remote: str,
                 tree: Path = REPO, profiles: bool = True) -> None:
        self.work = work
        # The checkout whose job runs (another commit's, for a before-and-after).
        self.submit, self.job = tree / "spark-submit.sh", tree / "jobs" / "provision_topics.py"
        self.loader = tree / "jobs" / "load_manifest.py"
        self.profiles = profiles
        work.mkdir(parents=True, exist_ok=True)
        self.warehouse = work / "warehouse"
        self.remote = remote
        self.conf = work / "conf.json"
        self.conf.write_text(json.dumps({
            "clusters": {n: {"bootstrap_servers": b} for n, b in clusters.items()},
            "tables": {"manifests": [str(self.warehouse / "desired_topics")],
                       "audit": str(self.warehouse / "topic_audit"),
                       "runs": str(self.warehouse / "provision_runs"),
                       "snapshots": str(self.warehouse / "topic_snapshots")},
            "kafka": {"request_timeout_ms": 120000, "operation_timeout_ms": 60000,
                      "verify_timeout_ms": 300000},
            "spark": {"settings": {"spark.sql.session.timeZone": "UTC"}},
        }, indent=2))
        self.runs = 0
        # Whether runs are made with --profile (the first repetition's are).
        self.profiled = False

    def manifest(self, rows: Sequence[Mapping[str, Any]]) -> None:
        source = self.work / "manifest.json"
        source.write_text(json.dumps(list(rows)))
        proc = subprocess.run([str(self.submit), "--remote", self.remote, str(self.loader),
                               "--source", str(source), "--table",
                               str(self.warehouse / "desired_topics")],
                              capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"load_manifest failed: {proc.stdout[-3000:]}"
                               f"{proc.stderr[-3000:]}")

    def apply(self, *extra: str, cold: bool = False) -> dict[str, Any]:
        launcher = [] if cold else ["--remote", self.remote]
        profiled = self.profiled and self.profiles
        cmd = [str(self.submit), *launcher, str(self.job), "apply", "--conf", str(self.conf),
               *extra, *(["--profile"] if profiled else []), "--json"]
        load = os.getloadavg()[0]
        before = checkpoints(self.warehouse)
        launched = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, cwd=self.work)
        seconds = time.monotonic() - launched
        # Written by the run, whether on its path or after its last commit that matters.
        written = sorted(str(p.relative_to(self.warehouse))
                         for p in checkpoints(self.warehouse) - before)
        self.runs += 1
        output = proc.stdout + proc.stderr
        (self.work / f"run-{self.runs:03d}.log").write_text(output)
        if proc.returncode != 0:
            raise RuntimeError(f"the job exited {proc.returncode}: {output[-4000:]}")
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
        return {"seconds": round(seconds, 3), "load_1m": load, "counts": doc.get("counts"),
                "run_id": doc.get("run_id"), "profiled": profiled,
                "profile": doc.get("profile"), "checkpoints": written,
                "command": " ".join(cmd), "log": f"run-{self.runs:03d}.log"}


def checkpoints(warehouse: Path) -> set[Path]:
    """The Delta checkpoint files of every table under `warehouse`."""
    return set(warehouse.glob("**/_delta_log/*.checkpoint*.parquet"))


def topicctl(binary: Path, cluster: Path, pattern: str, log: Path) -> dict[str, Any]:
    load = os.getloadavg()[0]
    done = topicctl_peer.apply(binary, cluster, pattern, 3600, log)
    return {"seconds": round(done["seconds"], 3), "load_1m": load,
            "command": f"{binary} apply --skip-confirm --cluster-config {cluster} "
                       f"--sleep-loop-duration 0s '{pattern}'"}


def _load(run: Mapping[str, Any]) -> str:
    """A run's 1-minute load before it, as the tables print it ("?": not recorded)."""
    load = run.get("load_1m")
    return "?" if load is None else f"{load:.1f}"


def expect(run: Mapping[str, Any], counts: Mapping[str, int]) -> Mapping[str, Any]:
    if run["counts"] != dict(counts):
        raise RuntimeError(f"expected the outcomes {dict(counts)}, the run had {run['counts']}")
    return run


def single_cluster(args: argparse.Namespace, work: Path, remote: str) -> dict[str, Any]:
    """The change, noop, one and cold cases on one broker (see the module docstring)."""
    all_names = names()
    ten = changed(all_names)
    one = single(all_names)
    at_a = dict.fromkeys([*ten, one], A)
    ten_at_b = {**at_a, **dict.fromkeys(ten, B)}
    one_at_b = {**at_a, one: B}
    cluster = KafkaCluster(work / "kafka", nodes=1, heap_mb=1024)
    cluster.start(timeout_s=180)
    results: dict[str, list[Any]] = {c: [] for c in ("change", "noop", "one", "cold")}
    peer: dict[str, list[Any]] = {"change": [], "noop": []}
    try:
        bootstrap = cluster.bootstrap_servers
        create_topics(bootstrap, all_names, at_a)
        job = Job(work / "job", {"local": bootstrap}, remote, args.tree, args.profiles)
        rows_a = manifest_rows("local", all_names, at_a)
        job.manifest(rows_a)
        # Uncounted: the first run makes the job's tables, the second fills the session's
        # manifest cache.
        for _ in range(2):
            expect(job.apply(), {"already_present": TOPICS})
        peer_dir = work / "topicctl"
        for rep in range(args.reps + 1):
            # The first repetition's runs are profiled (and left out of the medians: the
            # profile costs a little), the others are timed as they are.
            job.profiled = rep == 0
            if "noop" in args.cases:
                results["noop"].append(expect(job.apply(), {"already_present": TOPICS}))
                if args.topicctl:
                    files, pattern = topic_files(peer_dir, bootstrap, all_names, at_a)
                    peer["noop"].append(topicctl(args.topicctl, files, pattern,
                                                 work / f"topicctl-noop-{rep}.log"))
            if {"change", "cold"} & set(args.cases):
                job.manifest(manifest_rows("local", all_names, ten_at_b))
                changes = {"altered": CHANGES, "already_present": TOPICS - CHANGES}
                results["change"].append(expect(job.apply("--allow-alter"), changes))
                check_values(bootstrap, ten_at_b)
                if args.topicctl:
                    files, pattern = topic_files(peer_dir, bootstrap, all_names, at_a)
                    peer["change"].append(topicctl(args.topicctl, files, pattern,
                                                   work / f"topicctl-change-{rep}.log"))
                    check_values(bootstrap, at_a)
                else:
                    job.manifest(rows_a)
                    job.apply("--allow-alter")
                    job.manifest(manifest_rows("local", all_names, ten_at_b))
                if "cold" in args.cases:
                    results["cold"].append(expect(job.apply("--allow-alter", cold=True),
                                                  changes))
                    check_values(bootstrap, ten_at_b)
                job.manifest(rows_a)
                if "cold" in args.cases:
                    job.apply("--allow-alter")  # back to A (uncounted)
                check_values(bootstrap, at_a)
            if "one" in args.cases:
                job.manifest(manifest_rows("local", all_names, one_at_b))
                there = expect(job.apply("--allow-alter"),
                               {"altered": 1, "already_present": TOPICS - 1})
                check_values(bootstrap, one_at_b)
                job.manifest(rows_a)
                back = expect(job.apply("--allow-alter"),
                              {"altered": 1, "already_present": TOPICS - 1})
                check_values(bootstrap, at_a)
                results["one"] += [there, back]
            # The next repetition's no-op finds the manifest as the run before read it.
            job.apply()
    finally:
        cluster.stop()
    return {"job": results, "topicctl": peer}


def four_clusters(args: argparse.Namespace, work: Path, remote: str) -> dict[str, Any]:
    """The clusters case: 4 brokers, 1,000 topics each, 10 changes per cluster."""
    all_names = names()
    ten = changed(all_names)
    at_a = dict.fromkeys(ten, A)
    at_b = dict.fromkeys(ten, B)
    brokers = [KafkaCluster(work / f"kafka-{i}", nodes=1, heap_mb=768) for i in range(4)]
    runs: list[Any] = []
    peer: list[Any] = []
    try:
        for broker in brokers:
            broker.start(timeout_s=180)
        clusters = {f"c{i}": b.bootstrap_servers for i, b in enumerate(brokers)}
        for bootstrap in clusters.values():
            create_topics(bootstrap, all_names, at_a)
        job = Job(work / "job", clusters, remote, args.tree, args.profiles)

        def rows(values: Mapping[str, str]) -> list[dict[str, Any]]:
            return [r for c in clusters for r in manifest_rows(c, all_names, values)]

        job.manifest(rows(at_a))
        for _ in range(2):
            expect(job.apply(), {"already_present": 4 * TOPICS})
        for rep in range(args.reps + 1):
            job.profiled = rep == 0
            job.manifest(rows(at_b))
            run = expect(job.apply("--allow-alter"), {
                "altered": 4 * CHANGES, "already_present": 4 * (TOPICS - CHANGES)})
            run["parallelism"] = parallelism(run["profile"])
            runs.append(run)
            for bootstrap in clusters.values():
                check_values(bootstrap, at_b)
            if args.topicctl:
                each = []
                for i, bootstrap in enumerate(clusters.values()):
                    files, pattern = topic_files(work / f"topicctl-{i}", bootstrap, all_names,
                                                 at_a)
                    each.append(topicctl(args.topicctl, files, pattern,
                                         work / f"topicctl-{rep}-{i}.log"))
                    check_values(bootstrap, at_a)
                peer.append({"seconds": round(sum(e["seconds"] for e in each), 3),
                             "load_1m": each[0]["load_1m"], "clusters": each})
            else:
                job.manifest(rows(at_a))
                job.apply("--allow-alter")
            job.manifest(rows(at_a))
            job.apply()
    finally:
        for broker in brokers:
            broker.stop()
    return {"job": runs, "topicctl": peer}


def parallelism(profile: Mapping[str, Any] | None) -> dict[str, float]:
    """Per step that ran admin tasks: their time together over the step's wall time (1.0:
    one cluster's task at a time)."""
    if not profile:
        return {}
    return {s["step"]: round(s["tasks"]["seconds"] / s["seconds"], 2)
            for s in profile["steps"] if s.get("tasks", {}).get("count") and s["seconds"]}


def median_of(runs: Sequence[Mapping[str, Any]]) -> float | None:
    """The median time of the runs that were not profiled (topicctl's: all)."""
    timed = [r["seconds"] for r in runs if not r.get("profiled")]
    return round(statistics.median(timed), 3) if timed else None


def _named(entries: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(f"{e['name']} {e['count']}x {e['seconds']:.2f}s" for e in entries) or "-"


def _server(entry: Mapping[str, Any]) -> str:
    server = entry.get("server_requests") or {}
    if not server.get("count"):
        return "-"
    return f"{server['count']} (" + ", ".join(
        f"{e['name']} {e['count']}" for e in server["by_kind"]) + ")"


def profile_table(profile: Mapping[str, Any]) -> list[str]:
    """A run's profile as a Markdown table: its steps, then the totals; the requests to the
    Spark Connect server by method, the Delta commits by table."""
    lines = ["| step | s | Spark work (n, s) | server requests | Delta commits | Kafka requests "
             "| admin tasks |",
             "|---|---|---|---|---|---|---|"]
    for s in [*profile["steps"], {"step": "**total**", **profile["totals"]}]:
        tasks = s.get("tasks") or {}
        ran = f"{tasks['count']}x {tasks['seconds']:.2f}s" if tasks.get("count") else "-"
        lines.append(
            f"| {s['step']} | {s['seconds']:.2f} | {s['spark']['count']}, "
            f"{s['spark']['seconds']:.2f} | {_server(s)} | {_named(s['commits'])} "
            f"| {_named(s['requests'])} | {ran} |")
    return lines


def summary(result: Mapping[str, Any]) -> str:
    """The run's Markdown: each case's times (every run, the median of those not profiled)
    beside topicctl's, then the profile of each case's profiled run."""
    single = result.get("single", {})
    cases: list[tuple[str, list[Any], list[Any]]] = [
        (f"{c}", single.get("job", {}).get(c, []), single.get("topicctl", {}).get(c, []))
        for c in ("change", "noop", "one", "cold")]
    clusters = result.get("clusters", {})
    cases.append(("clusters", clusters.get("job", []), clusters.get("topicctl", [])))
    lines = [f"tree {result.get('tree')} at {result.get('commit')}; started {result['started']} "
             f"UTC; load before {', '.join(f'{x:.2f}' for x in result['load_before'])}", "",
             "| case | job median s | job runs s (load) | topicctl median s | topicctl runs s "
             "(load) |", "|---|---|---|---|---|"]
    for name, job, peer in cases:
        if not job and not peer:
            continue
        runs = ", ".join(f"{r['seconds']:.1f}{'p' if r.get('profiled') else ''} "
                         f"({r['load_1m']:.1f})" for r in job)
        peers = ", ".join(f"{r['seconds']:.1f} ({_load(r)})" for r in peer)
        lines.append(f"| {name} | {median_of(job)} | {runs} | {median_of(peer)} | {peers} |")
    lines.append("")
    lines.append("(`p`: a run with --profile, left out of the median.)")
    for name, job, _ in cases:
        profiled = next((r for r in job if r.get("profile")), None)
        if profiled is None:
            continue
        lines += ["", f"Profile of a `{name}` run ({profiled['seconds']:.1f} s launch to exit, "
                      f"load {profiled['load_1m']:.1f}; Spark work: "
                      f"{profiled['profile']['spark_measures']}):", "",
                  *profile_table(profiled["profile"]),
                  "", "Delta checkpoints written by the case's runs: " + (", ".join(
                      f"{r['seconds']:.1f}s run: {len(r.get('checkpoints') or [])}"
                      for r in job))]
        if profiled.get("parallelism"):
            lines.append(f"\nadmin tasks' time over their step's: {profiled['parallelism']}")
    return "\n".join(lines) + "\n"


def checkout_commit(tree: Path) -> str | None:
    """The commit `tree` is at, when it is a git checkout."""
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() or None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--summarize", type=Path, default=None,
                        help="only write the Markdown of an earlier run's JSON beside it")
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--reps", type=int, default=3,
                        help="timed repetitions, after one whose job runs are profiled")
    parser.add_argument("--topicctl", type=Path, default=None)
    parser.add_argument("--remote", default=None,
                        help="a running Spark Connect server (default: start the project's)")
    parser.add_argument("--tree", type=Path, default=REPO,
                        help="the checkout whose job is measured (default: this one); an "
                             "older commit's, for a before-and-after")
    parser.add_argument("--tree-commit", default=None,
                        help="the commit --tree holds, when it is not a git checkout")
    parser.add_argument("--no-profiles", dest="profiles", action="store_false",
                        help="no --profile run (a checkout without it)")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args(argv)
    if args.summarize is not None:
        earlier = json.loads(args.summarize.read_text())
        args.summarize.with_suffix(".md").write_text(summary(earlier))
        print(args.summarize.with_suffix(".md"))
        return 0
    args.cases = [c for c in args.cases.split(",") if c]
    unknown = set(args.cases) - set(CASES)
    if unknown:
        parser.error(f"unknown case(s): {', '.join(sorted(unknown))}")
    work = (args.work or Path(tempfile.mkdtemp(prefix="waits-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    result: dict[str, Any] = {"started": started, "machine": machine(),
                              "versions": versions(), "cases": args.cases,
                              "tree": str(args.tree.resolve()),
                              "commit": args.tree_commit or checkout_commit(args.tree),
                              "reps": args.reps, "load_before": os.getloadavg()}
    if args.topicctl:
        result["topicctl_version"] = topicctl_peer.version(args.topicctl)
    server = None
    try:
        remote = args.remote
        if remote is None:
            server = ConnectServer(work / "spark-connect")
            server.start()
            warm_up(server.address)
            remote = server.address
        if {"change", "noop", "one", "cold"} & set(args.cases):
            result["single"] = single_cluster(args, work / "single", remote)
        if "clusters" in args.cases:
            result["clusters"] = four_clusters(args, work / "clusters", remote)
    finally:
        if server is not None:
            server.stop()
    result["load_after"] = os.getloadavg()
    single_runs = result.get("single", {})
    result["medians"] = {
        **{f"job {c}": median_of(single_runs.get("job", {}).get(c, [])) for c in
           ("change", "noop", "one", "cold")},
        **{f"topicctl {c}": median_of(single_runs.get("topicctl", {}).get(c, [])) for c in
           ("change", "noop")},
        "job clusters": median_of(result.get("clusters", {}).get("job", [])),
        "topicctl clusters": median_of(result.get("clusters", {}).get("topicctl", [])),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"waits-{started}.json"
    out.write_text(json.dumps(result, indent=2, default=str))
    out.with_suffix(".md").write_text(summary(result))
    print(json.dumps(result["medians"]))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
