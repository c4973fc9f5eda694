"""Within one cluster: send CreateTopics batches one at a time, or several in flight?

    .venv/bin/python bench/pipelining.py [--topics 10000] [--batch-size 1000] [--workers 1,2,4]

For each concurrency level and repetition, on a fresh one-node KRaft broker: the
product's own adapter (kafka_admin.ClusterAdmin, one client) sends the requests that
kafka_admin.batches makes, first validateOnly then for real, from a thread pool of
`workers` threads (1 = what admin_io._create_batches does). Reports the median
time of each pass and whether every topic came back without an error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "lib"), str(REPO)]

from provisioning.conf import ClusterConf, KafkaConf  # noqa: E402
from provisioning.devkafka import KafkaCluster  # noqa: E402
from provisioning.kafka_admin import ClusterAdmin, TopicRequest, batches  # noqa: E402


def send(admin: ClusterAdmin, groups: list[list[TopicRequest]], validate_only: bool,
         workers: int) -> tuple[float, int]:
    """All batches through `workers` threads; (seconds, topics with an error)."""
    started = time.monotonic()
    if workers == 1:
        results = [admin.create_topics(g, validate_only) for g in groups]
    else:
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(lambda g: admin.create_topics(g, validate_only), groups))
    elapsed = time.monotonic() - started
    return elapsed, sum(1 for rs in results for r in rs if r["error_code"] != 0)


def one_run(base: Path, topics: int, partitions: int, batch_size: int, workers: int
            ) -> dict[str, Any]:
    cluster = KafkaCluster(base, nodes=1, heap_mb=1024)
    cluster.start(timeout_s=120)
    try:
        kafka = KafkaConf(request_timeout_ms=120_000, operation_timeout_ms=60_000,
                          batch_size=batch_size)
        requests = [TopicRequest(f"pipe.{i:07d}", partitions, 1, None, {})
                    for i in range(topics)]
        groups = list(batches(requests, kafka.batch_size, kafka.max_partitions_per_request,
                              kafka.max_records_per_request))
        load = os.getloadavg()[0]
        with ClusterAdmin(ClusterConf("bench", cluster.bootstrap_servers), None, kafka) as admin:
            validate_s, validate_errors = send(admin, groups, True, workers)
            create_s, create_errors = send(admin, groups, False, workers)
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)
    return {"workers": workers, "requests": len(groups), "validate_s": validate_s,
            "create_s": create_s, "errors": validate_errors + create_errors,
            "load_before": round(load, 2)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    import logging

    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    levels = [int(w) for w in args.workers.split(",")]
    runs = []
    root = Path(tempfile.mkdtemp(prefix="bench-pipelining-"))
    try:
        for rep in range(1, args.reps + 1):
            for workers in levels:  # interleaved, so load drift hits every level alike
                run = one_run(root / f"w{workers}-r{rep}", args.topics, args.partitions,
                              args.batch_size, workers)
                run["rep"] = rep
                print(json.dumps(run), flush=True)
                runs.append(run)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = [f"{args.topics:,} topics x {args.partitions} partition(s), batch_size "
             f"{args.batch_size}, one ClusterAdmin, fresh broker per run, median of "
             f"{args.reps}:", "",
             "| in flight | requests | validateOnly s | create s | all runs create s | errors |"
             " load before |", "|---|---|---|---|---|---|---|"]
    for workers in levels:
        mine = [r for r in runs if r["workers"] == workers]
        lines.append(
            f"| {workers} | {mine[0]['requests']} | "
            f"{statistics.median(r['validate_s'] for r in mine):.2f} | "
            f"{statistics.median(r['create_s'] for r in mine):.2f} | "
            f"{', '.join(format(r['create_s'], '.2f') for r in mine)} | "
            f"{sum(r['errors'] for r in mine)} | "
            f"{', '.join(str(r['load_before']) for r in mine)} |")
    summary = "\n".join(lines)
    print(summary)
    if args.out:
        Path(args.out).write_text(json.dumps(runs, indent=1))
        Path(args.out).with_suffix(".md").write_text(summary + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
