"""The job's queries with and without Spark's generated code, on one warm Spark Connect
server: launch-to-exit time and the CPU the server took (its JVM and its Python workers) per run.

    .venv/bin/python bench/codegen.py --rounds 2

One local KRaft broker holds 1,000 topics (bench/waits.py's: `wait.NNNNNN`); the job manages
them all. Each round runs both variants, one after the other, on the same server and tables:

generated  the conf's `spark.settings` sets Spark's own defaults back
           (`spark.sql.codegen.wholeStage` true, `spark.sql.codegen.factoryMode` FALLBACK):
           whole-stage code and expression code compiled to Java for every new query
job's      the job's own settings (`session.WORKLOAD_SETTINGS`: both off)

Per variant and round: two uncounted runs (the variant's settings make a shared session of
their own, whose Python workers start then), then two measured `apply --allow-alter` runs of 10
config changes (`max.message.bytes` of 10 topics, there and back) and one measured no-op
`apply`. The changes are checked on the broker. Results go to
bench/results/codegen-<stamp>.json and .md. Nothing asserts a time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "lib"), str(REPO)]

from bench import waits  # noqa: E402
from bench.run import machine, versions  # noqa: E402
from dev.devkafka import KafkaCluster  # noqa: E402
from dev.sparkconnect import ConnectServer, warm_up  # noqa: E402

VARIANTS: dict[str, dict[str, str]] = {
    "generated": {"spark.sql.codegen.wholeStage": "true",
                  "spark.sql.codegen.factoryMode": "FALLBACK"},
    "job's": {},
}
HZ = os.sysconf("SC_CLK_TCK")


def group_cpu(pgid: int) -> float:
    """CPU seconds (user and system, children waited for included) of every live process
    in the process group `pgid`: the server's JVM and its Python workers."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid:
            total += sum(int(f) for f in fields[11:15])
    return total / HZ


def settings_conf(job: waits.Job, base: Mapping[str, Any], extra: Mapping[str, str]) -> None:
    conf = json.loads(json.dumps(base))
    conf["spark"]["settings"] = {**conf["spark"]["settings"], **extra}
    job.conf.write_text(json.dumps(conf, indent=2))


def measure(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    all_names = waits.names()
    ten = waits.changed(all_names)
    at_a, at_b = dict.fromkeys(ten, waits.A), dict.fromkeys(ten, waits.B)
    cluster = KafkaCluster(work / "kafka", nodes=1, heap_mb=1024)
    server = ConnectServer(work / "spark-connect")
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
    try:
        cluster.start(timeout_s=180)
        server.start()
        warm_up(server.address)
        assert server.proc is not None
        pgid = os.getpgid(server.proc.pid)
        bootstrap = cluster.bootstrap_servers
        waits.create_topics(bootstrap, all_names, at_a)
        job = waits.Job(work / "job", {"local": bootstrap}, server.address, profiles=False)
        base = json.loads(job.conf.read_text())
        job.manifest(waits.manifest_rows("local", all_names, at_a))
        job.apply()  # makes the job's tables
        for _ in range(args.rounds):
            for name, extra in VARIANTS.items():
                settings_conf(job, base, extra)
                for values in (at_b, at_a):  # uncounted: the variant's session starts
                    job.manifest(waits.manifest_rows("local", all_names, values))
                    job.apply("--allow-alter")
                for case, values in (("change", at_b), ("change", at_a), ("noop", None)):
                    if values is not None:
                        job.manifest(waits.manifest_rows("local", all_names, values))
                    before = group_cpu(pgid)
                    done = job.apply(*(["--allow-alter"] if values is not None else []))
                    cpu = group_cpu(pgid) - before
                    if values is not None:
                        waits.check_values(bootstrap, values)
                    runs[name].append({"case": case, "seconds": done["seconds"],
                                       "server_cpu_s": round(cpu, 2),
                                       "load_1m": done["load_1m"], "counts": done["counts"]})
                    print(name, case, done["seconds"], f"server CPU {cpu:.1f} s", flush=True)
    finally:
        server.stop()
        cluster.stop()
    return runs


def summary(result: Mapping[str, Any]) -> str:
    lines = [f"started {result['started']} UTC at {result['commit']}; load before "
             f"{', '.join(f'{x:.2f}' for x in result['load_before'])}", "",
             "| variant | case | median s | median server CPU s | runs: s / server CPU s "
             "(load) |", "|---|---|---|---|---|"]
    for name, runs in result["runs"].items():
        for case in ("change", "noop"):
            mine = [r for r in runs if r["case"] == case]
            if not mine:
                continue
            every = ", ".join(f"{r['seconds']:.1f} / {r['server_cpu_s']:.1f} "
                              f"({r['load_1m']:.1f})" for r in mine)
            lines.append(f"| {name} | {case} | {statistics.median(r['seconds'] for r in mine):.1f} "
                         f"| {statistics.median(r['server_cpu_s'] for r in mine):.1f} | {every} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    work = (args.work or Path(tempfile.mkdtemp(prefix="codegen-"))).resolve()
    started = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    result: dict[str, Any] = {"started": started, "machine": machine(),
                              "versions": versions(), "commit": waits.checkout_commit(REPO),
                              "rounds": args.rounds, "load_before": os.getloadavg()}
    result["runs"] = measure(args, work)
    result["load_after"] = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"codegen-{started}.json"
    out.write_text(json.dumps(result, indent=2, default=str))
    out.with_suffix(".md").write_text(summary(result))
    print(out.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
