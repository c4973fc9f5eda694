"""The example Airflow DAG, run for real: `airflow dags test` with SparkSubmitOperator, its
tasks thin clients of the session's Spark Connect server (PROVISIONING_SPARK_REMOTE: each
task's spark-submit starts its launcher only, no Spark driver); parsed with and without a
server.

Airflow lives in its own virtualenv (.cache/airflow-venv, or $AIRFLOW_TEST_VENV), never in
the project's: its pins would fight pyspark's. `make setup` builds it once from PyPI (a few
minutes; `make airflow-venv`, from tests/support/airflow-requirements.txt); a test run
without it builds it the same way, and is skipped only when that install cannot reach the
package index, and says so.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from provisioning.conf import ClusterConf, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kinds.quotas.requests import (
    QuotaEntry,
    alter_client_quotas,
    describe_client_quotas,
)
from provisioning.kinds.quotas.schema import QUOTA_MANIFEST
from tests.helpers import (
    INTERPRETED,
    REPO,
    broker_state,
    quick_driver_opts,
    write_conf,
    write_manifest_table,
)

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

DAG_FILE = REPO / "jobs" / "airflow" / "provision_topics_dag.py"
REQUIREMENTS_FILE = REPO / "tests" / "support" / "airflow-requirements.txt"
REQUIREMENTS = tuple(REQUIREMENTS_FILE.read_text().split())
# pip's words for "the package index cannot be reached"; anything else is a real failure.
_NO_NETWORK = ("Failed to establish a new connection", "Network is unreachable",
               "Connection refused", "Temporary failure in name resolution",
               "Name or service not known", "No route to host", "ProxyError")


def airflow_venv() -> Path:
    """The Airflow virtualenv `make airflow-venv` built (the same pins, in the same place),
    or built here when it is missing; skips when PyPI is unreachable."""
    venv = Path(os.environ.get("AIRFLOW_TEST_VENV", REPO / ".cache" / "airflow-venv"))
    marker = venv / ".installed"
    wanted = "\n".join(REQUIREMENTS)
    if marker.exists() and marker.read_text() == wanted:
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    done = subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check",
                           "--retries", "2", *REQUIREMENTS],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        output = done.stdout + done.stderr
        shutil.rmtree(venv, ignore_errors=True)
        if any(word in output for word in _NO_NETWORK):
            pytest.skip("cannot install Airflow: the package index is unreachable from this "
                        f"machine (pip said: {output.strip().splitlines()[-1]})")
        pytest.fail(f"pip install {' '.join(REQUIREMENTS)} failed:\n{output[-4000:]}")
    marker.write_text(wanted)
    return venv


@pytest.fixture(scope="module")
def airflow_python() -> str:
    return str(airflow_venv() / "bin" / "python")


def build_py_files(target: Path) -> Path:
    """The zip of lib/provisioning and schemas that a deployment ships (as spark-submit.sh):
    every file but bytecode (the site's templates too)."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for base, package in ((REPO / "lib", "provisioning"), (REPO, "schemas")):
            for f in sorted((base / package).rglob("*")):
                if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                    z.write(f, f.relative_to(base).as_posix())
    return target


# The Spark settings the DAG gives a task's own driver (before PROVISIONING_SPARK_CONF's).
LOCAL_DRIVER_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.speculation": "false",
}


