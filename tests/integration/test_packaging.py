"""What the project ships: spark-submit.sh's zips (the package, the schemas, kafka-python and
tenacity, which executors on a stock PySpark lack; nothing of the dev tooling), and the
wheel, whose `provision-topics` runs the job from a plain Python process as a Spark Connect
client."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO, broker_state, run_cli, write_conf, write_manifest_table


def _files(root: Path, base: Path) -> list[str]:
    return sorted(p.relative_to(base).as_posix() for p in root.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def _dev_tooling(name: str) -> bool:
    """A file of the dev tooling (dev/: the local broker and Connect server) or the tests."""
    return (name.startswith(("dev/", "tests/"))
            or Path(name).stem in ("devkafka", "sparkconnect"))


def test_the_shipped_zips_hold_the_package_the_schemas_kafka_python_and_tenacity() -> None:
    import kafka
    import tenacity

    done = run_cli([], job="tests/support/list_package.py")
    assert done.returncode == 0, done.output[-3000:]
    zips = json.loads(done.stdout.strip().splitlines()[-1])
    # spark-submit.sh's zips, beside pyspark's own (pyspark.zip, py4j) on the driver's path
    shipped = {Path(path).name.split("-")[0]: names for path, names in zips.items()
               if Path(path).parent.name.startswith("topic-provisioning-artifacts-")}
    kafka_root = Path(kafka.__file__).parent
    tenacity_root = Path(tenacity.__file__).parent
    assert shipped == {
        "provisioning": _files(REPO / "lib" / "provisioning", REPO / "lib"),
        "schemas": _files(REPO / "schemas", REPO),
        "kafka": _files(kafka_root, kafka_root.parent),
        "tenacity": _files(tenacity_root, tenacity_root.parent),
    }
    assert not [n for names in shipped.values() for n in names if _dev_tooling(n)]


def test_the_site_renders_from_the_zip_spark_submit_ships() -> None:
    from provisioning.session import package_zip
    from provisioning.views.site import render_site
    from tests.unit.test_site import hostile_data

    # The package imported from its zip, as a driver started with --py-files imports it:
    # the templates are read from the zip.
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); import provisioning; "
              "assert provisioning.__file__.startswith(sys.argv[1]), provisioning.__file__; "
              "from provisioning.views.site import render_site; "
              "from tests.unit.test_site import hostile_data; "
              "print(json.dumps(render_site(hostile_data())))")
    done = subprocess.run([sys.executable, "-c", script, str(package_zip("provisioning"))],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == render_site(hostile_data())


@pytest.mark.parametrize(("user", "expected"), [
    # C1 alone sizes the code cache at 48 MiB, which a run's generated classes can fill
    # ("Out of space in CodeCache for adapters" fails the run): spark-submit.sh keeps 240.
    ("", ("1", str(240 * 2**20), "true", "false")),
    # What the user's SPARK_SUBMIT_OPTS sets stays theirs (two collectors would not start).
    ("-XX:ReservedCodeCacheSize=300m -XX:+UseSerialGC",
     ("1", str(300 * 2**20), "false", "true")),
], ids=["default", "user-options"])
def test_the_quick_driver_jit_keeps_the_tiered_code_cache_and_the_users_options(
        user: str, expected: tuple[str, ...]) -> None:
    done = run_cli([], job="tests/support/driver_jvm.py", env={"SPARK_SUBMIT_OPTS": user})
    assert done.returncode == 0, done.output[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == dict(zip(
        ("TieredStopAtLevel", "ReservedCodeCacheSize", "UseParallelGC", "UseSerialGC"),
        expected, strict=True))


def _wheel(dist: Path) -> Path:
    """The project's wheel, built into `dist`."""
    # setuptools builds in the checkout's own build/ directory: the two lanes of make test
    # each build the wheel, one at a time.
    lock_file = REPO / ".cache" / "wheel-build.lock"
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # setuptools copies the package into build/lib and never removes from it: a module
        # removed or moved since an earlier build would still be in the wheel.
        shutil.rmtree(REPO / "build" / "lib", ignore_errors=True)
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                                str(dist), str(REPO)], capture_output=True, text=True,
                               timeout=300)
    assert built.returncode == 0, (built.stdout + built.stderr)[-4000:]
    (wheel,) = dist.glob("topic_provisioning-*.whl")
    return wheel


def test_the_wheel_holds_the_package_and_the_schemas_and_no_dev_tooling(
        tmp_path: Path) -> None:
    names = zipfile.ZipFile(_wheel(tmp_path / "dist")).namelist()
    # schemas/manifest.schema.json is for editors (make conf-schema writes it); the job
    # never reads it.
    assert sorted(n for n in names if ".dist-info/" not in n) == sorted([
        *_files(REPO / "lib" / "provisioning", REPO / "lib"),
        *(n for n in _files(REPO / "schemas", REPO) if n.endswith(".py"))])
    assert [n for n in names if _dev_tooling(n)] == []


def _wheel_venv(work: Path) -> Path:
    """A venv holding the project's wheel and nothing else of this checkout: its
    dependencies come from the test venv's site-packages (a path file), the project's own
    package from the wheel."""
    wheel = _wheel(work / "dist")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                    "install", "-q", "--no-deps", str(wheel)], check=True,
                   capture_output=True, text=True, timeout=300)
    return venv


