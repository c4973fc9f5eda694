"""A Spark standalone cluster on loopback for the tests: a master and workers of the pyspark
distribution's own daemons (`bin/spark-class org.apache.spark.deploy.master.Master` /
`...worker.Worker`), started on free loopback ports with small memory. Their executors run
whatever Python a submission names (`spark.pyspark.python`), so a test can give them one
with nothing of this project, as a real cluster's would be."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from dev.devkafka import free_ports


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


class Standalone:
    """A master and `workers` workers of the pyspark distribution, all on 127.0.0.1."""

    def __init__(self, base: Path, workers: int) -> None:
        self.base = base
        ports = free_ports(2 + 2 * workers)
        self.port, self.ui_port = ports[0], ports[1]
        self.worker_ports = [(ports[2 + 2 * i], ports[3 + 2 * i]) for i in range(workers)]
        self.work_dirs = [base / f"worker-{i}" for i in range(workers)]
        self.procs: list[subprocess.Popen[bytes]] = []
        conf_dir = base / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m",
                    # Daemons that mostly wait: C1 only, one GC thread.
                    "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
                    "SPARK_CONF_DIR": str(conf_dir)}
        for name in ("SPARK_HOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV"):
            self.env.pop(name, None)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _launch(self, name: str, args: list[str]) -> None:
        log = (self.base / f"{name}.log").open("wb")
        self.procs.append(subprocess.Popen([str(_spark_class()), *args], env=self.env,
                                           stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True))

    def start(self, timeout_s: float = 120) -> None:
        self._launch("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                "--port", str(self.port), "--webui-port", str(self.ui_port)])
        for i, ((port, ui), work) in enumerate(zip(self.worker_ports, self.work_dirs,
                                                   strict=True)):
            work.mkdir(parents=True, exist_ok=True)
            self._launch(f"worker-{i}", [
                "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                "--port", str(port), "--webui-port", str(ui), "--cores", "1",
                "--memory", "768m", "--work-dir", str(work), self.url])
        deadline = time.monotonic() + timeout_s
        master_log = self.base / "master.log"
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited ({proc.returncode}): "
                                       f"{self.logs()}")
            text = master_log.read_text(errors="replace") if master_log.exists() else ""
            if text.count("Registering worker 127.0.0.1:") == len(self.work_dirs):
                return
            time.sleep(0.5)
        raise RuntimeError(f"standalone cluster not ready in {timeout_s}s\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.base.glob("*.log")))

    def stop(self) -> None:
        import signal

        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
