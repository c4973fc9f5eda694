"""`make bench`: the job against a plain kafka-python floor and a per-topic loop, side by side.

    .venv/bin/python bench/run.py                      # the daily run at 1,000 topics, every method
    .venv/bin/python bench/run.py --only broker --cases 10000x1 --methods floor,job  # cold, 10,000
    .venv/bin/python bench/run.py --only broker --cases 1000x1 --reps 1 --methods job
    .venv/bin/python bench/run.py --only plan --plan-rows 100000,300000,1000000
    .venv/bin/python bench/run.py --only pipelining

Three parts, each writing JSON under the results directory and a Markdown summary:

broker      one fresh local KRaft broker (devkafka.KafkaCluster) per measured run (started, then
            left --settle seconds before the measured process is launched), for each
            case (topics x partitions) and method, methods interleaved within a repetition:
              floor     bench/kafka_direct.py floor (batched validateOnly + batched create)
              loop      bench/kafka_direct.py loop  (one CreateTopics per topic, sequential)
              job       ./spark-submit.sh jobs/provision_topics.py apply --conf ... --json
                        (classic Spark, a cold JVM per run)
              connect   ./spark-submit.sh --remote sc://... jobs/provision_topics.py apply ...
                        (a thin client of the project's own Spark Connect server, what
                        `make connect-up` starts, started once for the part)
              stock     the same, against a stock Spark Connect server (Spark's defaults
                        but Delta and loopback: sparkconnect.ConnectServer(stock=True)),
                        started once for the part
            job, connect and stock run on job tables that outlive the run, as in
            production: the first run of each method and case makes them.
              topicctl  bench/topicctl_peer.py (segmentio/topicctl apply; --topicctl BINARY)
            end points, all from the moment the harness launched the process:
              first run     (job, connect, stock) before the repetitions, --first-runs
                            times: the create on a fresh broker on new job tables, launch
                            to exit; the first of them makes the tables the repetitions use
                            (and is the server's first run of the job), the others make
                            tables of their own
              acknowledged  the create responses are back
              ready         every partition of every topic has a leader
              no-op         (job, connect, topicctl) a second run right after, over the same
                            topics, now all live: launch to exit
              10 changes    (job, connect, topicctl) then retention.ms raised to 14 days for
                            10 of the live topics in the desired state (job: the manifest
                            table rewritten, one commit; topicctl: those 10 topic files), and
                            the run that applies it (job: apply --allow-alter; topicctl: its
                            apply), launch to exit; the broker is then asked for the 10
                            topics' retention.ms, and a run that left one unchanged fails
            plus the job's own step timings (the `step ...` lines provisioning.run.engine logs)
            of each of its runs: create, no-op rerun and 10 changes.
plan        bench/plan_scale.py: the plan with every policy on synthetic rows, no broker.
pipelining  bench/pipelining.py: sequential vs concurrent CreateTopics batches on one client.

Nothing here asserts a time: it measures, records the machine's load next to every
figure, and prints the medians and ratios.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
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

from bench import kafka_direct, topicctl_peer  # noqa: E402
from dev.devkafka import KafkaCluster  # noqa: E402
from dev.sparkconnect import ConnectServer, warm_up  # noqa: E402

PY = sys.executable
SUBMIT = REPO / "spark-submit.sh"
JOB = REPO / "jobs" / "provision_topics.py"
LOAD = REPO / "jobs" / "load_manifest.py"
METHODS = ("floor", "loop", "job", "connect", "stock", "topicctl")
# The methods that run as the job does (and log its steps).
JOB_METHODS = ("job", "connect", "stock")
# The methods that run the job as a client of a Spark Connect server, and which server.
SERVERS = {"connect": False, "stock": True}
# The job's step lines, in the order a run logs them (provisioning.run.engine.Steps).
STEP = re.compile(r"step (?P<name>[A-Za-z_ ]+): (?P<secs>[0-9.]+)s \(at (?P<at>[0-9.]+)\)")
# The third end point: after the no-op rerun, CHANGES of the live topics get a new
# CHANGE_CONFIG in the desired state, and the run that applies it is timed. 14 days raises
# the retention both of the job's topics (the broker's default, 7 days: its rows manage no
# configs) and of topicctl's (1440 minutes, as its files ask), so no policy of either holds
# it back (the job's retention_decrease, topicctl's stepped retention drops).
CHANGES = 10
CHANGE_CONFIG = "retention.ms"
CHANGE_MINUTES = 14 * 1440
CHANGE_VALUE = str(CHANGE_MINUTES * 60_000)


def loadavg() -> list[float]:
    return [float(x) for x in os.getloadavg()]


# -- machine and versions ---------------------------------------------------------------

def machine() -> dict[str, Any]:
    mem_kb = 0
    model = platform.processor()
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "memory_gib": round(mem_kb / 1024 / 1024, 1),
            "cpu": model, "kernel": platform.release(), "python": platform.python_version()}


def versions() -> dict[str, str]:
    from importlib.metadata import version

    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    kafka_jar = sorted((REPO / ".cache" / "jars" / "kafka").glob("kafka_2.13-*.jar"))
    delta_jar = sorted((REPO / ".cache" / "jars" / "delta").glob("delta-spark_*.jar"))
    return {
        "pyspark": version("pyspark"),
        "delta-spark (python)": version("delta-spark"),
        "delta jar": delta_jar[0].name if delta_jar else "missing",
        "kafka-python": version("kafka-python"),
        "kafka broker": kafka_jar[0].name.removeprefix("kafka_2.13-").removesuffix(".jar")
        if kafka_jar else "missing",
        "java": java.splitlines()[0] if java else "unknown",
        "driver class archive": _driver_archive(),
    }


def _driver_archive() -> str:
    """Whether spark-submit.sh starts the job's driver with a class-data-sharing archive."""
    setting = os.environ.get("PROVISIONING_DRIVER_ARCHIVE")
    path = Path(setting) if setting else REPO / ".cache" / "driver" / "driver.jsa"
    if setting == "off" or not path.is_file():
        return "off"
    return f"{path} ({path.stat().st_size // 2**20} MiB)"