def airflow_env(tmp: Path, conf: Path, plan_dir: Path) -> dict[str, str]:
    """A private Airflow (sqlite metadata DB under tmp) that runs the DAG against `conf`."""
    dags = tmp / "dags"
    dags.mkdir(exist_ok=True)
    shutil.copy(DAG_FILE, dags / DAG_FILE.name)
    delta_jars = ",".join(sorted(str(p) for p in (REPO / ".cache/jars/delta").glob("*.jar")))
    spark_conf = {
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.sql.session.timeZone": "UTC", **INTERPRETED,
    }
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")},
        "AIRFLOW_HOME": str(tmp / "airflow-home"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "PROVISIONING_HOME": str(REPO),
        "PROVISIONING_CONF": str(conf),
        "PROVISIONING_PY_FILES": str(build_py_files(tmp / "provisioning.zip")),
        "PROVISIONING_PLAN_DIR": str(plan_dir),
        "PROVISIONING_DELTA_JARS": delta_jars,
        "PROVISIONING_SPARK_CONF": json.dumps(spark_conf),
        "PROVISIONING_DRIVER_MEMORY": "1g",
        # The job's driver and workers run the project's interpreter and packages;
        # `spark-submit` on the PATH is the project's pyspark.
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        # The driver JVM as spark-submit.sh starts it (the operator runs pyspark's own).
        "SPARK_SUBMIT_OPTS": quick_driver_opts(),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def airflow(python: str, env: dict[str, str], *args: str, timeout: float = 1200
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-m", "airflow", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


_PARSE = """
import json, sys
from airflow.models.dagbag import DagBag
sys.path.insert(0, sys.argv[1])
import provision_topics_dag as m
bag = DagBag(dag_folder=sys.argv[1])
dag = bag.dags.get("provision_topics")
cases = json.loads(sys.argv[2])


def verdict(path, allowed):
    try:
        return list(m.plan_verdict(path, allowed))
    except ValueError as exc:
        return ["refused", str(exc)]


verdicts = {name: verdict(path, allowed) for name, path, allowed in cases}
print(json.dumps({
    "import_errors": {k: str(v) for k, v in bag.import_errors.items()},
    "dags": sorted(bag.dags),
    "tasks": {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks} if dag else None,
    "operators": {t.task_id: type(t).__name__ for t in dag.tasks} if dag else None,
    "plan_args": dag.get_task("plan").application_args if dag else None,
    "plan_local": [dag.get_task("plan").conf, dag.get_task("plan").jars,
                   dag.get_task("plan").packages] if dag else None,
    "apply_args": dag.get_task("apply").application_args if dag else None,
    "gate_args": dag.get_task("anything_to_apply").op_args if dag else None,
    "site": [dag.get_task("site").application_args,
             getattr(dag.get_task("site").trigger_rule, "value", None)]
            if dag and "site" in dag.task_ids else None,
    "verdicts": verdicts,
}))
"""


def _saved_plan(path: Path, exit_code: int, **sections: list[dict[str, Any]]) -> str:
    """A plan file as `plan --out` writes it (the job's own code), its sections' entries
    given by kind."""
    from provisioning.views.planfile import PlanDocument, plan_meta, save_plan
    from provisioning.views.planfile import sections as plan_sections
    from tests.helpers import VIEWS

    document = PlanDocument.build(plan_sections(VIEWS), "c", ["local"], None, sections)
    save_plan(path, document, plan_meta("r", "plan", "conf.yaml", {}, exit_code,
                                        dt.datetime(2026, 11, 22, tzinfo=dt.UTC)))
    return str(path)


def _change(action: str, **kw: Any) -> dict[str, Any]:
    return {"cluster": "local", "topic": f"t.{action.lower()}", "action": action,
            "violations": [], "row_errors": [], **kw}


def _entity(action: str, **kw: Any) -> dict[str, Any]:
    return {"cluster": "local", "action": action, "state": "present", "violations": [],
            "row_errors": [], **kw}


GRANT = _entity("GRANT", principal="User:app", host="*", resource_type="TOPIC",
                resource_name="orders", pattern_type="LITERAL", operation="READ",
                permission="ALLOW")
QUOTA = _entity("SET", entity_client_id="app", key="producer_byte_rate", value=1024.0)
ROTATION = _entity("UPSERT", user="app", mechanism="SCRAM-SHA-512", iterations=8192,
                   live_iterations=8192, password_version="v2", applied_version="v1",
                   password_env="KAFKA_USER_PASSWORD_APP")
MOVES = [{"partition": 0, "before": [1], "after": [2], "in_flight": False}]


def test_dag_parses_with_real_airflow_and_gates_on_the_plan(airflow_python: str,
                                                            tmp_path: Path) -> None:
    env = airflow_env(tmp_path, tmp_path / "conf.yaml", tmp_path / "plans")
    no_needs = tmp_path / "old.json"
    old = json.loads(Path(_saved_plan(no_needs, 0, topics=[_change("CREATE")])).read_text())
    del old["plan"]["needs"]
    no_needs.write_text(json.dumps(old))
    revoke = {**GRANT, "action": "REVOKE"}
    cases = [
        ("creates", _saved_plan(tmp_path / "a.json", 0, topics=[_change("CREATE")]), []),
        ("failed plan", _saved_plan(tmp_path / "b.json", 1, topics=[_change("CREATE")]), []),
        ("only drift", _saved_plan(tmp_path / "c.json", 0, topics=[_change("DRIFT")]), []),
        ("delete, deletes off", _saved_plan(tmp_path / "d.json", 0,
                                            topics=[_change("DELETE")]), []),
        ("delete, deletes on", str(tmp_path / "d.json"), ["--allow-deletes"]),
        ("alter, alters off", _saved_plan(tmp_path / "f.json", 0, topics=[_change("ALTER")]),
         []),
        ("alter, alters on", str(tmp_path / "f.json"), ["--allow-alter"]),
        ("moves, reassign off", _saved_plan(tmp_path / "g.json", 0, topics=[
            _change("REASSIGN", reassignment=MOVES)]), []),
        ("moves, reassign on", str(tmp_path / "g.json"), ["--allow-reassign"]),
        ("an alter's moves, reassign on", _saved_plan(tmp_path / "h.json", 0, topics=[
            _change("ALTER", reassignment=MOVES)]), ["--allow-reassign"]),
        ("blocked create", _saved_plan(tmp_path / "e.json", 0, topics=[_change(
            "CREATE", violations=[{"policy": "p", "message": "m"}])]), []),
        ("only an ACL grant", _saved_plan(tmp_path / "acl.json", 0, acls=[GRANT]), []),
        ("only a revoke, revokes off", _saved_plan(tmp_path / "revoke.json", 0,
                                                   acls=[revoke]), []),
        ("only a revoke, revokes on", str(tmp_path / "revoke.json"),
         ["--allow-acl-removals"]),
        ("only a quota", _saved_plan(tmp_path / "quota.json", 0, quotas=[QUOTA]), []),
        ("only a SCRAM rotation", _saved_plan(tmp_path / "scram.json", 0, users=[ROTATION]),
         []),
        ("without a needs section", str(no_needs), []),
        ("missing", str(tmp_path / "missing.json"), []),
    ]
    done = subprocess.run([airflow_python, "-c", _PARSE, env["AIRFLOW__CORE__DAGS_FOLDER"],
                           json.dumps(cases)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    plan_file = f"{tmp_path / 'plans'}/provision_topics/{{{{ run_id | replace(':', '-') | " \
                "replace('+', '-') }}.json"

    def digest(name: str) -> str:
        return str(json.loads((tmp_path / name).read_text())["digest"])[:12]

    assert doc == {
        "import_errors": {},
        "dags": ["provision_topics"],
        "tasks": {"plan": ["anything_to_apply"], "anything_to_apply": ["apply"], "apply": []},
        "operators": {"plan": "SparkSubmitOperator", "anything_to_apply": "ShortCircuitOperator",
                      "apply": "SparkSubmitOperator"},
        "plan_args": ["plan", "--conf", str(tmp_path / "conf.yaml"), "--out", plan_file,
                      "--json"],
        "plan_local": [LOCAL_DRIVER_CONF | json.loads(env["PROVISIONING_SPARK_CONF"]),
                       env["PROVISIONING_DELTA_JARS"], None],
        "apply_args": ["apply", "--conf", str(tmp_path / "conf.yaml"), "--plan", plan_file,
                       "--json"],
        "gate_args": [plan_file, []],
        "site": None,
        "verdicts": {
            "creates": [True, f"applying topics: 1 create (plan digest {digest('a.json')})"],
            "failed plan": [False, "the plan exited 1: some topics need a person (see the "
                                   "audit)"],
            "only drift": [False, "nothing to apply"],
            "delete, deletes off": [False, "nothing to apply (changes that take "
                                           "--allow-deletes wait for it)"],
            "delete, deletes on": [True, "applying topics: 1 delete (plan digest "
                                         f"{digest('d.json')})"],
            "alter, alters off": [False, "nothing to apply (changes that take --allow-alter "
                                         "wait for it)"],
            "alter, alters on": [True, "applying topics: 1 alter (plan digest "
                                       f"{digest('f.json')})"],
            "moves, reassign off": [False, "nothing to apply (changes that take "
                                           "--allow-reassign wait for it)"],
            "moves, reassign on": [True, "applying reassign: 1 reassign (plan digest "
                                         f"{digest('g.json')})"],
            "an alter's moves, reassign on": [False, "nothing to apply (changes that take "
                                                     "--allow-alter wait for it)"],
            "blocked create": [False, "nothing to apply"],
            "only an ACL grant": [True, "applying acls: 1 grant (plan digest "
                                        f"{digest('acl.json')})"],
            "only a revoke, revokes off": [False, "nothing to apply (changes that take "
                                                  "--allow-acl-removals wait for it)"],
            "only a revoke, revokes on": [True, "applying acls: 1 revoke (plan digest "
                                                f"{digest('revoke.json')})"],
            "only a quota": [True, f"applying quotas: 1 set (plan digest "
                                   f"{digest('quota.json')})"],
            "only a SCRAM rotation": [True, "applying users: 1 upsert (plan digest "
                                            f"{digest('scram.json')})"],
            "without a needs section": ["refused", f"{no_needs} has no `needs` section: it "
                                        "was written by another release of the job than "
                                        "this DAG's; run the plan again"],
            "missing": [False, f"no saved plan at {tmp_path / 'missing.json'}"],
        },
    }


def test_each_allow_setting_is_an_apply_flag_and_opens_the_gate_for_it(
        airflow_python: str, tmp_path: Path) -> None:
    env = {**airflow_env(tmp_path, tmp_path / "conf.yaml", tmp_path / "plans"),
           "PROVISIONING_ALLOW_REVOKES": "true", "PROVISIONING_ALLOW_QUOTA_REMOVALS": "TRUE",
           "PROVISIONING_ALLOW_USER_REMOVALS": "true", "PROVISIONING_ALLOW_DELETES": "false"}
    done = subprocess.run([airflow_python, "-c", _PARSE, env["AIRFLOW__CORE__DAGS_FOLDER"],
                           "[]"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    plan_file = f"{tmp_path / 'plans'}/provision_topics/{{{{ run_id | replace(':', '-') | " \
                "replace('+', '-') }}.json"
    # PROVISIONING_ALLOW_REVOKES, the setting's earlier name, is --allow-acl-removals.
    flags = ["--allow-acl-removals", "--allow-quota-removals", "--allow-user-removals"]
    assert (doc["apply_args"], doc["gate_args"]) == (
        ["apply", "--conf", str(tmp_path / "conf.yaml"), "--plan", plan_file, "--json",
         *flags], [plan_file, flags])


@pytest.mark.parametrize("remote", ["sc://127.0.0.1:15002", "conf"])
def test_on_a_connect_server_the_tasks_pass_it_and_no_local_driver_settings(
        airflow_python: str, tmp_path: Path, remote: str) -> None:
    env = {**airflow_env(tmp_path, tmp_path / "conf.yaml", tmp_path / "plans"),
           "PROVISIONING_SPARK_REMOTE": remote}
    done = subprocess.run([airflow_python, "-c", _PARSE, env["AIRFLOW__CORE__DAGS_FOLDER"],
                           "[]"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    plan_file = f"{tmp_path / 'plans'}/provision_topics/{{{{ run_id | replace(':', '-') | " \
                "replace('+', '-') }}.json"
    given = [] if remote == "conf" else ["--remote", remote]
    assert (doc["import_errors"], doc["plan_args"], doc["apply_args"], doc["plan_local"]) == (
        {},
        ["plan", "--conf", str(tmp_path / "conf.yaml"), "--out", plan_file, "--json", *given],
        ["apply", "--conf", str(tmp_path / "conf.yaml"), "--plan", plan_file, "--json",
         *given],
        [None, None, None])


def test_the_site_task_is_last_and_only_when_a_site_dir_is_set(airflow_python: str,
                                                              tmp_path: Path) -> None:
    env = {**airflow_env(tmp_path, tmp_path / "conf.yaml", tmp_path / "plans"),
           "PROVISIONING_SITE_DIR": str(tmp_path / "site")}
    done = subprocess.run([airflow_python, "-c", _PARSE, env["AIRFLOW__CORE__DAGS_FOLDER"],
                           "[]"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    assert (doc["tasks"], doc["operators"]["site"], doc["site"]) == (
        {"plan": ["anything_to_apply"], "anything_to_apply": ["apply"], "apply": ["site"],
         "site": []},
        "SparkSubmitOperator",
        [["report", "--conf", str(tmp_path / "conf.yaml"), "--site", str(tmp_path / "site"),
          "--json"], "none_failed"])


def _state(bootstrap: str) -> dict[str, dict[str, Any]]:
    return {name: {k: v for k, v in spec.items() if k != "topic_id"}
            for name, spec in broker_state(bootstrap).items() if name.startswith("af.")}


def _runs(spark: Any, warehouse: Path) -> list[tuple[Any, ...]]:
    rows = spark.read.format("delta").load(str(warehouse / "provision_runs")) \
        .orderBy("started_at").collect()
    return [(r["run_id"], r["command"], r["status"], r["exit_code"],
             json.loads(r["arguments"])) for r in rows]


def _audit(spark: Any, warehouse: Path, run_id: str) -> list[tuple[Any, ...]]:
    rows = spark.read.format("delta").load(str(warehouse / "topic_audit")) \
        .where(f"run_id = '{run_id}'").collect()
    return sorted((r["topic"], r["action"], r["phase"], r["outcome"], r["requested_partitions"],
                   r["result_partitions"]) for r in rows)


def test_dag_runs_plan_then_apply_and_stops_on_a_failed_plan(
        airflow_python: str, kafka: Any, spark: Any, connect_server: Any,
        tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    manifest = [
        {"cluster": "local", "topic": "af.orders", "partitions": 3, "replication_factor": 1,
         "configs": {"retention.ms": "3600000"}, "owner": "orders-team"},
        {"cluster": "local", "topic": "af.events", "owner": "events-team"},
    ]
    write_manifest_table(spark, warehouse / "desired_topics", manifest)
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse, extra={
        "policies": {"create": [{"name": "partitions_range", "max": 8}]}})
    plan_dir = tmp_path / "plans"
    site = tmp_path / "site"
    env = {**airflow_env(tmp_path, conf, plan_dir), "PROVISIONING_SITE_DIR": str(site),
           "PROVISIONING_SPARK_REMOTE": connect_server.address}
    assert _state(kafka.bootstrap_servers) == {}

    migrated = airflow(airflow_python, env, "db", "migrate")
    assert migrated.returncode == 0, (migrated.stdout + migrated.stderr)[-4000:]

    # First DAG run: the plan finds two creates, the gate opens, the apply makes them.
    first = airflow(airflow_python, env, "dags", "test", "provision_topics")
    assert first.returncode == 0, (first.stdout + first.stderr)[-6000:]
    # Each of the three tasks ran on the server, its spark-submit's local master unused.
    assert (first.stdout + first.stderr).count(
        "the master local[2] that spark-submit gave is not used") == 3
    assert _state(kafka.bootstrap_servers) == {
        "af.orders": {"partitions": 3, "replication_factor": 1,
                      "configs": {"retention.ms": "3600000"}},
        "af.events": {"partitions": 1, "replication_factor": 1, "configs": {}},
    }
    runs = _runs(spark, warehouse)
    assert [(c, s, e) for _, c, s, e, _ in runs] == [("plan", "succeeded", 0),
                                                     ("apply", "succeeded", 0)]
    (plan_id, *_, plan_args), (apply_id, *_, apply_args) = runs
    # The site task ran last: a page for each run.
    from provisioning.views.site.html import run_file

    assert sorted(p.relative_to(site).as_posix() for p in (site / "runs").glob("*")) == \
        sorted(["runs/index.html", run_file(plan_id), run_file(apply_id)])
    first_site = {p: p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}
    saved = sorted((plan_dir / "provision_topics").glob("*.json"))
    assert [str(p) for p in saved] == [plan_args["out"]] == [apply_args["plan"]]
    plan_doc = json.loads(saved[0].read_text())
    assert (plan_doc["meta"]["run_id"], plan_doc["meta"]["exit_code"]) == (plan_id, 0)
    assert [(c["topic"], c["action"]) for c in plan_doc["plan"]["changes"]] == [
        ("af.events", "CREATE"), ("af.orders", "CREATE")]
    assert _audit(spark, warehouse, plan_id) == [
        ("af.events", "CREATE", "plan", "planned", None, None),
        ("af.events", "CREATE", "validate", "validated", None, 1),
        ("af.orders", "CREATE", "plan", "planned", 3, None),
        ("af.orders", "CREATE", "validate", "validated", 3, 3),
    ]
    assert _audit(spark, warehouse, apply_id) == [
        ("af.events", "CREATE", "apply", "created", None, 1),
        ("af.events", "CREATE", "plan", "planned", None, None),
        ("af.events", "CREATE", "validate", "validated", None, 1),
        ("af.events", "CREATE", "verify", "created", None, 1),
        ("af.orders", "CREATE", "apply", "created", 3, 3),
        ("af.orders", "CREATE", "plan", "planned", 3, None),
        ("af.orders", "CREATE", "validate", "validated", 3, 3),
        ("af.orders", "CREATE", "verify", "created", 3, 3),
    ]

    # Second DAG run: one more topic, and one the policy blocks. The plan exits 1,
    # its task fails, and the apply never runs: the valid new topic is not created.
    write_manifest_table(spark, warehouse / "desired_topics", [
        *manifest,
        {"cluster": "local", "topic": "af.later", "partitions": 2},
        {"cluster": "local", "topic": "af.huge", "partitions": 64},
    ])
    second = airflow(airflow_python, env, "dags", "test", "provision_topics")
    assert second.returncode != 0
    assert "DagRun failed" in second.stdout + second.stderr
    # No site after a failed plan: the site is as the first DAG run left it.
    assert {p: p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()} == first_site
    assert _state(kafka.bootstrap_servers) == {
        "af.orders": {"partitions": 3, "replication_factor": 1,
                      "configs": {"retention.ms": "3600000"}},
        "af.events": {"partitions": 1, "replication_factor": 1, "configs": {}},
    }
    runs = _runs(spark, warehouse)
    assert [(c, s, e) for _, c, s, e, _ in runs] == [
        ("plan", "succeeded", 0), ("apply", "succeeded", 0),
        ("plan", "completed_with_errors", 1)]
    assert _audit(spark, warehouse, runs[2][0]) == [
        ("af.events", "NOOP", "plan", "already_present", None, None),
        ("af.huge", "CREATE", "plan", "blocked", 64, None),
        ("af.later", "CREATE", "plan", "planned", 2, None),
        ("af.later", "CREATE", "validate", "validated", 2, 2),
        ("af.orders", "NOOP", "plan", "already_present", 3, None),
    ]

    # Third DAG run: the topics as the first run made them, and one client quota. The
    # plan's only change is the quota: the gate opens and the apply sets it.
    write_manifest_table(spark, warehouse / "desired_topics", manifest)
    quotas = warehouse / "desired_quotas"
    spark.createDataFrame([("local", None, "af-client", None, {"producer_byte_rate": 2048.0},
                            None, "af-team", None)], QUOTA_MANIFEST
                          ).write.format("delta").save(str(quotas))
    tables = yaml.safe_load(conf.read_text())["tables"]
    with_quotas = write_conf(tmp_path / "quotas.yaml", kafka.bootstrap_servers, warehouse,
                             extra={"tables": {**tables, "quota_manifests": [str(quotas)]}})
    try:
        third = airflow(airflow_python, {**env, "PROVISIONING_CONF": str(with_quotas)},
                        "dags", "test", "provision_topics")
        assert third.returncode == 0, (third.stdout + third.stderr)[-6000:]
        assert "anything_to_apply: applying quotas: 1 set (plan digest" in \
            third.stdout + third.stderr
        runs = _runs(spark, warehouse)
        assert [(c, s, e) for _, c, s, e, _ in runs[3:]] == [("plan", "succeeded", 0),
                                                             ("apply", "succeeded", 0)]
        third_plan = json.loads(Path(runs[3][4]["out"]).read_text())
        assert third_plan["plan"]["needs"] == [
            {"kind": "quotas", "action": "SET", "flags": [], "changes": 1}]
        assert _client_quotas(kafka.bootstrap_servers) == {
            "af-client": {"producer_byte_rate": 2048.0}}
    finally:
        _clear_client_quotas(kafka.bootstrap_servers)


def _client_quotas(bootstrap: str) -> dict[str | None, dict[str, float]]:
    """The broker's client quotas of client ids under `af-`, by client id."""
    with ClusterAdmin(ClusterConf("local", bootstrap), None, KafkaConf()) as admin:
        return {e.get("client-id"): dict(q) for e, q in describe_client_quotas(admin).items()
                if (e.get("client-id") or "").startswith("af-")}


def _clear_client_quotas(bootstrap: str) -> None:
    with ClusterAdmin(ClusterConf("local", bootstrap), None, KafkaConf()) as admin:
        found = {e: q for e, q in describe_client_quotas(admin).items()
                 if (e.get("client-id") or "").startswith("af-")}
        alter_client_quotas(admin, [QuotaEntry(e, dict.fromkeys(q)) for e, q in found.items()],
                            False, 100)
