"""Test helpers: conf files for a test broker, the CLI through spark-submit.sh, reading tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from provisioning import conf as conf_room
from provisioning.conf import Conf
from provisioning.registry import KINDS

REPO = Path(__file__).resolve().parents[1]
# The registered kinds' parts, as the command line hands them to the rooms below it: the
# conf loader's sections, the engine's run parts, the views' parts.
SECTIONS = tuple(k.conf for k in KINDS)
RUNS = tuple(k.run for k in KINDS)
VIEWS = tuple(k.view for k in KINDS)


def load_conf(path: str | Path, environ: Mapping[str, str] | None = None) -> Conf:
    """`provisioning.conf.load_conf` with the registered kinds' sections."""
    return conf_room.load_conf(path, SECTIONS, environ)


def parse_conf(data: Any, source: str, digest: str = "",
               environ: Mapping[str, str] | None = None) -> Conf:
    """`provisioning.conf.parse_conf` with the registered kinds' sections."""
    return conf_room.parse_conf(data, source, SECTIONS, digest, environ)
# The tests' queries are a few rows each, thousands of them per run of the suite: compiling
# generated code for each costs more CPU than running it interpreted (same results). The
# tests' own session, their Connect server and the classic drivers they start (run_cli, the
# Airflow DAG's, the README quick start's) run so; `make run`, the benchmarks and `make
# connect-up` keep Spark's codegen.
INTERPRETED = {"spark.sql.codegen.wholeStage": "false",
               "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
# The same for a classic driver, as Java system properties (a new SparkConf reads every
# `spark.*` one): a cold JVM compiles each query's generated code with a cold compiler.
INTERPRETED_DRIVER_OPTS = " ".join(f"-D{k}={v}" for k, v in INTERPRETED.items())
# What spark-submit.sh gives a client-mode driver JVM (C1 only, the parallel GC, the class
# archive of `make driver-archive`), for the Spark JVMs a test starts without it: the
# Airflow DAG's spark-submit, the standalone cluster's executors and the stock Connect
# server of test_session_settings (which takes the JIT flags only). Measured on a 5-topic
# classic apply: 116 s of CPU with the JVM's defaults, 74 s with these flags but no
# archive, 45 s with both.
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseParallelGC"
DRIVER_ARCHIVE = REPO / ".cache" / "driver" / "driver.jsa"


def quick_driver_opts() -> str:
    """QUICK_JIT and, when `make driver-archive` made it, the driver's class archive (a
    stale one is ignored by the JVM, as spark-submit.sh's)."""
    if not DRIVER_ARCHIVE.is_file():
        return QUICK_JIT
    return (f"{QUICK_JIT} -XX:SharedArchiveFile={DRIVER_ARCHIVE} -Xshare:auto "
            "-Xlog:cds=off,cds+dynamic=off")


def write_conf(path: Path, bootstrap: str, warehouse: Path, cluster: str = "local",
               extra: Mapping[str, Any] | None = None,
               cluster_extra: Mapping[str, Any] | None = None,
               manifests: Sequence[Path] = ()) -> Path:
    """A conf for one test cluster with every table under `warehouse`."""
    data: dict[str, Any] = {
        "clusters": {cluster: {"bootstrap_servers": bootstrap, **(cluster_extra or {})}},
        "tables": {
            "manifests": [str(m) for m in manifests] or [str(warehouse / "desired_topics")],
            "audit": str(warehouse / "topic_audit"),
            "runs": str(warehouse / "provision_runs"),
            "snapshots": str(warehouse / "topic_snapshots"),
        },
        "kafka": {"request_timeout_ms": 15000, "operation_timeout_ms": 15000},
        # Fewer tasks per query than the job's own settings (provisioning.session): the
        # tests' tables are a few rows, and each task costs the Connect server CPU. Over a
        # 5-topic load, plan, apply and no-op apply it took 40 and 38 s against 51 and 45.
        "spark": {"settings": {"spark.sql.session.timeZone": "UTC",
                               "spark.sql.shuffle.partitions": "2",
                               "spark.databricks.delta.snapshotPartitions": "1"}},
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


# What pyspark sets in this process for a Spark Connect session (the tests' own, in lane
# connect), and a Connect client's address: a child process that inherited either would
# take itself for a Connect client.
CONNECT_CLIENT_VARS = ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a child that starts Spark its own way: the variables
    of CONNECT_CLIENT_VARS dropped, `extra` on top."""
    env = {k: v for k, v in os.environ.items() if k not in CONNECT_CLIENT_VARS}
    return {**env, **(extra or {})}


def run_cli(args: Sequence[str], env: Mapping[str, str] | None = None,
            cwd: Path | None = None, timeout: float = 600,
            job: str = "jobs/provision_topics.py",
            spark_args: Sequence[str] = (), remote: str | None = None) -> Completed:
    """Run a job through spark-submit.sh, as an operator would: classic Spark, or with
    `remote` (sc://...) as a thin client of that Spark Connect server."""
    full_env = child_env({"PYSPARK_PYTHON": sys.executable,
                          "PYSPARK_DRIVER_PYTHON": sys.executable, **(env or {})})
    if not remote and "SPARK_SUBMIT_OPTS" not in (env or {}):
        # A test that gives the driver's JVM options (test_packaging) sees only its own.
        full_env["SPARK_SUBMIT_OPTS"] = " ".join(
            filter(None, (os.environ.get("SPARK_SUBMIT_OPTS"), INTERPRETED_DRIVER_OPTS)))
    if remote and not spark_args and _forkable(env):
        # spark-submit.sh's Connect branch, from an already-imported Python (zygote.py).
        pythonpath = os.environ.get("PYTHONPATH")
        run_env = {**full_env, "SPARK_REMOTE": remote,
                   "PYTHONPATH": f"{REPO / 'lib'}:{REPO}{':' + pythonpath if pythonpath else ''}"}
        proc = _zygote(run_env).run([str(REPO / job), *args], run_env, cwd or REPO, timeout)
        return Completed(proc.returncode, proc.stdout, proc.stderr)
    launcher = ["--remote", remote] if remote else ["--driver-memory", "1g"]
    proc = subprocess.run(
        [str(REPO / "spark-submit.sh"), *launcher, *spark_args, str(REPO / job), *args],
        cwd=cwd or REPO, env=full_env, capture_output=True, text=True, timeout=timeout,
    )
    return Completed(proc.returncode, proc.stdout, proc.stderr)


# What a run's environment must not set to be forked from the zygote: anything that
# changes how its Python starts or which Python it is (the fault injection of fault_env
# comes in through PYTHONPATH).
_NOT_FORKABLE = ("PYTHON", "PYSPARK_DRIVER_PYTHON", "PROVISIONING_FAULT")
_ZYGOTE: list[Any] = []


def _forkable(env: Mapping[str, str] | None) -> bool:
    return not any(key.startswith(_NOT_FORKABLE) for key in (env or {}))


def _zygote(env: Mapping[str, str]) -> Any:
    """This process's zygote (tests/support/zygote.py), started by its first Connect run."""
    if not _ZYGOTE:
        import atexit

        from tests.support.zygote import Zygote

        _ZYGOTE.append(Zygote(env))
        atexit.register(_ZYGOTE[0].stop)
    return _ZYGOTE[0]


def fault_env(*faults: str) -> dict[str, str]:
    """The environment that injects `faults` into every Python process of a run
    (tests/support/faults)."""
    return {"PROVISIONING_FAULT": ",".join(faults),
            "PYTHONPATH": f"{REPO / 'tests' / 'support' / 'faults'}:{REPO / 'lib'}:{REPO}"}


@dataclass
class PausedRun:
    """A run of the job on a thread of its own, waiting at a fault point
    (tests/support/faults: `pause-...:PATH`) until `go`."""

    thread: threading.Thread
    go_file: Path
    finished: dict[str, Completed]

    def go(self, timeout: float = 600) -> Completed:
        """Let the run go on; what it did once it exits."""
        self.go_file.touch()
        self.thread.join(timeout)
        return self.finished["done"]


def run_paused(args: Sequence[str], point: str, go_file: Path, remote: str | None,
               timeout: float = 300, env: Mapping[str, str] | None = None) -> PausedRun:
    """`args` run through `run_cli` on a thread (with `env` too), with the fault
    `point:go_file`; returned once the run waits there (`go_file`.waiting exists), failing
    when it never gets there."""
    finished: dict[str, Completed] = {}
    thread = threading.Thread(target=lambda: finished.update(done=run_cli(
        list(args), env={**(env or {}), **fault_env(f"{point}:{go_file}")}, remote=remote)))
    thread.start()
    waiting = Path(f"{go_file}.waiting")
    deadline = time.monotonic() + timeout
    while not waiting.exists() and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    ended = finished["done"].output[-3000:] if "done" in finished else ""
    assert waiting.exists(), f"the run never reached {point}\n{ended}"
    return PausedRun(thread, go_file, finished)


# Whether the tests' own session (the `spark` fixture) is a Spark Connect session: in lane
# `connect` it is (tests/conftest.py), and no classic session exists for the CLI to run on.
TESTS_SESSION: dict[str, bool] = {"connect": False}


def run_cli_in_process(args: Sequence[str], env: Mapping[str, str] | None = None
                       ) -> Completed:
    """Run the job's CLI (`provisioning.cli.main`, the same command spark-submit.sh runs)
    in this process, on the tests' classic SparkSession: no JVM start per run, for tests
    that run the job many times. Other tests go through spark-submit.sh (run_cli); in lane
    `connect`, as thin clients of its server."""
    from click.testing import CliRunner

    from provisioning.cli import main

    if TESTS_SESSION["connect"]:
        raise RuntimeError("run_cli_in_process runs on the tests' classic session, and in "
                           "lane connect the tests' session is a Spark Connect one: use "
                           "run_cli(..., remote=connect_server.address) (the `cli` fixture)")
    result = CliRunner(env=dict(env or {})).invoke(main, list(args), catch_exceptions=False)
    return Completed(result.exit_code, result.stdout, result.stderr)


def broker_state(bootstrap: str, include_internal: bool = False) -> dict[str, dict[str, Any]]:
    """Every topic as the broker reports it: id, partitions, replication factor, overrides."""
    return broker_state_as({"bootstrap_servers": bootstrap}, include_internal)


def compile_policy_jar(work: Path) -> Path:
    """Compile the test CreateTopicPolicy against the cached kafka-clients jar."""
    clients = sorted((REPO / ".cache" / "jars" / "kafka").glob("kafka-clients-*.jar"))
    if not clients:
        raise RuntimeError("kafka-clients jar missing: run `make jars`")
    classes = work / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    sources = sorted(str(p) for p in (REPO / "tests" / "java").rglob("*.java"))
    subprocess.run(["javac", "-d", str(classes), "-cp", str(clients[0]), *sources],
                   check=True, capture_output=True, text=True)
    jar = work / "test-policies.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    return jar


def topic_rows(prefix: str, n: int, width: int = 0, partitions: int = 1
               ) -> list[dict[str, Any]]:
    """`n` manifest rows of cluster `local`: topics `prefix` + i (zero-padded to `width`
    digits), `partitions` partitions each, replication factor 1."""
    return [{"cluster": "local", "topic": f"{prefix}{i:0{width}d}", "partitions": partitions,
             "replication_factor": 1} for i in range(n)]


def write_manifest_table(spark: Any, path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """A Delta manifest table from partial rows (missing columns null)."""
    from schemas import MANIFEST, column_names

    cols = column_names(MANIFEST)
    data = [tuple(r.get(c) for c in cols) for r in rows]
    (spark.createDataFrame(data, MANIFEST).write.format("delta").mode("overwrite")
     .option("overwriteSchema", "true").save(str(path)))


def kafka_tool(main_class: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's own command-line tools from the cached broker jars."""
    jars = REPO / ".cache" / "jars" / "kafka" / "*"
    return subprocess.run(["java", "-cp", str(jars), main_class, *args],
                          capture_output=True, text=True, check=True, timeout=120)


def audit_rows(spark: Any, warehouse: Path, run_id: str) -> list[tuple[Any, ...]]:
    """(cluster, topic, action, phase, outcome) of one run, sorted."""
    return audit_rows_of(spark, warehouse / "topic_audit", run_id)


def audit_rows_of(spark: Any, table: Path, run_id: str) -> list[tuple[Any, ...]]:
    """(cluster, topic, action, phase, outcome) of one run in the audit table at `table`
    (none when no run has written the table yet)."""
    if not (table / "_delta_log").exists():
        return []
    rows = spark.read.format("delta").load(str(table)).where(f"run_id = '{run_id}'").collect()
    return sorted((r["cluster"] or "", r["topic"] or "", r["action"], r["phase"], r["outcome"])
                  for r in rows)


def plan_counts(spark: Any, warehouse: Path, run_id: str,
                runs: str = "provision_runs") -> list[tuple[Any, ...]]:
    """(kind, cluster, action, outcome, rows) of one run's plan, from its runs row, sorted:
    what a run whose plan changes nothing records instead of per-subject audit rows."""
    row = (spark.read.format("delta").load(str(warehouse / runs))
           .where(f"run_id = '{run_id}'").collect())
    assert len(row) == 1, (run_id, row)
    return sorted((c["kind"], c["cluster"], c["action"], c["outcome"], c["rows"])
                  for c in row[0]["plan_counts"] or [])


def row_count(spark: Any, table: Path) -> int:
    """The rows of the Delta table at `table`; 0 when there is none there (a table of the
    job is made by its first append, the lock log by the first claim; the few made as a
    run starts, `check`'s, may be there and empty)."""
    if not (table / "_delta_log").is_dir():
        return 0
    return int(spark.read.format("delta").load(str(table)).count())


def runs_rows(spark: Any, warehouse: Path) -> dict[str, Any]:
    """The runs table by run id."""
    path = warehouse / "provision_runs"
    if not path.exists():
        return {}
    return {r["run_id"]: r for r in spark.read.format("delta").load(str(path)).collect()}


def broker_state_as(settings: Mapping[str, Any], include_internal: bool = False
                    ) -> dict[str, dict[str, Any]]:
    """Every topic as the broker reports it (id, partitions, replication factor, overrides),
    through a client built from kafka-python `settings` (for a secured cluster, its super
    user: KafkaCluster.client_settings())."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    from provisioning.kafka.codes import topic_id_text

    admin = KafkaAdminClient(**settings)
    try:
        topics = [t for t in admin.describe_topics()
                  if include_internal or not t["is_internal"]]
        names = [t["name"] for t in topics]
        configs = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, n) for n in names]).get("topic", {}) \
            if names else {}
    finally:
        admin.close()
    state = {}
    for t in topics:
        parts = sorted(t["partitions"], key=lambda p: p["partition_index"])
        state[t["name"]] = {
            "topic_id": topic_id_text(t["topic_id"]),
            "partitions": len(parts),
            "replication_factor": len(parts[0]["replica_nodes"]) if parts else None,
            "configs": {k: v["value"] for k, v in configs.get(t["name"], {}).items()
                        if v["config_source"] == "DYNAMIC_TOPIC_CONFIG"},
        }
    return state


def grant(settings: Mapping[str, Any], principal: str,
          acls: Sequence[tuple[str, str, str, Sequence[str]]]) -> None:
    """Create ALLOW ACLs for `principal` as the super user of `settings`.

    acls: (resource type, resource name, pattern type, operations), named as kafka-python's
      enums spell them, e.g. ("TOPIC", "orders.", "PREFIXED", ["CREATE", "DESCRIBE"]).
    """
    from kafka import KafkaAdminClient
    from kafka.admin import (
        ACL,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourceType,
    )

    wanted = [
        ACL(principal, "*", ACLOperation[op], ACLPermissionType.ALLOW,
            ResourcePattern(ResourceType[kind], name, ACLResourcePatternType[pattern]))
        for kind, name, pattern, ops in acls for op in ops
    ]
    admin = KafkaAdminClient(**settings)
    try:
        result = admin.create_acls(wanted)
    finally:
        admin.close()
    if result["failed"]:
        raise RuntimeError(f"creating ACLs failed: {result['failed']}")


def table_json(spark: Any, path: Path) -> list[str]:
    """Every row of the Delta table at `path` as one JSON document (every column)."""
    return [json.dumps(r.asDict(recursive=True), sort_keys=True, default=str)
            for r in spark.read.format("delta").load(str(path)).collect()]


def wait_until(what: str, done: Callable[[], bool], timeout_s: float = 30,
               pause: float = 0.2) -> None:
    """Return once `done()` holds (a broker shows a change a moment after it answered, a
    replica catches up); fail naming `what` when it still does not after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(pause)
