"""A local Spark Connect server on loopback, for the tests and `make connect-up`.

The server is pyspark's own `SparkConnectServer`, started with `spark-submit` from a
Python environment that has nothing but `pyspark[connect]` (`.cache/connect/venv`, made
by `make connect-venv`), the Delta jars of the Maven cache and Delta's two settings.
Whatever else the job needs on the server (its own package, kafka-python) it ships itself.

Two variants: the project's own server (`make connect-up`: a 2 GiB driver, the UI off and
the small local settings of `server_settings`), and a stock one (`stock=True`, `up
--stock`): Spark's defaults but Delta and loopback, as a team's server started without
anything of this project's would be (`stock_settings`).

    python -m dev.sparkconnect up --dir .cache/connect/server    # prints sc://...
    python -m dev.sparkconnect up --stock --dir .cache/connect/stock
    python -m dev.sparkconnect status --dir .cache/connect/server
    python -m dev.sparkconnect down --dir .cache/connect/server
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dev.devkafka import (
    HOST,
    _parent_death_signal_hook,
    _port_open,
    _signal_group,
    _tail,
    free_ports,
)

REPO = Path(__file__).resolve().parents[1]
SERVER_VENV = REPO / ".cache" / "connect" / "venv"
DELTA_JARS = REPO / ".cache" / "jars" / "delta"
STATE_FILE = "connect.json"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"

# Spark's large buffers below the G1 collector's humongous size (half a heap region): a
# sort's or an aggregation's memory page (by default a power of two up to 64 MiB, from the
# heap and the cores) and the 4 MiB chunk every task binary's broadcast starts with. An
# object of at least half a region goes straight to the old generation, and with 1 MiB
# regions (a 2 GiB heap) every Spark job made some: a warm server ran a concurrent marking
# cycle every few seconds, a sixth of its CPU. With these, a server had run 16 cycles after
# 11 five-topic flows; without them, 106 after 12 (156 after 11 with a 4 GiB heap), and
# its last three of the 11 flows took 60 s of CPU against 54 s.
SMALL_BUFFERS = {"spark.buffer.pageSize": "1m", "spark.broadcast.blockSize": "256k"}
G1_REGIONS = "-XX:G1HeapRegionSize=4m"


class ConnectServerError(RuntimeError):
    """The server could not be started or did not come up."""


def server_settings(port: int) -> dict[str, str]:
    """The server's settings: loopback only, Delta, speculation off, small local defaults."""
    from provisioning.session import SESSION_SETTINGS

    return {
        **SESSION_SETTINGS,
        "spark.connect.grpc.binding.address": HOST,
        "spark.connect.grpc.binding.port": str(port),
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        "spark.ui.enabled": "false",
        # One small machine: few shuffle partitions, as spark-submit.sh gives local runs.
        "spark.sql.shuffle.partitions": "4",
        # VACUUM lists a table's files in this many tasks (Spark's default is 10,000).
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
        "spark.databricks.delta.snapshotPartitions": "2",
        **SMALL_BUFFERS,
        "spark.driver.extraJavaOptions":
            f"-Dlog4j2.configurationFile=file:{REPO / 'conf' / 'log4j2.properties'} {G1_REGIONS}",
    }


def stock_settings(port: int) -> dict[str, str]:
    """A stock server's settings: Delta's two, and loopback only; Spark's defaults for the
    rest (shuffle partitions, Delta's snapshot partitions, the UI, driver memory)."""
    from provisioning.session import DELTA_SETTINGS

    return {
        **DELTA_SETTINGS,
        "spark.connect.grpc.binding.address": HOST,
        "spark.connect.grpc.binding.port": str(port),
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
    }


