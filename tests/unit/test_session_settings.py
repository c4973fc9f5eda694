"""The session settings every run needs are written once (provisioning.session) and every
way of starting the job uses exactly them."""

from __future__ import annotations

import ast
import subprocess

from provisioning.session import SESSION_SETTINGS, submit_arguments
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
    # spark-submit.sh asks this same function, from a Python that need not have pyspark.
    code = ("import sys; sys.modules['pyspark'] = None; sys.path.insert(0, 'lib'); "
            "from provisioning.session import submit_arguments; "
            "print(chr(10).join(submit_arguments()))")
    out = subprocess.run(["python3", "-c", code], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == submit_arguments()
    assert out == [part for k, v in SESSION_SETTINGS.items() for part in ("--conf", f"{k}={v}")]
