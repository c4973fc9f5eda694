"""The baselines the job is measured against: a plain kafka-python script, no Spark.

    python bench/kafka_direct.py floor --bootstrap HOST:PORT --topics N [--partitions P]
    python bench/kafka_direct.py loop  --bootstrap HOST:PORT --topics N [--partitions P]

floor: one admin client, batched validateOnly CreateTopics, then batched
       CreateTopics for real (requests sized by the broker's 10,000-partition and
       10,000-record caps and --batch-size), then polls metadata until every
       partition has a leader.
loop:  the same client, one validateOnly + one real CreateTopics per topic,
       sequentially (what a per-topic provisioning loop does), then the same wait.

Prints one JSON line with wall-clock (epoch) times, so the harness can measure
every end point from the moment it launched this process.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Iterator, Sequence

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource

MAX_PARTITIONS = 10_000
MAX_RECORDS = 10_000


def topic_names(count: int, prefix: str) -> list[str]:
    return [f"{prefix}.{i:07d}" for i in range(count)]


def sized(names: Sequence[str], partitions: int, batch_size: int) -> Iterator[list[str]]:
    """Batches under the topic, partition and metadata-record caps (1 + partitions per topic)."""
    per_request = min(batch_size, MAX_PARTITIONS // partitions, MAX_RECORDS // (1 + partitions))
    for start in range(0, len(names), per_request):
        yield list(names[start:start + per_request])


def create(admin: KafkaAdminClient, names: Sequence[str], partitions: int,
           validate_only: bool) -> list[str]:
    """One CreateTopics request; the names the broker refused, with their errors."""
    spec = {n: {"num_partitions": partitions, "replication_factor": 1} for n in names}
    result = admin.create_topics(spec, timeout_ms=60_000, validate_only=validate_only,
                                 raise_errors=False)
    return [f"{t['name']}: {t['error_code']}" for t in result["topics"] if t["error_code"]]


def wait_ready(admin: KafkaAdminClient, names: Sequence[str], chunk: int = 5000) -> int:
    """Poll metadata until every partition of every topic has a leader; returns polls made."""
    pending = set(names)
    polls = 0
    while pending:
        polls += 1
        ordered = sorted(pending)
        for start in range(0, len(ordered), chunk):
            for t in admin.describe_topics(ordered[start:start + chunk]):
                parts = t.get("partitions") or []
                if t.get("error_code", 0) == 0 and parts and all(
                        int(p.get("leader_id", -1)) >= 0 for p in parts):
                    pending.discard(t["name"])
        if pending:
            time.sleep(0.05)
    return polls


def create_all(bootstrap: str, names: Sequence[str], partitions: int,
               configs: dict[str, str] | None = None, batch_size: int = 1000) -> None:
    """Create `names` in batches (not measured: the live topics a no-op run then finds) and
    wait until every partition has a leader."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        for batch in sized(names, partitions, batch_size):
            spec = {n: {"num_partitions": partitions, "replication_factor": 1,
                        "configs": dict(configs or {})} for n in batch}
            result = admin.create_topics(spec, timeout_ms=60_000, raise_errors=False)
            refused = [t for t in result["topics"] if t["error_code"]]
            if refused:
                raise RuntimeError(f"creating the live topics failed: {refused[:3]}")
        wait_ready(admin, names)
    finally:
        admin.close()


def topic_config(bootstrap: str, names: Sequence[str], key: str) -> dict[str, str | None]:
    """The live value of config `key` of each topic in `names`, as the broker describes it
    (DescribeConfigs; None where the topic or the key is missing)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="bench-check")
    try:
        described = admin.describe_configs(
            [ConfigResource("TOPIC", name, configs={key: None}) for name in names],
            config_filter="all")
    finally:
        admin.close()
    found = {str(resource_name): configs for resource_type, resources in described.items()
             if str(resource_type).upper().endswith("TOPIC")
             for resource_name, configs in resources.items()}
    values: dict[str, str | None] = {}
    for name in names:
        entry = (found.get(name) or {}).get(key)
        value = entry.get("value") if isinstance(entry, dict) else entry
        values[name] = None if value is None else str(value)
    return values


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("floor", "loop"))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topics", type=int, required=True)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=1000,
                        help="topics per request at most (floor); the job's kafka.batch_size")
    parser.add_argument("--prefix", default="bench")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("kafka").setLevel(logging.CRITICAL)

    started = time.time()
    names = topic_names(args.topics, args.prefix)
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap, request_timeout_ms=120_000,
                             client_id=f"bench-{args.mode}")
    connected = time.time()
    errors: list[str] = []
    requests = 0
    if args.mode == "floor":
        groups = list(sized(names, args.partitions, args.batch_size))
        for group in groups:
            errors += create(admin, group, args.partitions, validate_only=True)
        validated = time.time()
        for group in groups:
            errors += create(admin, group, args.partitions, validate_only=False)
        requests = 2 * len(groups)
    else:
        for name in names:
            errors += create(admin, [name], args.partitions, validate_only=True)
        validated = time.time()
        for name in names:
            errors += create(admin, [name], args.partitions, validate_only=False)
        requests = 2 * len(names)
    acknowledged = time.time()
    polls = wait_ready(admin, names)
    ready = time.time()
    admin.close()
    print(json.dumps({
        "mode": args.mode, "topics": args.topics, "partitions": args.partitions,
        "requests": requests, "errors": len(errors), "first_errors": errors[:5],
        "ready_polls": polls, "started": started, "connected": connected,
        "validated": validated, "acknowledged": acknowledged, "ready": ready,
    }))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
