"""What the first upper- or lower-casing of a string costs a new Spark JVM, with Spark's ICU
case mappings (its default) and with the JVM's (the job's setting,
`spark.sql.icu.caseMappings.enabled` false in `session.WORKLOAD_SETTINGS`).

    .venv/bin/python bench/case_mappings.py [--reps 3]

The job cases strings in two places: ACL bindings' resource types, pattern types,
operations and permissions (`upper`, for every binding row of a run) and the
`cleanup_policy_change` policy (`lower`, on a changed `cleanup.policy`). Each measured
process is a new local[1] session with the job's WORKLOAD_SETTINGS, one of them overridden
for the `icu` variant; it runs one query first (the session's own start), then times the
first query that cases a string, then a second one. The variants alternate within a
repetition. Results go to bench/results/case_mappings-<stamp>.json; nothing asserts a time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "lib"), str(REPO)]

from bench.run import loadavg, machine, versions  # noqa: E402

VARIANTS = {"icu": {"spark.sql.icu.caseMappings.enabled": "true"}, "job's": {}}

# One measured process: argv[1] is the JSON of the settings over the job's.
PROBE = """
import json, sys, time
from pyspark.sql import SparkSession, functions as F
from provisioning.session import runtime_settings
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
for key, value in runtime_settings(json.loads(sys.argv[1])).items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
spark.range(3).selectExpr("id + 1").collect()
rows = spark.createDataFrame([("Topic", "compact, Delete")], "resource_type string, policy string")
times = []
for _ in range(2):
    started = time.perf_counter()
    rows.select(F.upper("resource_type"), F.lower("policy")).collect()
    times.append(round(time.perf_counter() - started, 3))
print(json.dumps(times))
"""


def probe(settings: dict[str, str]) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "lib")}
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(settings)], env=env,
                          capture_output=True, text=True, timeout=600, check=True)
    return [float(t) for t in json.loads(done.stdout.strip().splitlines()[-1])]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    runs: list[dict[str, Any]] = []
    for rep in range(args.reps):
        for name, settings in VARIANTS.items():
            first, second = probe(settings)
            runs.append({"variant": name, "rep": rep, "first_s": first, "second_s": second,
                         "load": loadavg()})
            print(f"{name:6s} rep {rep}: first casing {first:.3f} s, second {second:.3f} s",
                  flush=True)
    summary = {name: {f"{key}_median": statistics.median(
        r[key] for r in runs if r["variant"] == name)
        for key in ("first_s", "second_s")} for name in VARIANTS}
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    out = args.out or REPO / "bench" / "results" / f"case_mappings-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"stamp": stamp, "machine": machine(), "versions": versions(),
                               "runs": runs, "summary": summary}, indent=2))
    for name, figures in summary.items():
        print(f"{name:6s} median: first casing {figures['first_s_median']:.3f} s, "
              f"second {figures['second_s_median']:.3f} s")
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