# -- one measured run -------------------------------------------------------------------

def _start_broker(base: Path, heap_mb: int) -> KafkaCluster:
    cluster = KafkaCluster(base, nodes=1, heap_mb=heap_mb)
    cluster.start(timeout_s=120)
    return cluster


def run_direct(mode: str, bootstrap: str, topics: int, partitions: int,
               batch_size: int) -> dict[str, Any]:
    cmd = [PY, str(REPO / "bench" / "kafka_direct.py"), mode, "--bootstrap", bootstrap,
           "--topics", str(topics), "--partitions", str(partitions),
           "--batch-size", str(batch_size)]
    launched = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    exited = time.time()
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} failed ({proc.returncode}): {proc.stdout[-2000:]}"
                           f"{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "acknowledged": out["acknowledged"] - launched,
        "ready": out["ready"] - launched,
        "validated": out["validated"] - launched,
        "connected": out["connected"] - launched,
        "exit": exited - launched,
        "requests": out["requests"],
        "command": " ".join(cmd),
    }


def write_conf(path: Path, bootstrap: str, warehouse: Path, batch_size: int,
               settings: Mapping[str, str] | None = None) -> Path:
    """The job's conf for a run; `settings` go into its spark.settings."""
    path.write_text(json.dumps({
        "clusters": {"local": {"bootstrap_servers": bootstrap}},
        "tables": {
            "manifests": [str(warehouse / "desired_topics")],
            "audit": str(warehouse / "topic_audit"),
            "runs": str(warehouse / "provision_runs"),
            "snapshots": str(warehouse / "topic_snapshots"),
        },
        "kafka": {"request_timeout_ms": 120000, "operation_timeout_ms": 60000,
                  "batch_size": batch_size, "verify_timeout_ms": 300000},
        "spark": {"settings": {"spark.sql.session.timeZone": "UTC", **(settings or {})}},
    }, indent=2))
    return path


def manifest_rows(topics: int, partitions: int) -> list[dict[str, Any]]:
    """The job's desired topics of a case: `topics` rows, configs not managed."""
    return [{"cluster": "local", "topic": f"job.{i:07d}", "partitions": partitions,
             "replication_factor": 1, "owner": "bench"} for i in range(topics)]


def changed_topics(names: Sequence[str]) -> list[str]:
    """The CHANGES topics the third measurement changes, spread evenly over `names`
    (none when there are fewer than CHANGES)."""
    if len(names) < CHANGES:
        return []
    step = len(names) // CHANGES
    return [names[i * step] for i in range(CHANGES)]


