"""Test helpers: conf files for a test broker, the CLI through spark-submit.sh, reading tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]


def write_conf(path: Path, bootstrap: str, warehouse: Path, cluster: str = "local",
               extra: Mapping[str, Any] | None = None,
               cluster_extra: Mapping[str, Any] | None = None) -> Path:
    """A conf for one test cluster with every table under `warehouse`."""
    data: dict[str, Any] = {
        "clusters": {cluster: {"bootstrap_servers": bootstrap, **(cluster_extra or {})}},
        "tables": {
            "manifests": [str(warehouse / "desired_topics")],
            "audit": str(warehouse / "topic_audit"),
            "runs": str(warehouse / "provision_runs"),
            "snapshots": str(warehouse / "topic_snapshots"),
        },
        "kafka": {"request_timeout_ms": 15000, "operation_timeout_ms": 15000},
        "spark": {"settings": {"spark.sql.session.timeZone": "UTC"}},
    }
    for key, value in (extra or {}).items():
        data[key] = value
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """Both streams: spark-submit merges the Python driver's stderr into stdout."""
        return self.stdout + self.stderr

    def json(self) -> Any:
        """The `--json` document, which is the last line of stdout."""
        return json.loads(self.stdout.strip().splitlines()[-1])


def run_cli(args: Sequence[str], env: Mapping[str, str] | None = None,
            cwd: Path | None = None, timeout: float = 600,
            job: str = "jobs/provision_topics.py") -> Completed:
    """Run a job through spark-submit.sh, as an operator would."""
    full_env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
                "PYSPARK_DRIVER_PYTHON": sys.executable, **(env or {})}
    proc = subprocess.run(
        [str(REPO / "spark-submit.sh"), "--driver-memory", "1g", str(REPO / job), *args],
        cwd=cwd or REPO, env=full_env, capture_output=True, text=True, timeout=timeout,
    )
    return Completed(proc.returncode, proc.stdout, proc.stderr)
