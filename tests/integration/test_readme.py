"""The README's "Quick start", run line by line as a new user runs it, so it cannot drift from
what works.

The block is read from README.md itself and run in a copy of this checkout (its tracked
and untracked files, the installed venv and the Maven cache linked in): its relative
paths (`conf/local.yaml`, `warehouse/...`, `.cache/...`) resolve there, in classic mode
against the directory the job runs from and on the Spark Connect server that `make
connect-up` starts there. The broker and the server the block starts are stopped at the
end. `.ci/run` runs the README's other command, `make run`, on its clean clone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import INTERPRETED_DRIVER_OPTS, broker_state

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]
# What the copy links instead of copying: installed once by `make setup-test` (the quick
# start's `make kafka-up` and `make connect-up` find them up to date).
LINKED = (".venv", ".cache/jars", ".cache/driver", ".cache/connect/venv")


def quick_start(readme: str) -> list[str]:
    """The commands of the first ```bash block under "## Quick start", one per entry
    (a line ending in a backslash continues on the next)."""
    section = readme.split("\n## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None, "README.md has no bash block under ## Quick start"
    commands: list[str] = []
    pending = ""
    for line in block.group(1).splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        pending += line
        if line.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        commands.append(pending)
        pending = ""
    return commands


def _copy_checkout(target: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        source = REPO / name
        if not source.is_file():
            continue
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        # Times kept: make sees its targets (venv, jars, driver archive) up to date.
        shutil.copy2(source, dest)
    for name in LINKED:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).symlink_to(REPO / name)


@pytest.fixture
def checkout(tmp_path: Path) -> Iterator[Path]:
    copy = tmp_path / "checkout"
    _copy_checkout(copy)
    try:
        yield copy
    finally:
        for target in ("connect-down", "kafka-down"):
            subprocess.run(["make", "-s", target], cwd=copy, capture_output=True, timeout=120)


def _example_topics() -> dict[str, dict[str, Any]]:
    rows = yaml.safe_load((REPO / "conf" / "examples" / "desired_topics.yaml").read_text())
    expected = {}
    for row in rows:
        assignment = row.get("replica_assignment")
        expected[row["topic"]] = {
            "partitions": len(assignment) if assignment else row.get("partitions", 1),
            "replication_factor": 1,
            "configs": {k: str(v) for k, v in (row.get("configs") or {}).items()},
        }
    return expected


def test_the_quick_start_runs_line_by_line(checkout: Path) -> None:
    commands = quick_start((REPO / "README.md").read_text())
    assert commands[0].startswith("make kafka-up")
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_REMOTE", "KAFKA_BOOTSTRAP_SERVERS", "PYSPARK_PYTHON",
                        "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    # Its classic drivers run their queries interpreted, as every driver the tests start
    # (tests/helpers.py: INTERPRETED); `make run` on CI's clean clone keeps Spark's codegen.
    # The server of `make connect-up` (started by the connect venv's spark-submit, which
    # reads SPARK_SUBMIT_OPTS too) takes them and the classic drivers' C1-only JIT: it runs
    # one apply: 66 s of CPU with the JVM's default JIT, 36 s with C1 only.
    env["SPARK_SUBMIT_OPTS"] = f"{INTERPRETED_DRIVER_OPTS} -XX:TieredStopAtLevel=1"
    # One shell, as a reader's terminal: what a line exports, the next lines see. Each
    # line's exit code is noted before the next one runs.
    codes_file = checkout.parent / "quick-start-codes"
    script = "\n".join(f"{c}\necho \"$?\" >> {codes_file}" for c in commands)
    done = subprocess.run(["bash", "-c", script], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=1200)
    codes_seen = [int(c) for c in codes_file.read_text().split()]
    output = done.stdout + done.stderr
    assert list(zip(commands, codes_seen, strict=True)) == [(c, 0) for c in commands], \
        output[-8000:]

    # The plan saved, applied exactly, reported; the Connect run found nothing to do.
    assert "plan saved to warehouse/plans/today.json" in output
    assert "history of topic orders.created" in output
    assert output.count("outcomes: already_present=5") == 1, output[-4000:]
    bootstrap = subprocess.run(
        [".venv/bin/python", "-m", "dev.devkafka", "status", "--dir",
         ".cache/kafka/local"], cwd=checkout, capture_output=True, text=True, check=True
    ).stdout.strip()
    state = {name: {k: v for k, v in s.items() if k != "topic_id"}
             for name, s in broker_state(bootstrap).items()}
    assert state == _example_topics()
    # Every table of the run is where conf/local.yaml's relative paths say, in the copy.
    assert sorted(p.name for p in (checkout / "warehouse").iterdir()) == [
        "desired_topics", "plans", "provision_runs", "provision_runs_locks", "topic_audit",
        "topic_snapshots"]
