"""The session settings every run needs are written once (provisioning.session) and every
way of starting the job uses exactly them."""

from __future__ import annotations

import ast
import subprocess
import sys

from provisioning.session import (
    SESSION_SETTINGS,
    WORKLOAD_SETTINGS,
    runtime_settings,
    submit_arguments,
)
from tests.helpers import REPO


def test_the_airflow_dag_passes_the_session_settings() -> None:
    tree = ast.parse((REPO / "jobs" / "airflow" / "provision_topics_dag.py").read_text())
    conf = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "SPARK_CONF" for t in node.targets))
    assert isinstance(conf, ast.Dict)
    literal = {ast.literal_eval(k): ast.literal_eval(v)
               for k, v in zip(conf.keys, conf.values, strict=True) if k is not None}
    assert literal == SESSION_SETTINGS


def test_spark_submit_sh_reads_them_without_spark() -> None:
    # spark-submit.sh asks this same function with the job's Python (its venv, which holds the
    # job's dependencies), before Spark is started: pyspark must not be needed for it.
    code = ("import sys; sys.modules['pyspark'] = None; sys.path.insert(0, 'lib'); "
            "from provisioning.session import submit_arguments; "
            "print(chr(10).join(submit_arguments()))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == submit_arguments()
    assert out == [part for k, v in {**SESSION_SETTINGS, **WORKLOAD_SETTINGS}.items()
                   for part in ("--conf", f"{k}={v}")]


def test_the_workload_settings_are_few_partitions_and_the_confs_settings_override_them(
        ) -> None:
    assert WORKLOAD_SETTINGS == {
        "spark.sql.shuffle.partitions": "4",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        "spark.sql.icu.caseMappings.enabled": "false",
    }
    assert runtime_settings(None) == WORKLOAD_SETTINGS
    assert runtime_settings({"spark.sql.shuffle.partitions": "16",
                             "spark.sql.session.timeZone": "UTC"}) == {
        **WORKLOAD_SETTINGS, "spark.sql.shuffle.partitions": "16",
        "spark.sql.session.timeZone": "UTC"}


def test_spark_submit_sh_passes_no_partition_setting_of_its_own() -> None:
    # One list: the job's settings come from provisioning.session, for every master.
    script = (REPO / "spark-submit.sh").read_text()
    assert [key for key in WORKLOAD_SETTINGS if key in script] == []
