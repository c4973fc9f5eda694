"""The job's runtime settings on every session it opens, classic (spark-submit.sh) and
through a stock Spark Connect server started without anything of the job's; the conf's
spark.settings over them; the warnings naming what a server will make slow."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dev.sparkconnect import ConnectServer
from provisioning.session import WORKLOAD_SETTINGS
from tests.helpers import QUICK_JIT, run_cli, write_conf

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

JOB = "tests/support/session_settings.py"
KEYS = [*WORKLOAD_SETTINGS, "spark.sql.session.timeZone"]


@pytest.fixture(scope="module")
def stock_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """A stock server (Spark's defaults but Delta and loopback), started with one slow
    static setting: Python workers that are not reused. Its JVM, which serves one run,
    compiles as spark-submit.sh's drivers do (JVM options are no Spark setting)."""
    server = ConnectServer(tmp_path_factory.mktemp("stock-connect"), stock=True,
                           extra={"spark.python.worker.reuse": "false"},
                           java_options=QUICK_JIT.split())
    server.start()
    yield server
    server.stop()


def _settings(tmp_path: Path, spark_settings: dict[str, str], remote: str | None = None
              ) -> tuple[dict[str, Any], str]:
    conf = write_conf(tmp_path / "conf.yaml", "127.0.0.1:9", tmp_path / "wh",
                      extra={"spark": {"settings": spark_settings}})
    done = run_cli([str(conf), *KEYS], job=JOB, remote=remote, timeout=300)
    assert done.returncode == 0, done.output[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.output


def test_a_classic_session_has_the_workload_settings_under_the_confs(tmp_path: Path) -> None:
    have, _ = _settings(tmp_path, {"spark.sql.shuffle.partitions": "16",
                                   "spark.sql.session.timeZone": "UTC"})
    assert have == {**WORKLOAD_SETTINGS, "spark.sql.shuffle.partitions": "16",
                    "spark.sql.session.timeZone": "UTC"}


def test_a_stock_connect_server_gives_the_session_the_workload_settings_and_warns(
        stock_server: ConnectServer, tmp_path: Path) -> None:
    # The server runs Spark's defaults: 200 shuffle partitions, 50 snapshot partitions,
    # adaptive execution on.
    have, output = _settings(tmp_path, {"spark.sql.shuffle.partitions": "8",
                                        "spark.sql.session.timeZone": "UTC",
                                        "spark.sql.warehouse.dir": "/nowhere"},
                             remote=stock_server.address)
    assert have == {**WORKLOAD_SETTINGS, "spark.sql.shuffle.partitions": "8",
                    "spark.sql.session.timeZone": "UTC"}
    warnings = [line.split(" will make the job slow: ", 1)[1]
                for line in output.splitlines() if " will make the job slow: " in line]
    assert warnings == [
        "the session could not set spark.sql.warehouse.dir=/nowhere (it is "
        f"file:{stock_server.cwd / 'spark-warehouse'}: the server does not let a session "
        "change it); start the server with spark.sql.warehouse.dir=/nowhere",
        "spark.python.worker.reuse is false (every admin task starts a new Python worker, "
        "which imports pyarrow and the job's code again); start the server with "
        "spark.python.worker.reuse=true",
    ]
