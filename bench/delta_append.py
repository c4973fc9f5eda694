"""What one small audit append costs on a warm classic session: the job's idempotent append
(`delta.idempotent.append_once`: its transaction named in the commit's userMetadata),
Delta's own idempotent write (txnAppId / txnVersion) and a plain append, with and
without per-file statistics; and an append to a table with the lock log's properties
(`delta.lock.LOCK_TABLE_PROPERTIES`: row tracking on, as every claim, renewal and release
is), as it comes and with the table read just before it (untimed, as a lock's read-back
reads it).

    ./spark-submit.sh bench/delta_append.py [--appends 14] [--rows 10] [--out FILE]

Each case appends `--rows` AUDIT rows (`provisioning.delta.tables.append`, under every
audit, runs and snapshot commit) `--appends` times to a new path table; the first
four appends of a case are not counted (the table's creation and the session's first
writes of it). One append of each case also writes the table's first checkpoint (the 11th;
the 10th in the lock log's cases), so it is in the spread, not the median. Reported per
case: the median and the fastest append, every append's time, and the Spark jobs of the
last append (Delta's transaction id makes it reconstruct the table's state to look up the
id's last version; row tracking makes an append read the table's row id high-water mark
from its state). Nothing asserts a time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "lib"), str(REPO)]

from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from provisioning.delta.idempotent import Transaction, append_once  # noqa: E402
from provisioning.delta.lock import LOCK_TABLE_PROPERTIES  # noqa: E402
from provisioning.delta.tables import TableRef, append  # noqa: E402
from provisioning.registry import AUDIT  # noqa: E402

NO_STATS = {"spark.databricks.delta.stats.collect": "false"}
# name -> (how: "job" append_once, "delta" txnAppId / txnVersion, "plain", "lock" a plain
# append to a table with the lock log's properties, "lock-read" the same after an untimed
# read of the table; session settings)
CASES: dict[str, tuple[str, dict[str, str]]] = {
    "the job's idempotent append (append_once)": ("job", {}),
    "Delta's idempotent write (txnAppId / txnVersion)": ("delta", {}),
    "no transaction id": ("plain", {}),
    "the job's, no file statistics": ("job", NO_STATS),
    "Delta's, no file statistics": ("delta", NO_STATS),
    "the lock log's (row tracking on), no transaction id": ("lock", {}),
    "the same, the table read just before": ("lock-read", {}),
}
SKIPPED = 4


def _rows(spark: SparkSession, n: int) -> DataFrame:
    named = {"run_id", "cluster", "topic"}
    return spark.range(n).select(
        *[(F.concat(F.lit(f"{f.name}-"), F.col("id").cast("string")) if f.name in named
           else F.lit(None).cast(f.dataType)).alias(f.name) for f in AUDIT.fields]
    ).localCheckpoint(eager=True)


def _append(df: DataFrame, ref: TableRef, how: str, name: str, number: int) -> None:
    if how == "job":
        append_once(df, ref, Transaction(f"bench-{name}", number))
    elif how == "delta":
        append(df, ref, options={"txnAppId": f"bench-{name}", "txnVersion": str(number)})
    elif how in ("lock", "lock-read"):
        append(df, ref, properties=LOCK_TABLE_PROPERTIES)
    else:
        append(df, ref)


def measure(spark: SparkSession, root: Path, name: str, how: str,
            settings: Mapping[str, str], appends: int, rows: int) -> dict[str, Any]:
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        ref = TableRef(str(root / f"t{len(list(root.iterdir()))}"))
        df = _rows(spark, rows)
        times: list[float] = []
        tracker = spark.sparkContext.statusTracker()
        jobs: list[str] = []
        for i in range(appends):
            if how == "lock-read" and i:
                # As a lock's read-back leaves the table before its next event.
                (spark.read.format("delta").load(ref.text)
                 .select("*", F.col("_metadata.row_commit_version")).collect())
            group = f"append-{ref.text}-{i}"
            spark.sparkContext.setJobGroup(group, group)
            started = time.monotonic()
            _append(df, ref, how, name, i + 1)
            times.append(time.monotonic() - started)
            if i == appends - 1:
                for job in sorted(tracker.getJobIdsForGroup(group)):
                    info = tracker.getJobInfo(job)
                    tasks = [s.numTasks for s in (tracker.getStageInfo(st)
                                                  for st in (info.stageIds if info else ()))
                             if s is not None]
                    jobs.append(f"{len(tasks)} stage(s), {sum(tasks)} task(s)")
        counted = times[SKIPPED:]
        return {"case": name, "median_s": round(statistics.median(counted), 3),
                "min_s": round(min(counted), 3), "times_s": [round(t, 3) for t in times],
                "jobs_of_last_append": jobs}
    finally:
        for key in settings:
            spark.conf.unset(key)


def table(results: Sequence[Mapping[str, Any]], rows: int) -> str:
    lines = [f"| append of {rows} AUDIT rows | median s | fastest s | Spark jobs of the last "
             "append | every append s |", "|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['case']} | {r['median_s']:.2f} | {r['min_s']:.2f} | "
                     f"{len(r['jobs_of_last_append'])} | "
                     f"{' '.join(f'{t:.2f}' for t in r['times_s'])} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=14)
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    if args.appends <= SKIPPED:
        parser.error(f"--appends must be above {SKIPPED}")
    spark = SparkSession.builder.getOrCreate()
    with tempfile.TemporaryDirectory(prefix="delta-append-") as work:
        root = Path(work)
        # The session's first Delta writes, not counted.
        measure(spark, root, "warm-up", "delta", {}, SKIPPED + 2, args.rows)
        results = [measure(spark, root, name, how, settings, args.appends, args.rows)
                   for name, (how, settings) in CASES.items()]
    print(table(results, args.rows))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