def test_the_wheel_runs_plan_from_a_plain_python_process_against_connect(
        kafka: Any, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    venv = _wheel_venv(tmp_path)
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import provisioning, schemas; print(provisioning.__file__); "
                            "print(schemas.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path)
    assert [Path(p).is_relative_to(venv) for p in where.stdout.split()] == [True, True]

    warehouse = tmp_path / "wh"
    write_manifest_table(spark, warehouse / "desired_topics",
                         [{"cluster": "local", "topic": "wheel.a", "partitions": 2}])
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
    env["SPARK_REMOTE"] = connect_server.address
    done = subprocess.run([str(venv / "bin" / "provision-topics"), "plan", "--conf",
                           str(conf), "--topics", "wheel.*", "--json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    assert (doc["command"], doc["counts"], doc["exit_code"]) == ("plan", {"validated": 1}, 0)
    assert "wheel.a" not in broker_state(kafka.bootstrap_servers)
    audit = spark.read.format("delta").load(str(warehouse / "topic_audit")).collect()
    assert sorted((r["topic"], r["phase"], r["outcome"], r["result_partitions"])
                  for r in audit) == [("wheel.a", "plan", "planned", None),
                                      ("wheel.a", "validate", "validated", 2)]

    # In a process that goes on (an Airflow PythonOperator): two commands, their exit codes
    # returned, not raised.
    script = ("import sys; from provisioning.cli import run; "
              f"args = ['plan', '--conf', {str(conf)!r}, '--topics', 'wheel.*']; "
              "codes = [run(args), run(args + ['--cluster', 'nope'])]; "
              "print('codes', codes); sys.stdout.flush()")
    inline = subprocess.run([str(venv / "bin" / "python"), "-c", script], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=600)
    assert inline.returncode == 0, inline.stdout[-2000:] + inline.stderr[-3000:]
    assert inline.stdout.strip().splitlines()[-1] == "codes [0, 2]"
    runs = spark.read.format("delta").load(str(warehouse / "provision_runs")).collect()
    assert sorted((r["command"], r["status"], r["exit_code"]) for r in runs) == [
        ("plan", "succeeded", 0), ("plan", "succeeded", 0)]


def _recording_java(work: Path) -> tuple[dict[str, str], Path]:
    """An environment whose JVM is a stand-in `java` that records each start in a file and
    fails: a run that needs a JVM exits non-zero and leaves the record."""
    started = work / "java-started"
    java = work / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f'#!/bin/sh\necho "$@" >> {started}\nexit 97\n')
    java.chmod(0o755)
    return {"JAVA_HOME": str(java.parent.parent)}, started


@pytest.mark.parametrize(("job", "args", "code", "stdout_starts", "stderr_ends"), [
    ("jobs/provision_topics.py", ["--help"], 0,
     "Usage: provision_topics.py [OPTIONS] COMMAND [ARGS]...\n", ""),
    ("jobs/provision_topics.py", ["apply", "--help"], 0,
     "Usage: provision_topics.py apply [OPTIONS]\n", ""),
    ("jobs/provision_topics.py", ["--version"], 0, "provision_topics.py 0.1.0\n", ""),
    ("jobs/provision_topics.py", ["apply", "--allow-deletes"], 2, "",
     "Error: Missing option '--conf'.\n"),
    ("jobs/provision_topics.py", ["aply", "--conf", "conf/local.yaml"], 2, "",
     "Error: No such command 'aply'. Did you mean 'apply'?\n"),
    ("jobs/load_manifest.py", ["--help"], 0, "Usage: load_manifest.py [OPTIONS]\n", ""),
], ids=["help", "subcommand-help", "version", "missing-option", "no-such-command",
        "load-manifest-help"])
def test_help_the_version_and_usage_errors_answer_without_a_jvm(
        tmp_path: Path, job: str, args: list[str], code: int, stdout_starts: str,
        stderr_ends: str) -> None:
    env, started = _recording_java(tmp_path)
    done = run_cli(args, job=job, env=env, timeout=60)
    assert (done.returncode, started.exists()) == (code, False), done.output[-3000:]
    assert done.stdout.startswith(stdout_starts) if stdout_starts else done.stdout == ""
    assert done.stderr.endswith(stderr_ends) if stderr_ends else done.stderr == ""


def test_arguments_that_name_a_run_start_the_jvm(tmp_path: Path) -> None:
    # The stand-in JVM above does see a run: without it, the test above could not fail.
    env, started = _recording_java(tmp_path)
    done = run_cli(["apply", "--conf", "conf/local.yaml"], env=env, timeout=60)
    assert done.returncode != 0, done.output[-3000:]
    # spark-submit's first JVM: Spark's launcher, which builds the driver's command line
    assert "org.apache.spark.launcher.Main org.apache.spark.deploy.SparkSubmit" in \
        started.read_text()


def test_the_wheels_command_answers_help_the_version_and_usage_errors_without_a_jvm(
        tmp_path: Path) -> None:
    venv = _wheel_venv(tmp_path)
    env, started = _recording_java(tmp_path)
    env = {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")},
           **env}
    command = str(venv / "bin" / "provision-topics")
    answers = [subprocess.run([command, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=60)
               for args in (["--version"], ["plan", "--help"], ["plan"])]
    assert [(a.returncode, a.stdout.splitlines()[:1], a.stderr.splitlines()[-1:])
            for a in answers] == [
        (0, ["provision-topics 0.1.0"], []),
        (0, ["Usage: provision-topics plan [OPTIONS]"], []),
        (2, [], ["Error: Missing option '--conf'."]),
    ]
    assert not started.exists()
