"""One command skeleton: every command maps every error to its exit code and, with --json,
prints one JSON document as the last line of its output on every path; a runs row that
cannot be written is an error of its own (exit 5), never a traceback. The CLI runs in this
process, on the tests' session (the same commands spark-submit.sh runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_cli_in_process, write_conf

pytestmark = [pytest.mark.integration]


def _doc(done: Any) -> dict[str, Any]:
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_unreachable_cluster_prints_the_json_document_and_exits_3(
        spark: Any, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    conf = write_conf(tmp_path / "conf.yaml", "127.0.0.1:9", warehouse,
                      extra={"kafka": {"request_timeout_ms": 3000}})
    done = run_cli_in_process(["snapshot", "--conf", str(conf), "--json"])
    assert done.returncode == 3
    doc = _doc(done)
    assert (doc["command"], doc["exit_code"]) == ("snapshot", 3)
    assert doc["error"].startswith("cluster local at 127.0.0.1:9 is unreachable")
    runs = spark.read.format("delta").load(str(warehouse / "provision_runs")).collect()
    assert [(r["run_id"], r["status"], r["exit_code"]) for r in runs] == [
        (doc["run_id"], "failed", 3)]


def test_a_bad_conf_prints_the_json_document_and_exits_2(tmp_path: Path) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text("clusters: {}\n")
    for command in (["snapshot"], ["plan"], ["apply"], ["import", "--table", "t"],
                    ["maintain"], ["report"]):
        done = run_cli_in_process([*command, "--conf", str(conf), "--json"])
        assert done.returncode == 2, command
        doc = _doc(done)
        assert (doc["command"], doc["exit_code"], doc["run_id"]) == (command[0], 2, None)
        assert doc["error"].startswith(f"invalid conf {conf}: ")


def test_snapshot_refuses_a_topic_glob(kafka: Any, tmp_path: Path) -> None:
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, tmp_path / "wh")
    done = run_cli_in_process(["snapshot", "--conf", str(conf), "--topics", "a*", "--json"])
    assert done.returncode == 2
    assert _doc(done)["error"] == (
        "snapshot records every topic of each cluster: --topics is refused (narrow the views "
        "instead: report --unmanaged --topics)")


def test_a_runs_row_that_cannot_be_written_exits_5_with_its_reason(
        kafka: Any, spark: Any, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the runs table's directory would be\n")
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse, extra={
        "tables": {"manifests": [str(warehouse / "desired_topics")],
                   "audit": str(warehouse / "topic_audit"),
                   "runs": str(blocker / "provision_runs"),
                   "snapshots": str(warehouse / "topic_snapshots"),
                   "locks": str(warehouse / "locks")}})
    for command in (["snapshot"], ["import", "--table", str(warehouse / "imported")],
                    ["maintain"]):
        done = run_cli_in_process([*command, "--conf", str(conf), "--json"])
        assert done.returncode == 5, (command, done.output[-3000:])
        assert _doc(done)["error"].startswith(
            f"could not record the run in {blocker / 'provision_runs'}: "), command
    # the commands' own work was done: the snapshot and the import landed
    for table in ("topic_snapshots", "imported"):
        first = spark.sql(f"DESCRIBE HISTORY '{warehouse / table}'").where("version = 0")
        assert first.first()["operation"] == "WRITE", table


def test_report_and_load_manifest_map_errors_and_print_json(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from provisioning.cli.load_manifest import main as load_manifest

    conf = write_conf(tmp_path / "conf.yaml", "127.0.0.1:9", tmp_path / "wh")
    done = run_cli_in_process(["report", "--conf", str(conf), "--json"])
    assert done.returncode == 2
    assert _doc(done)["error"] == f"no runs recorded yet: {tmp_path / 'wh' / 'provision_runs'} " \
                                  "does not exist"
    bad = tmp_path / "manifest.yaml"
    bad.write_text("- {cluster: local, topic: t, partitions: six}\n")
    loaded = CliRunner().invoke(load_manifest, ["--source", str(bad), "--table",
                                                str(tmp_path / "m"), "--json"])
    assert loaded.exit_code == 2
    doc = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert (doc["command"], doc["exit_code"]) == ("load_manifest", 2)
    assert "row 0 ('t').partitions: expected an integer, got 'six'" in doc["error"]
