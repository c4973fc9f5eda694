"""A peer measured beside the job: segmentio/topicctl's `apply` against a running Kafka broker.

    python bench/topicctl_peer.py --topicctl /work/.peers/topicctl \\
        --bootstrap 127.0.0.1:PORT --topics 1000 --work DIR [--noop]

What it measures: the wall time of one `topicctl apply --skip-confirm --sleep-loop-duration 0s`
over topic files for N topics (`{prefix}{i:06d}`, replicationFactor 1, retentionMinutes 1440,
placement strategy `any`), from launching the process to its exit. Without --noop that apply
creates whichever topics are missing; with --noop it applies twice and reports the second
run, where every topic already exists and matches (topicctl still reads each one back).

topicctl works one topic at a time: per topic it re-reads the brokers (metadata for every
topic in the cluster, served from kafka-go's cache and copied whole each time, plus a
DescribeConfigs), reads the topic back, and, for a new topic, sends its own CreateTopics
and waits for a full metadata refresh that shows it. So a no-op apply's time per topic grows
with the number of topics in the cluster. `--sleep-loop-duration 0s` drops the 2 s sleep it
otherwise takes after each new topic (a fifth of the 10 s default); it must stay above 0 when
partitions are increased (use 1ms then).

The repository never carries topicctl or a recipe to build it: the reader builds the binary
(v1.23.1, from the Go module proxy) and passes its path with --topicctl. Every broker
address must be a loopback one.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import yaml

CLUSTER_NAME = "bench-local"
ENVIRONMENT = "bench"
REGION = "local"
CLUSTER_FILE = "cluster.yaml"
TOPICS_DIR = "topics"
TAIL_CHARS = 2000
# topicctl reads defaults for --cluster-config, --path-prefix and SASL credentials from these.
_ENV_PREFIX = "TOPICCTL_"


def _loopback_addrs(bootstrap: str) -> list[str]:
    """The comma-separated host:port list, refusing anything but loopback hosts."""
    addrs = [a.strip() for a in bootstrap.split(",") if a.strip()]
    if not addrs:
        raise ValueError("no bootstrap address given")
    for addr in addrs:
        host = addr.rsplit(":", 1)[0].strip("[]")
        if host != "localhost":
            try:
                loopback = ipaddress.ip_address(host).is_loopback
            except ValueError:
                loopback = False
            if not loopback:
                raise ValueError(f"{addr}: topicctl is only pointed at loopback brokers here")
    return addrs


def topic_name(i: int, prefix: str = "bench.") -> str:
    return f"{prefix}{i:06d}"


def topics_glob(directory: Path) -> str:
    """The glob matching the topic files write_topic_files puts under `directory`."""
    return str(Path(directory).resolve() / TOPICS_DIR / "*.yaml")


def _topic_doc(name: str, partitions: int) -> dict[str, Any]:
    return {
        "meta": {"name": name, "cluster": CLUSTER_NAME, "environment": ENVIRONMENT,
                 "region": REGION},
        "spec": {"partitions": partitions, "replicationFactor": 1, "retentionMinutes": 1440,
                 "placement": {"strategy": "any"}},
    }


def write_topic_files(directory: Path, bootstrap: str, topics: int, partitions: int = 1,
                      prefix: str = "bench.", per_file: int = 1) -> Path:
    """Write cluster.yaml (spec.bootstrapAddrs, no zkAddrs) and topics/*.yaml under `directory`.

    `per_file` topics go in each file, separated by `---` (1: one file per topic, the layout
    BENCHMARKS.md's figures were taken with). Returns the cluster config's path;
    topics_glob(directory) matches the topic files.
    """
    if topics < 1 or partitions < 1 or per_file < 1:
        raise ValueError("topics, partitions and per_file must be >= 1")
    base = Path(directory).resolve()
    topic_dir = base / TOPICS_DIR
    topic_dir.mkdir(parents=True, exist_ok=True)
    for stale in topic_dir.glob("*.yaml"):
        stale.unlink()
    cluster = {
        "meta": {"name": CLUSTER_NAME, "environment": ENVIRONMENT, "region": REGION,
                 "description": "local broker for bench/topicctl_peer.py"},
        "spec": {"bootstrapAddrs": _loopback_addrs(bootstrap)},
    }
    cluster_path = base / CLUSTER_FILE
    cluster_path.write_text(yaml.safe_dump(cluster, sort_keys=False))
    for start in range(0, topics, per_file):
        names = [topic_name(i, prefix) for i in range(start, min(start + per_file, topics))]
        docs = [_topic_doc(n, partitions) for n in names]
        (topic_dir / f"{names[0]}.yaml").write_text(
            yaml.safe_dump_all(docs, sort_keys=False, explicit_start=len(docs) > 1))
    return cluster_path


def set_retention(directory: Path, names: Sequence[str], retention_minutes: int) -> list[Path]:
    """Rewrite the topic files write_topic_files put under `directory` (one topic per file)
    so that the topics `names` ask for `retention_minutes` (topicctl's retentionMinutes,
    the topic's retention.ms); returns the files rewritten."""
    topic_dir = Path(directory).resolve() / TOPICS_DIR
    changed = []
    for name in names:
        path = topic_dir / f"{name}.yaml"
        docs = list(yaml.safe_load_all(path.read_text()))
        if [d["meta"]["name"] for d in docs] != [name]:
            raise ValueError(f"{path}: expected the one topic {name}")
        docs[0]["spec"]["retentionMinutes"] = retention_minutes
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        changed.append(path)
    return changed


def _tail(out: IO[bytes], chars: int = TAIL_CHARS) -> str:
    out.seek(0, os.SEEK_END)
    size = out.tell()
    out.seek(max(0, size - 4 * chars))
    return out.read().decode("utf-8", errors="replace")[-chars:]


def apply(binary: Path, cluster_config: Path, topics_glob: str, timeout_s: float,
          log_path: Path | None = None) -> dict[str, Any]:
    """Run one `topicctl apply` over the files matching `topics_glob`; time launch to exit.

    Returns {"seconds", "returncode", "output_tail"} (stdout and stderr interleaved, last
    2000 characters); with `log_path`, the whole output is kept there. Raises RuntimeError,
    with the output tail, when topicctl exits non-zero or outlives `timeout_s`.
    """
    cmd = [str(binary), "apply", "--skip-confirm", "--cluster-config", str(cluster_config),
           "--sleep-loop-duration", "0s", topics_glob]
    env = {k: v for k, v in os.environ.items() if not k.startswith(_ENV_PREFIX)}
    with (open(log_path, "w+b") if log_path is not None
          else tempfile.TemporaryFile()) as out:
        launched = time.monotonic()
        try:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, env=env, timeout=timeout_s,
                                  check=False)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"topicctl apply still running after {timeout_s:.0f}s:\n"
                               f"{_tail(out)}") from None
        seconds = time.monotonic() - launched
        tail = _tail(out)
    if proc.returncode != 0:
        raise RuntimeError(f"topicctl apply exited {proc.returncode}:\n{tail}")
    return {"seconds": seconds, "returncode": proc.returncode, "output_tail": tail}


def version(binary: Path) -> str:
    """What `topicctl --version` prints, e.g. `topicctl version v1.23.1 (ref:dev)`."""
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                          timeout=30, check=False)
    return (done.stdout or done.stderr).strip()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topicctl", type=Path, required=True,
                        help="a topicctl v1.23.1 binary, built by the reader")
    parser.add_argument("--bootstrap", required=True, help="127.0.0.1:PORT[,...]")
    parser.add_argument("--topics", type=int, required=True)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--prefix", default="bench.")
    parser.add_argument("--per-file", type=int, default=1, help="topics per YAML file")
    parser.add_argument("--work", type=Path, required=True,
                        help="directory for the cluster and topic files and the logs")
    parser.add_argument("--noop", action="store_true",
                        help="apply twice and report the second (no-op) run")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per apply")
    args = parser.parse_args(argv)

    work = args.work.resolve()
    cluster = write_topic_files(work, args.bootstrap, args.topics, args.partitions,
                                args.prefix, args.per_file)
    pattern = topics_glob(work)
    load_before = os.getloadavg()[0]
    first = apply(args.topicctl, cluster, pattern, args.timeout, work / "apply-1.log")
    result: dict[str, Any] = {
        "tool": "topicctl", "version": version(args.topicctl), "topics": args.topics,
        "partitions": args.partitions, "per_file": args.per_file, "noop": args.noop,
        "load_1m": load_before,
    }
    if args.noop:
        result["first_seconds"] = first["seconds"]
        result["load_1m_noop"] = os.getloadavg()[0]
        second = apply(args.topicctl, cluster, pattern, args.timeout, work / "apply-2.log")
        result["seconds"] = second["seconds"]
    else:
        result["seconds"] = first["seconds"]
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
