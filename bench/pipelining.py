"""Within one cluster: send CreateTopics batches one at a time, or several in flight?

    .venv/bin/python bench/pipelining.py [--topics 10000] [--batch-sizes 1000,5000]
                                         [--workers 1,2,4]

For each batch size, concurrency level and repetition, on a fresh one-node KRaft broker,
the code a Spark task runs for one cluster (kinds.topics.tasks.create.create_batches over one
kafka.client.ClusterAdmin) sends every topic, first validateOnly then for real, with
kafka.batch_size and kafka.max_in_flight_requests set to the level measured
(1 = one request at a time). Reports the median time of each pass and how many topics
did not come back validated / created.
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
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "lib"), str(REPO)]

from dev.devkafka import KafkaCluster  # noqa: E402
from provisioning.conf import ClusterConf, KafkaConf  # noqa: E402
from provisioning.kafka.batching import TopicRequest, batches  # noqa: E402
from provisioning.kafka.client import ClusterAdmin  # noqa: E402
from provisioning.kinds.topics.tasks.create import create_batches  # noqa: E402


def send(admin: ClusterAdmin, rows: list[dict[str, Any]], validate_only: bool
         ) -> tuple[float, int]:
    """Every row through create_batches; (seconds, topics without the expected outcome)."""
    wanted = "validated" if validate_only else "created"
    outcome_at = 3  # TOPIC_RESULT: cluster, topic, phase, outcome, ...
    started = time.monotonic()
    results = list(create_batches(admin, rows, validate_only))  # type: ignore[arg-type]
    elapsed = time.monotonic() - started
    return elapsed, sum(1 for r in results if r[outcome_at] != wanted) + len(rows) - len(results)


def one_run(base: Path, topics: int, partitions: int, batch_size: int, workers: int
            ) -> dict[str, Any]:
    cluster = KafkaCluster(base, nodes=1, heap_mb=1024)
    cluster.start(timeout_s=120)
    try:
        kafka = KafkaConf(request_timeout_ms=120_000, operation_timeout_ms=60_000,
                          batch_size=batch_size, max_in_flight_requests=workers)
        rows: list[dict[str, Any]] = [
            {"cluster": "bench", "topic": f"pipe.{i:07d}", "partitions": partitions,
             "replication_factor": 1, "replica_assignment": None, "configs": {},
             "known_partitions": None} for i in range(topics)]
        groups = list(batches([TopicRequest(r["topic"], partitions, 1, None, {}) for r in rows],
                              kafka.batch_size, kafka.max_partitions_per_request,
                              kafka.max_records_per_request))
        load = os.getloadavg()[0]
        with ClusterAdmin(ClusterConf("bench", cluster.bootstrap_servers), None, kafka) as admin:
            validate_s, validate_errors = send(admin, rows, True)
            create_s, create_errors = send(admin, rows, False)
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
    parser.add_argument("--batch-sizes", default="1000,5000",
                        help="kafka.batch_size values (topics per request, before the caps)")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    import logging

    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    levels = [int(w) for w in args.workers.split(",")]
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    configs = [(b, w) for b in sizes for w in levels]
    runs = []
    root = Path(tempfile.mkdtemp(prefix="bench-pipelining-"))
    try:
        for rep in range(1, args.reps + 1):
            for size, workers in configs:  # interleaved: load drift hits every config alike
                run = one_run(root / f"b{size}-w{workers}-r{rep}", args.topics,
                              args.partitions, size, workers)
                run.update(rep=rep, batch_size=size)
                print(json.dumps(run), flush=True)
                runs.append(run)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = [f"{args.topics:,} topics x {args.partitions} partition(s), one ClusterAdmin, "
             f"fresh broker per run, median of {args.reps}:", "",
             "| batch_size | in flight | requests | validateOnly s | create s | all runs create s"
             " | errors | load before |", "|---|---|---|---|---|---|---|---|"]
    for size, workers in configs:
        mine = [r for r in runs if r["workers"] == workers and r["batch_size"] == size]
        lines.append(
            f"| {size} | {workers} | {mine[0]['requests']} | "
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
