"""Which Spark shape should carry the admin I/O: mapInArrow, applyInArrow or a Python UDTF?

    .venv/bin/python bench/admin_shape.py [--rows 10000] [--clusters 1] [--reps 5]
                                          [--modes classic,connect]

The admin phases hand a DataFrame of requests (one partition per cluster) to Python code
that returns one result row per topic in the shape of `schemas.TOPIC_RESULT` (with the
~30 config entries KIP-525 returns for each created topic). This measures only that
transport, with no broker: the same per-row function behind each shape, its output
written to Spark's `noop` sink, on classic Spark (local[2], this process's JVM) and on a
Spark Connect server this script starts (the stock server of `make connect-up`). One
uncounted warm-up pass per shape, then `--reps` timed passes; prints the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "lib"), str(REPO)]

import pyarrow as pa  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from provisioning.run import arrow  # noqa: E402
from provisioning.session import connect_session, package_zip  # noqa: E402
from schemas import TOPIC_RESULT  # noqa: E402

CONFIGS = [{"name": f"config.{i:02d}", "value": str(i), "source": "DEFAULT_CONFIG",
            "read_only": False, "sensitive": False} for i in range(30)]


def result(row: Any) -> tuple[Any, ...]:
    """One TOPIC_RESULT row for a request row (dict or Row)."""
    return (row["cluster"], row["topic"], "validate", "validated", None, 0, None, None,
            row["partitions"], row["replication_factor"], CONFIGS, None, 1, None)


def requests(spark: SparkSession, rows: int, clusters: int) -> DataFrame:
    return (spark.range(rows)
            .select(F.concat(F.lit("c"), (F.col("id") % clusters).cast("string")).alias("cluster"),
                    F.format_string("t.%08d", F.col("id")).alias("topic"),
                    F.lit(1).alias("partitions"), F.lit(1).alias("replication_factor"))
            .repartition(clusters, "cluster").sortWithinPartitions("cluster", "topic"))


def map_in_arrow(df: DataFrame) -> DataFrame:
    target = arrow.arrow_schema(TOPIC_RESULT)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return arrow.record_batches((result(r) for r in arrow.dict_rows(batches)), target)

    return df.mapInArrow(task, TOPIC_RESULT)


def apply_in_arrow(df: DataFrame) -> DataFrame:
    target = arrow.arrow_schema(TOPIC_RESULT)

    def group(table: pa.Table) -> pa.Table:
        rows = (result(r) for r in arrow.dict_rows(table.to_batches()))
        return pa.Table.from_batches(list(arrow.record_batches(rows, target)), target)

    return df.groupBy("cluster").applyInArrow(group, TOPIC_RESULT)


def udtf(df: DataFrame) -> DataFrame:
    from pyspark.sql.functions import udtf as make_udtf

    class Results:
        def eval(self, row: Any) -> Iterator[tuple[Any, ...]]:
            out = result(row)
            yield (*out[:10], [tuple(c.values()) for c in CONFIGS], *out[11:])

    spark = df.sparkSession
    spark.udtf.register("shape_results", make_udtf(Results, returnType=TOPIC_RESULT))
    df.createOrReplaceTempView("shape_requests")
    return spark.sql("SELECT * FROM shape_results(TABLE(shape_requests) PARTITION BY cluster)")


SHAPES: dict[str, Callable[[DataFrame], DataFrame]] = {
    "mapInArrow": map_in_arrow, "applyInArrow": apply_in_arrow, "udtf": udtf}


def timed(spark: SparkSession, shape: str, rows: int, clusters: int) -> float:
    out = SHAPES[shape](requests(spark, rows, clusters))
    started = time.perf_counter()
    out.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def check(spark: SparkSession, shape: str, clusters: int) -> None:
    """The shape returns every row, configs included (so the timings compare like with like)."""
    got = SHAPES[shape](requests(spark, 50, clusters)).collect()
    if len(got) != 50 or any(len(r["result_configs"]) != len(CONFIGS) for r in got):
        raise SystemExit(f"{shape}: {len(got)} of 50 rows came back, or some without their "
                         "configs: its timings would not compare with the others")


def measure(spark: SparkSession, mode: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    out = []
    for shape in SHAPES:
        check(spark, shape, args.clusters)
        timed(spark, shape, args.rows, args.clusters)  # warm-up, not counted
        runs = [timed(spark, shape, args.rows, args.clusters) for _ in range(args.reps)]
        out.append({"mode": mode, "shape": shape, "rows": args.rows,
                    "clusters": args.clusters, "median_s": round(statistics.median(runs), 3),
                    "runs_s": [round(r, 3) for r in runs]})
        print(json.dumps(out[-1]), flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--clusters", type=int, default=1)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--modes", default="classic,connect")
    args = parser.parse_args()
    results: list[dict[str, Any]] = []
    for mode in args.modes.split(","):
        if mode == "classic":
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers with pyarrow
            spark = (SparkSession.builder.master("local[2]").appName("admin-shape")
                     .config("spark.ui.enabled", "false").getOrCreate())
            for name in ("provisioning", "schemas"):
                spark.sparkContext.addPyFile(str(package_zip(name)))  # Connect ships its own
            results += measure(spark, mode, args)
            spark.stop()
        elif mode == "connect":
            from dev.sparkconnect import ConnectServer

            with tempfile.TemporaryDirectory(prefix="admin-shape-") as tmp:
                server = ConnectServer(Path(tmp))
                server.start()
                try:
                    spark = connect_session(server.address, "admin-shape", {})
                    results += measure(spark, mode, args)
                    spark.stop()
                finally:
                    server.stop()
        else:
            parser.error(f"unknown mode {mode!r} (classic, connect)")
    print("\n| mode | shape | rows | clusters | median s | runs s |\n|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['mode']} | {r['shape']} | {r['rows']:,} | {r['clusters']} | "
              f"{r['median_s']:.2f} | {', '.join(f'{x:.2f}' for x in r['runs_s'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