class ConnectServer:
    """One Spark Connect server process (local[2]) with its logs under `directory`: the
    project's own (`server_settings`, `driver_memory`), or with `stock` a stock one
    (`stock_settings`, Spark's default driver memory)."""

    def __init__(self, directory: Path, venv: Path = SERVER_VENV, port: int | None = None,
                 driver_memory: str = "2g", cwd: Path = REPO, detached: bool = False,
                 stock: bool = False, extra: Mapping[str, str] | None = None,
                 java_options: Sequence[str] = ()) -> None:
        self.directory = directory
        self.venv = venv
        self.port = port or free_ports(1)[0]
        self.driver_memory = None if stock else driver_memory
        self.cwd = cwd
        self.detached = detached
        self.stock = stock
        # Settings given on top of the variant's (a test's server started otherwise).
        self.extra = dict(extra or {})
        # JVM options added to the variant's own (spark.driver.extraJavaOptions).
        self.java_options = tuple(java_options)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"sc://{HOST}:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.directory / "server.log"

    def log_tail(self, lines: int = 40) -> str:
        return _tail(self.log_file, lines)

    def command(self) -> list[str]:
        submit = self.venv / "bin" / "spark-submit"
        if not submit.exists():
            raise ConnectServerError(f"{submit} is missing: run `make connect-venv`")
        jars = sorted(str(p) for p in DELTA_JARS.glob("*.jar"))
        if not jars:
            raise ConnectServerError(f"no Delta jars in {DELTA_JARS}: run `make jars`")
        chosen = stock_settings if self.stock else server_settings
        given = {**chosen(self.port), **self.extra}
        if self.java_options:
            java = " ".join(filter(None, (given.get("spark.driver.extraJavaOptions"),
                                          *self.java_options)))
            given["spark.driver.extraJavaOptions"] = java
        settings = [part for key, value in given.items() for part in ("--conf", f"{key}={value}")]
        memory = ["--driver-memory", self.driver_memory] if self.driver_memory else []
        return [str(submit), "--class", SERVER_CLASS, "--master", "local[2]", *memory,
                "--jars", ",".join(jars), *settings, "spark-internal"]

    def start(self, timeout_s: float = 120) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYSPARK_PYTHON": str(self.venv / "bin" / "python"),
               "SPARK_LOCAL_IP": HOST}
        # The server's Python workers must not find the project's own packages: the job
        # ships them. Nothing of this checkout is on their path.
        for key in ("PYTHONPATH", "SPARK_HOME", "PYSPARK_DRIVER_PYTHON", "SPARK_REMOTE"):
            env.pop(key, None)
        with self.log_file.open("ab") as fh:
            self.proc = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                cwd=self.cwd, env=env, start_new_session=True,
                preexec_fn=None if self.detached else _parent_death_signal_hook())
        if not self.detached:
            atexit.register(self.stop)
        deadline = time.monotonic() + timeout_s
        while not _port_open(self.port):
            if self.proc.poll() is not None:
                raise ConnectServerError(f"the Connect server exited with code "
                                         f"{self.proc.returncode}\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise ConnectServerError(f"the Connect server did not listen on {self.port} "
                                         f"in {timeout_s:.0f}s\n{self.log_tail()}")
            time.sleep(0.2)

    def stop(self, timeout_s: float = 30) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        _signal_group(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            _signal_group(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def state(self) -> dict[str, Any]:
        return {"address": self.address, "port": self.port,
                "pid": self.proc.pid if self.proc else None, "log": str(self.log_file)}


def warm_up(address: str) -> float:
    """One small Delta round trip and one Python task on the server, from a process of its
    own (a process with a classic session cannot open a Connect one); seconds it took."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "dev.sparkconnect", "warm",
                           "--remote", address], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        raise ConnectServerError(f"warming the server up failed:\n{done.stderr[-3000:]}")
    return time.monotonic() - started


def _warm(address: str) -> None:
    import tempfile

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(address).getOrCreate()
    try:
        with tempfile.TemporaryDirectory(prefix="connect-warm-") as tmp:
            spark.range(10).write.format("delta").save(f"{tmp}/t")
            spark.read.format("delta").load(f"{tmp}/t").collect()
        spark.range(4).mapInArrow(lambda batches: batches, "id long").collect()
    finally:
        spark.stop()


# -- CLI ---------------------------------------------------------------------------------

def _read_state(directory: Path) -> dict[str, Any] | None:
    try:
        return json.loads((directory / STATE_FILE).read_text())  # type: ignore[no-any-return]
    except (FileNotFoundError, ValueError):
        return None


def _alive(state: dict[str, Any]) -> bool:
    pid = state.get("pid")
    if not pid:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return SERVER_CLASS in cmdline and _port_open(int(state["port"]))


def _cmd_up(directory: Path, timeout_s: float, memory: str, stock: bool = False) -> int:
    state = _read_state(directory)
    if state is not None and _alive(state):
        print(state["address"])
        return 0
    server = ConnectServer(directory, driver_memory=memory, detached=True, stock=stock)
    started = time.monotonic()
    server.start(timeout_s)
    warm = warm_up(server.address)
    tmp = directory / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(server.state(), indent=2) + "\n")
    tmp.replace(directory / STATE_FILE)
    print(f"spark connect: up in {time.monotonic() - started:.1f}s (warm-up {warm:.1f}s), "
          f"log {server.log_file}", file=sys.stderr)
    print(server.address)
    return 0


def _cmd_down(directory: Path) -> int:
    state = _read_state(directory)
    if state is not None and _alive(state):
        pid = int(state["pid"])
        _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while _alive(state) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(state):
            _signal_group(pid, signal.SIGKILL)
    (directory / STATE_FILE).unlink(missing_ok=True)
    return 0


def _cmd_status(directory: Path) -> int:
    state = _read_state(directory)
    if state is None or not _alive(state):
        print(f"spark connect: no live server recorded in {directory / STATE_FILE}",
              file=sys.stderr)
        return 1
    print(state["address"])
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `python -m dev.sparkconnect up|down|status --dir DIR`."""
    parser = argparse.ArgumentParser(prog="python -m dev.sparkconnect",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("up", "start a detached server (or reuse a live one), print sc://..."),
                       ("down", "stop the recorded server"),
                       ("status", "print the address of a live server, else exit 1"),
                       ("warm", "run a small Delta round trip and a Python task on a server")):
        cmd = sub.add_parser(name, help=text)
        if name == "warm":
            cmd.add_argument("--remote", required=True, help="sc://HOST:PORT")
            continue
        cmd.add_argument("--dir", type=Path, required=True, help="server directory")
        if name == "up":
            cmd.add_argument("--timeout", type=float, default=180, help="seconds to wait")
            cmd.add_argument("--driver-memory", default="2g")
            cmd.add_argument("--stock", action="store_true",
                             help="a stock server: Spark's defaults but Delta and loopback")
    args = parser.parse_args(argv)
    if args.command == "warm":
        _warm(args.remote)
        return 0
    directory = args.dir.resolve()
    try:
        if args.command == "up":
            return _cmd_up(directory, args.timeout, args.driver_memory, args.stock)
        if args.command == "down":
            return _cmd_down(directory)
        return _cmd_status(directory)
    except ConnectServerError as exc:
        print(f"spark connect: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