def with_changes(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`rows` with CHANGE_CONFIG set to CHANGE_VALUE in the rows of changed_topics."""
    changed = set(changed_topics([r["topic"] for r in rows]))
    return [{**r, "configs": {**(r.get("configs") or {}), CHANGE_CONFIG: CHANGE_VALUE}}
            if r["topic"] in changed else dict(r) for r in rows]


def check_changed(bootstrap: str, topics: Sequence[str]) -> dict[str, str | None]:
    """The live CHANGE_CONFIG of `topics`, read from the broker; raises unless every one is
    CHANGE_VALUE (a change run is only counted when it made the change)."""
    live = kafka_direct.topic_config(bootstrap, topics, CHANGE_CONFIG)
    wrong = {t: v for t, v in live.items() if v != CHANGE_VALUE}
    if wrong or len(live) != len(topics):
        raise RuntimeError(f"the change run left {len(wrong)} of {len(topics)} topic(s) "
                           f"without {CHANGE_CONFIG}={CHANGE_VALUE} on the broker: {wrong}")
    return live


def prepare_manifest(work: Path, topics: int, partitions: int) -> Path:
    """A Delta manifest table of `topics` rows, written once per case by load_manifest.py."""
    table = work / f"manifest-{topics}x{partitions}"
    if (table / "_delta_log").exists():
        return table
    return load_manifest(manifest_rows(topics, partitions),
                         work / f"manifest-{topics}x{partitions}.json", table)


def load_manifest(rows: Sequence[Mapping[str, Any]], source: Path, table: Path,
                  spark_args: Sequence[str] = ()) -> Path:
    """`rows` written to `source` as JSON, then to the Delta table `table` by
    jobs/load_manifest.py (one commit; a cold spark-submit, or with `spark_args`
    `--remote sc://...` a client of that Spark Connect server)."""
    source.write_text(json.dumps(list(rows)))
    proc = subprocess.run([str(SUBMIT), *spark_args, str(LOAD), "--source", str(source),
                           "--table", str(table)], capture_output=True, text=True,
                          timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"load_manifest failed: {proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return table


def parse_steps(output: str) -> list[dict[str, Any]]:
    return [{"step": m["name"], "secs": float(m["secs"]), "at": float(m["at"])}
            for m in STEP.finditer(output)]


def delta_commits(table: Path) -> list[dict[str, Any]]:
    """(version, operation, data files added) of every commit in a Delta table's log."""
    commits = []
    for f in sorted((table / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a),
                                    {})
        commits.append({"version": int(f.stem), "operation": info.get("operation"),
                        "files": sum(1 for a in actions if "add" in a)})
    return commits


def commits_since(warehouse: Path, before: Mapping[str, int]) -> dict[str, list[dict[str, Any]]]:
    """The commits made to each job table under `warehouse` since `before` (commits per
    table), the manifest table excepted."""
    return {t.name: delta_commits(t)[before.get(t.name, 0):]
            for t in sorted(warehouse.iterdir())
            if (t / "_delta_log").is_dir() and t.name != "desired_topics"}


def commit_marks(warehouse: Path) -> dict[str, int]:
    return {t.name: len(delta_commits(t)) for t in warehouse.iterdir()
            if (t / "_delta_log").is_dir()}


def _run_apply(work: Path, conf: Path, spark_args: Sequence[str],
               env: Mapping[str, str] | None, log_name: str, extra: Sequence[str] = ()
               ) -> tuple[str, dict[str, Any], float, float]:
    cmd = [str(SUBMIT), *spark_args, str(JOB), "apply", "--conf", str(conf), *extra, "--json"]
    launched = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=7200, cwd=work,
                          env={**os.environ, **(env or {})})
    exited = time.time()
    output = proc.stdout + proc.stderr
    (work / log_name).write_text(output)
    if proc.returncode != 0:
        raise RuntimeError(f"job failed ({proc.returncode}): {output[-4000:]}")
    return output, json.loads(proc.stdout.strip().splitlines()[-1]), launched, exited


def _step_secs(output: str, launched: float, exited: float) -> dict[str, float]:
    """Seconds per step of one run's output (a step logged more than once: the sum), with
    `start` from the harness's launch to the pipeline's first line and `to exit` from the
    last step to the process's exit: together they add up to the run's launch to exit."""
    steps = parse_steps(output)
    secs: dict[str, float] = {}
    for s in steps:
        secs[s["step"]] = secs.get(s["step"], 0.0) + s["secs"]
    start = next((s["at"] for s in steps if s["step"] == "start"), None)
    if start is not None:
        secs["start"] = start - launched
    if steps:
        secs["to exit"] = exited - max(s["at"] for s in steps)
    return secs


def run_job(work: Path, warehouse: Path, bootstrap: str, manifest: Path, batch_size: int,
            spark_args: Sequence[str], env: Mapping[str, str] | None = None,
            noop: bool = True, rows: Sequence[Mapping[str, Any]] | None = None,
            settings: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The job's apply on a fresh broker (and, with `noop`, again right after), on the job
    tables under `warehouse`, which outlive the run: as in production, they exist from
    earlier runs (an uncounted first run per method and case makes them).

    With `noop` and `rows` (the manifest's rows), then the change run: the manifest table
    rewritten with CHANGE_CONFIG set in the rows of changed_topics (one commit, not timed),
    `apply --allow-alter` timed launch to exit and checked on the broker, and the manifest
    table rewritten back to `rows` (not timed) for the next run on a fresh broker.
    `settings` go into the conf's spark.settings (over the job's own runtime settings).
    """
    if not (warehouse / "desired_topics").exists():
        warehouse.mkdir(parents=True, exist_ok=True)
        shutil.copytree(manifest, warehouse / "desired_topics")
    before = {t.name: len(delta_commits(t)) for t in warehouse.iterdir()
              if (t / "_delta_log").is_dir()}
    conf = write_conf(work / "conf.json", bootstrap, warehouse, batch_size, settings)
    output, doc, launched, exited = _run_apply(work, conf, spark_args, env, "job.log")
    at = {s["step"]: s["at"] - launched for s in parse_steps(output)}
    secs = _step_secs(output, launched, exited)
    if "create" not in at or "verify" not in at:
        raise RuntimeError(f"no step lines in the job's output: {output[-3000:]}")
    result: dict[str, Any] = {
        "acknowledged": at["create"],
        "ready": at["verify"],
        "exit": exited - launched,
        "session": at.get("start"),
        "steps": secs,
        "counts": doc.get("counts"),
        "run_id": doc.get("run_id"),
        "command": " ".join([str(SUBMIT), *spark_args, str(JOB), "apply", "--conf", str(conf),
                             "--json"]),
        # this run's commits only
        "delta_commits": {t.name: delta_commits(t)[before.get(t.name, 0):]
                          for t in sorted(warehouse.iterdir())
                          if (t / "_delta_log").is_dir() and t.name != "desired_topics"},
    }
    if noop:
        # The daily run: the same manifest again, every topic now live and as wanted.
        marks = commit_marks(warehouse)
        output, doc, launched, exited = _run_apply(work, conf, spark_args, env, "noop.log")
        result["noop_delta_commits"] = commits_since(warehouse, marks)
        if set(doc.get("counts") or {}) != {"already_present"}:
            raise RuntimeError(f"the rerun was not a no-op: {doc.get('counts')}")
        result.update(noop=exited - launched, noop_steps=_step_secs(output, launched, exited),
                      noop_counts=doc.get("counts"), noop_run_id=doc.get("run_id"))
    if noop and rows is not None and changed_topics([r["topic"] for r in rows]):
        result.update(_change_job(work, warehouse, bootstrap, conf, rows, spark_args, env))
    return result


def _change_job(work: Path, warehouse: Path, bootstrap: str, conf: Path,
                rows: Sequence[Mapping[str, Any]], spark_args: Sequence[str],
                env: Mapping[str, str] | None) -> dict[str, Any]:
    """The change run of run_job: desired state changed, applied (timed), checked, put back."""
    table = warehouse / "desired_topics"
    topics = changed_topics([r["topic"] for r in rows])
    load_manifest(with_changes(rows), work / "manifest-changed.json", table, spark_args)
    marks = commit_marks(warehouse)
    output, doc, launched, exited = _run_apply(work, conf, spark_args, env, "change.log",
                                               ["--allow-alter"])
    commits = commits_since(warehouse, marks)
    seconds = exited - launched
    counts = doc.get("counts") or {}
    if counts.get("altered") != len(topics) or set(counts) - {"altered", "already_present"}:
        raise RuntimeError(f"the change run did not alter exactly the {len(topics)} "
                           f"changed topic(s): {counts}")
    live = check_changed(bootstrap, topics)
    load_manifest(rows, work / "manifest.json", table, spark_args)
    return {"changes": seconds, "change_steps": _step_secs(output, launched, exited),
            "change_delta_commits": commits,
            "change_counts": counts, "change_run_id": doc.get("run_id"),
            "change_config": CHANGE_CONFIG,
            "change_value": CHANGE_VALUE, "change_topics": topics, "change_live": live}


def run_topicctl(work: Path, bootstrap: str, binary: Path, topics: int, partitions: int,
                 create_limit: int) -> dict[str, Any]:
    """topicctl apply over `topics` topic files on a fresh broker, then again (the no-op),
    then again after the files of changed_topics ask for CHANGE_MINUTES of retention
    (checked on the broker).

    Above `create_limit` topics, topicctl's create (one topic at a time, ~20 a second) is
    not measured: the topics are created in batches with kafka-python first, as the job's
    own first run would leave them, and only the no-op apply is timed.
    """
    cluster = topicctl_peer.write_topic_files(work / "topicctl", bootstrap, topics, partitions,
                                              prefix="job.")
    pattern = topicctl_peer.topics_glob(work / "topicctl")
    result: dict[str, Any] = {"command": f"{binary} apply --skip-confirm --cluster-config "
                                         f"{cluster} --sleep-loop-duration 0s '{pattern}'"}
    if topics <= create_limit:
        created = topicctl_peer.apply(binary, cluster, pattern, 7200, work / "topicctl-1.log")
        # It returns once each new topic shows in its metadata: acknowledged = ready = exit.
        result.update(acknowledged=created["seconds"], ready=created["seconds"],
                      exit=created["seconds"])
    else:
        kafka_direct.create_all(bootstrap, [topicctl_peer.topic_name(i, "job.")
                                            for i in range(topics)],
                                partitions, {"retention.ms": str(1440 * 60_000)})
    again = topicctl_peer.apply(binary, cluster, pattern, 7200, work / "topicctl-2.log")
    result["noop"] = again["seconds"]
    changed = changed_topics([topicctl_peer.topic_name(i, "job.") for i in range(topics)])
    if changed:
        # The same change as the job's: those topic files ask for the new retention, and
        # the same apply over every file makes it.
        topicctl_peer.set_retention(work / "topicctl", changed, CHANGE_MINUTES)
        applied = topicctl_peer.apply(binary, cluster, pattern, 7200, work / "topicctl-3.log")
        result.update(changes=applied["seconds"], change_config=CHANGE_CONFIG,
                      change_value=CHANGE_VALUE, change_topics=changed,
                      change_live=check_changed(bootstrap, changed))
    return result


def measure(method: str, case: tuple[int, int], rep: int, root: Path, args: argparse.Namespace,
            manifest: Path | None, first: int | None = None) -> dict[str, Any]:
    """One measured run of `method` on a fresh broker; with `first` (1, 2, ...), the job's
    first run on new tables instead (the first makes the tables the repetitions use)."""
    topics, partitions = case
    work = root / (f"{method}-{topics}x{partitions}-r{rep}" if first is None
                   else f"{method}-{topics}x{partitions}-first{first}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    before = loadavg()
    cluster = _start_broker(work / "kafka", args.broker_heap_mb)
    # A broker just started spends its first seconds compiling and settling on the same two
    # cores: every method starts after the same pause.
    time.sleep(args.settle)
    try:
        tables = root / f"warehouse-{method}-{topics}x{partitions}"
        if first is not None and method in JOB_METHODS:
            # The first run on new tables: the create alone, timed launch to exit.
            assert manifest is not None
            if first > 1:
                tables = root / f"first-{method}-{topics}x{partitions}-{first}"
            result = run_job(work, tables, cluster.bootstrap_servers, manifest, args.batch_size,
                             ["--remote", args.servers[method]] if method in SERVERS
                             else args.spark_arg, noop=False, settings=args.settings)
        elif method == "job":
            assert manifest is not None
            result = run_job(work, tables, cluster.bootstrap_servers, manifest,
                             args.batch_size, args.spark_arg, rows=manifest_rows(*case),
                             settings=args.settings)
        elif method in SERVERS:
            assert manifest is not None
            result = run_job(work, tables, cluster.bootstrap_servers, manifest,
                             args.batch_size, ["--remote", args.servers[method]],
                             rows=manifest_rows(*case), settings=args.settings)
        elif method == "topicctl":
            result = run_topicctl(work, cluster.bootstrap_servers, Path(args.topicctl), topics,
                                  partitions, args.topicctl_create_limit)
        else:
            result = run_direct(method, cluster.bootstrap_servers, topics, partitions,
                                args.batch_size)
    finally:
        cluster.stop()
    result.update(method=method, topics=topics, partitions=partitions, rep=rep,
                  load_before=before, load_after=loadavg(), first=first)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return result


# -- summaries --------------------------------------------------------------------------

def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def summarize_broker(results: Sequence[Mapping[str, Any]], cases: Sequence[tuple[int, int]]
                     ) -> tuple[list[dict[str, Any]], str]:
    rows: list[dict[str, Any]] = []
    lines = ["| topics x partitions | method | runs | acknowledged s (median) | ready s (median)"
             f" | no-op rerun s (median) | {CHANGES} changes s (median)"
             " | all runs ack / ready / no-op / changes s | load before (1m) |",
             "|---|---|---|---|---|---|---|---|---|"]
    firsts: list[str] = []
    for case in cases:
        per: dict[str, dict[str, Any]] = {}
        for method in METHODS:
            runs = [r for r in results if r["method"] == method and r.get("first") is None
                    and (r["topics"], r["partitions"]) == case]
            first = [r for r in results if r["method"] == method and r.get("first")
                     and (r["topics"], r["partitions"]) == case]
            if first:
                later = median([r["exit"] for r in runs]) if runs else None
                firsts.append(
                    f"| {case[0]:,} x {case[1]} | {method} | {len(first)} | "
                    f"{median([r['exit'] for r in first]):.1f} | "
                    + ("-" if later is None else f"{later:.1f}") + " | "
                    + ("-" if later is None else
                       f"{median([r['exit'] for r in first]) / later:.2f}x") + " | "
                    + ", ".join(f"{r['exit']:.1f}" for r in first) + " | "
                    + ", ".join(f"{r['load_before'][0]:.2f}" for r in first) + " |")
                rows.append({"topics": case[0], "partitions": case[1], "method": method,
                             "first_runs": [r["exit"] for r in first],
                             "first_run": median([r["exit"] for r in first]),
                             "first_steps": {n: median([r["steps"].get(n, 0.0) for r in first])
                                             for n in dict.fromkeys(
                                                 k for r in first for k in r["steps"])}})
            if not runs:
                continue
            timed = [r for r in runs if r.get("acknowledged") is not None]
            entry: dict[str, Any] = {
                "topics": case[0], "partitions": case[1], "method": method, "runs": len(runs),
                "acknowledged": median([r["acknowledged"] for r in timed]) if timed else None,
                "ready": median([r["ready"] for r in timed]) if timed else None,
                "exit": median([r["exit"] for r in timed]) if timed else None,
            }
            if all("noop" in r for r in runs):
                entry["noop"] = median([r["noop"] for r in runs])
            if all("changes" in r for r in runs):
                entry["changes"] = median([r["changes"] for r in runs])
            if method in JOB_METHODS:
                names = list(dict.fromkeys(k for r in runs for k in r["steps"]))
                entry["steps"] = {n: median([r["steps"].get(n, 0.0) for r in runs])
                                  for n in names}
                entry["session"] = median([r["session"] for r in runs if r["session"]])
                for steps_of in ("noop_steps", "change_steps"):
                    if all(steps_of in r for r in runs):
                        names = list(dict.fromkeys(k for r in runs for k in r[steps_of]))
                        entry[steps_of] = {n: median([r[steps_of].get(n, 0.0) for r in runs])
                                           for n in names}
            per[method] = entry
            rows.append(entry)
            def fmt(value: float | None) -> str:
                return "-" if value is None else f"{value:.1f}"

            all_runs = ", ".join(
                f"{fmt(r.get('acknowledged'))}/{fmt(r.get('ready'))}"
                + (f"/{r['noop']:.1f}" if "noop" in r else "")
                + (f"/{r['changes']:.1f}" if "changes" in r else "") for r in runs)
            loads = ", ".join(f"{r['load_before'][0]:.2f}" for r in runs)
            lines.append(f"| {case[0]:,} x {case[1]} | {method} | {len(runs)} | "
                         f"{fmt(entry['acknowledged'])} | {fmt(entry['ready'])} | "
                         f"{fmt(entry.get('noop'))} | {fmt(entry.get('changes'))} | "
                         f"{all_runs} | {loads} |")
        for job_method in JOB_METHODS:
            if job_method in per and "floor" in per:
                job, floor = per[job_method], per["floor"]
                for end in ("acknowledged", "ready"):
                    lines.append(
                        f"|  | {job_method}/floor ({end}) | | {job[end] / floor[end]:.1f}x | | | | "
                        f"{job_method} - floor = {job[end] - floor[end]:.1f} s, of which "
                        f"session start {job['session']:.1f} s | |")
            if job_method in per and "loop" in per:
                job, loop = per[job_method], per["loop"]
                for end in ("acknowledged", "ready"):
                    lines.append(f"|  | loop/{job_method} ({end}) | | "
                                 f"{loop[end] / job[end]:.1f}x | | | | | |")
            if job_method in per and "topicctl" in per:
                job, peer = per[job_method], per["topicctl"]
                if "noop" in job and "noop" in peer:
                    lines.append(f"|  | topicctl/{job_method} (no-op rerun) | | | | "
                                 f"{peer['noop'] / job['noop']:.1f}x | | | |")
                if "changes" in job and "changes" in peer:
                    lines.append(f"|  | topicctl/{job_method} ({CHANGES} changes) | | | | | "
                                 f"{peer['changes'] / job['changes']:.1f}x | | |")
        if "stock" in per and "connect" in per:
            # What a team's own server costs against the project's: 1.00x is the same.
            stock, own = per["stock"], per["connect"]
            lines.append(
                f"|  | stock/connect | | {stock['acknowledged'] / own['acknowledged']:.2f}x | "
                f"{stock['ready'] / own['ready']:.2f}x | "
                + (f"{stock['noop'] / own['noop']:.2f}x" if "noop" in stock and "noop" in own
                   else "") + " | "
                + (f"{stock['changes'] / own['changes']:.2f}x"
                   if "changes" in stock and "changes" in own else "") + " | | |")
    if firsts:
        lines += ["", "First run on new job tables (the create on a fresh broker, launch to "
                  "exit), against the create of the repetitions on tables that exist:", "",
                  "| topics x partitions | method | first runs | first run s (median) | "
                  "later create s (median) | first / later | all first runs s | "
                  "load before (1m) |", "|---|---|---|---|---|---|---|---|", *firsts]
        for row in [row for row in rows if "first_steps" in row]:
            lines.append(f"- steps of {row['method']} {row['topics']:,} x {row['partitions']}'s "
                         "first runs (median s): " + ", ".join(f"{n} {v:.1f}" for n, v in
                                                               row["first_steps"].items()))
    jobs = [r for r in results if r["method"] in JOB_METHODS and r.get("first") is None]
    if jobs:
        lines += ["", "Delta commits one job run made (operation x data files added), "
                  "per table: its create, then its no-op rerun and its 10 changes:", ""]
        seen = set()
        for r in jobs:
            text = "; ".join(
                f"{table}: " + ", ".join(f"{c['operation']} x{c['files']}" for c in commits)
                for table, commits in r["delta_commits"].items())
            shown_as = (r["topics"], r["partitions"], text)
            if shown_as not in seen:
                seen.add(shown_as)
                lines.append(f"- {r['method']} {r['topics']:,} x {r['partitions']} "
                             f"(rep {r['rep']}): {text}")
            for run, key in (("no-op rerun", "noop_delta_commits"),
                             ("10 changes", "change_delta_commits")):
                if r.get(key) is not None:
                    lines.append(f"- {r['method']} {r['topics']:,} x {r['partitions']} "
                                 f"(rep {r['rep']}), {run}: " + "; ".join(
                                     f"{table}: " + ", ".join(
                                         f"{c['operation']} x{c['files']}" for c in commits)
                                     for table, commits in r[key].items() if commits)
                                 + f" ({sum(len(c) for c in r[key].values())} commits)")
    steps = [r for r in rows if r["method"] in JOB_METHODS and "first_run" not in r]
    for key, title in (("steps", "create"), ("noop_steps", "no-op rerun"),
                       ("change_steps", f"{CHANGES} changes, apply --allow-alter (its `create` "
                                        "step is the apply phase: here the alters)")):
        shown = [r for r in steps if r.get(key)]
        if not shown:
            continue
        names = list(dict.fromkeys(k for r in shown for k in r[key]))
        lines += ["", f"Job steps, {title} (median seconds; `start` = launch to pipeline "
                  "start: JVM or client, Python, SparkSession; `to exit` = the last step to "
                  "the process's exit; a run's steps add up to its launch to exit):", "",
                  "| step | " + " | ".join(f"{r['method']} {r['topics']:,} x {r['partitions']}"
                                           for r in shown) + " |",
                  "|---|" + "---|" * len(shown)]
        for n in names:
            lines.append(f"| {n} | " + " | ".join(f"{r[key].get(n, 0.0):.1f}"
                                                  for r in shown) + " |")
    return rows, "\n".join(lines)


# -- parts ------------------------------------------------------------------------------

def _pairs(items: Sequence[str]) -> dict[str, str]:
    """`KEY=VALUE` arguments as a dict."""
    return dict(item.split("=", 1) for item in items)


def parse_case(text: str) -> tuple[int, int]:
    """`1000x3` -> (1000, 3): topics x partitions."""
    topics, partitions = (int(x) for x in text.strip().split("x"))
    return topics, partitions


def broker_part(args: argparse.Namespace, out: Path) -> str:
    cases = [parse_case(c) for c in args.cases.split(",")]
    methods = [m for m in args.methods.split(",") if m]
    root = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="bench-"))
    root.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    raw = out / "broker_runs.json"
    servers: list[ConnectServer] = []
    if "topicctl" in methods and not args.topicctl:
        print("no --topicctl binary: topicctl is not measured", flush=True)
        methods = [m for m in methods if m != "topicctl"]
    args.servers = {}
    try:
        for method, stock in SERVERS.items():
            if method in methods:
                # One server per kind for the whole part, as a deployment keeps one running;
                # each has run a small Delta round trip and a Python task before the job.
                server = ConnectServer(root / f"spark-{method}", stock=stock,
                                       driver_memory=args.connect_memory,
                                       extra=_pairs(args.stock_setting) if stock else None)
                servers.append(server)
                server.start()
                warm_up(server.address)
                args.servers[method] = server.address
        for case in cases:
            manifest = (prepare_manifest(root, *case)
                        if set(methods) & set(JOB_METHODS) else None)
            for first in range(1, max(1, args.first_runs) + 1):
                for method in [m for m in methods if m in JOB_METHODS]:
                    print(f"[{dt.datetime.now():%H:%M:%S}] {method} {case[0]}x{case[1]} first "
                          f"run {first} on new tables (load {loadavg()[0]:.2f})", flush=True)
                    result = measure(method, case, 0, root, args, manifest, first)
                    print(f"    first run {result['exit']:.1f}s", flush=True)
                    results.append(result)
                    raw.write_text(json.dumps(results, indent=1))
            _measure_case(case, methods, root, args, manifest, results, raw)
    finally:
        for server in servers:
            server.stop()
    rows, table = summarize_broker(results, cases)
    (out / "broker_summary.json").write_text(json.dumps(rows, indent=1))
    if not args.work and not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return table


def _measure_case(case: tuple[int, int], methods: Sequence[str], root: Path,
                  args: argparse.Namespace, manifest: Path | None,
                  results: list[dict[str, Any]], raw: Path) -> None:
    for rep in range(1, args.reps + 1):
        for method in methods:
            if method == "loop" and case[0] > args.loop_limit:
                continue
            print(f"[{dt.datetime.now():%H:%M:%S}] {method} {case[0]}x{case[1]} rep {rep} "
                  f"(load {loadavg()[0]:.2f})", flush=True)
            result = measure(method, case, rep, root, args, manifest)
            print("    " + ", ".join(f"{k} {result[k]:.1f}s" for k in
                                     ("acknowledged", "ready", "exit", "noop", "changes")
                                     if result.get(k) is not None), flush=True)
            results.append(result)
            raw.write_text(json.dumps(results, indent=1))


def script_part(script: str, extra: Sequence[str], out: Path, name: str) -> str:
    cmd = [PY, str(REPO / "bench" / script), "--out", str(out / f"{name}.json"), *extra]
    print(f"[{dt.datetime.now():%H:%M:%S}] {' '.join(cmd)} (load {loadavg()[0]:.2f})",
          flush=True)
    proc = subprocess.run(cmd, text=True, capture_output=True, timeout=7200)
    sys.stdout.write(proc.stdout[-6000:])
    if proc.returncode != 0:
        raise RuntimeError(f"{script} failed: {proc.stderr[-4000:]}")
    return (out / f"{name}.md").read_text() if (out / f"{name}.md").exists() else proc.stdout


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("broker", "plan", "pipelining"), action="append",
                        help="run only this part (repeatable); default: all")
    parser.add_argument("--cases", default="1000x1",
                        help="TOPICSxPARTITIONS,... (default %(default)s)")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--loop-limit", type=int, default=10000,
                        help="skip the per-topic loop above this many topics")
    parser.add_argument("--batch-size", type=int, default=1000,
                        help="topics per CreateTopics (the job's kafka.batch_size and the floor's)")
    parser.add_argument("--broker-heap-mb", type=int, default=1024)
    parser.add_argument("--settle", type=float, default=10,
                        help="seconds to wait after a fresh broker is ready, before measuring")
    parser.add_argument("--spark-arg", action="append", default=[],
                        help="extra spark-submit argument for the job (repeatable)")
    parser.add_argument("--topicctl", default=None,
                        help="a topicctl v1.23.1 binary (built by the reader): the peer method")
    parser.add_argument("--topicctl-create-limit", type=int, default=1000,
                        help="above this many topics, topicctl's create is not timed, only "
                             "its no-op apply (topics made with batched kafka-python first)")
    parser.add_argument("--connect-memory", default="2g",
                        help="driver memory of the project's own Spark Connect server (method "
                             "connect; the stock server keeps Spark's default)")
    parser.add_argument("--spark-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="a spark.settings entry of the job's conf (job, connect, stock), "
                             "over the job's own runtime settings (repeatable)")
    parser.add_argument("--stock-setting", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting the stock server is started with besides Delta's "
                             "(repeatable)")
    parser.add_argument("--first-runs", type=int, default=3,
                        help="first runs on new tables per job method and case (at least 1: "
                             "the first makes the tables the repetitions use)")
    parser.add_argument("--plan-rows", default="100000,300000,1000000")
    parser.add_argument("--work", default=None, help="keep run directories here")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = parser.parse_args(argv)
    args.settings = _pairs(args.spark_setting)
    parts = args.only or ["broker", "plan", "pipelining"]

    stamp = dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    out = Path(args.out) / stamp
    out.mkdir(parents=True, exist_ok=True)
    header = {"started": stamp, "machine": machine(), "versions": versions(),
              "load_at_start": loadavg(), "argv": [sys.argv[0], *(argv or sys.argv[1:])]}
    (out / "environment.json").write_text(json.dumps(header, indent=1))
    print(json.dumps(header, indent=1), flush=True)
    sections = [f"# bench {stamp}", "", "```", json.dumps(header, indent=1), "```", ""]
    if "broker" in parts:
        sections += ["## one broker: floor, per-topic loop, job", "", broker_part(args, out), ""]
    if "pipelining" in parts:
        sections += ["## pipelining CreateTopics within one cluster", "",
                     script_part("pipelining.py", [], out, "pipelining"), ""]
    if "plan" in parts:
        sections += ["## plan only, synthetic, no broker", "",
                     script_part("plan_scale.py", ["--rows", args.plan_rows], out, "plan"), ""]
    sections += [f"load at the end: {loadavg()}"]
    summary = "\n".join(sections)
    (out / "summary.md").write_text(summary + "\n")
    print(summary)
    print(f"\nresults in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
