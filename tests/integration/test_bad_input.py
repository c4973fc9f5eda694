"""The bad-input corpus through the real CLI: each bad row named and audited, the rest go on."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka import KafkaAdminClient

from tests.helpers import Completed, broker_state, write_conf, write_manifest_table
from tests.support.brokers import reset

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

CORPUS = yaml.safe_load(
    (Path(__file__).resolve().parents[1] / "data" / "bad_manifest_rows.yaml").read_text())
GOOD = [{"cluster": "local", "topic": "good.a", "partitions": 3},
        {"cluster": "local", "topic": "good.b", "partitions": 1, "replication_factor": 1,
         "configs": {"retention.ms": "60000"}}]
NAMES = {"LONG249": "l" * 249, "LONG250": "l" * 250}


def _row(case: dict[str, Any]) -> dict[str, Any]:
    row = dict(case["row"])
    row["topic"] = NAMES.get(row["topic"], row["topic"])
    if "replica_assignment" in row:
        row["replica_assignment"] = {int(k): v for k, v in row["replica_assignment"].items()}
    return row


@pytest.fixture
def broker(kafka: Any) -> Iterator[Any]:
    """The session's plain broker, emptied: the broker state asserted is its whole state."""
    reset(kafka)
    yield kafka
    reset(kafka)


def test_bad_rows_are_rejected_by_name_and_the_rest_proceed(broker: Any, spark: Any,
                                                            cli: Callable[..., Completed],
                                                            tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    m1, m2 = warehouse / "M1", warehouse / "M2"
    write_manifest_table(spark, m1, [*GOOD, *[_row(c) for c in CORPUS if c.get("table") != 2]])
    write_manifest_table(spark, m2, [_row(c) for c in CORPUS if c.get("table") == 2])

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    admin.create_topics({"exist_collide": {"num_partitions": 1, "replication_factor": 1}},
                        wait_for_metadata=True)
    admin.close()
    conf = write_conf(tmp_path / "conf.yaml", broker.bootstrap_servers, warehouse,
                      manifests=[m1, m2])

    done = cli(["apply", "--conf", str(conf), "--json"])
    assert done.returncode == 1, done.output[-4000:]
    run_id = done.json()["run_id"]
    state = broker_state(broker.bootstrap_servers)

    audit = (spark.read.format("delta").load(str(warehouse / "topic_audit"))
             .where(f"run_id = '{run_id}'").collect())
    by_key: dict[tuple[Any, Any], list[Any]] = {}
    for r in audit:
        by_key.setdefault((r["topic"], r["phase"]), []).append(r)

    problems = []
    for case in CORPUS:
        row = _row(case)
        found = by_key.get((row["topic"], case["phase"]), [])
        if row["cluster"] is None:
            found = [r for r in found if r["cluster"] is None]
        if not found:
            problems.append(f"{case['case']}: no {case['phase']} row")
            continue
        for r in found:
            if r["outcome"] != case["outcome"]:
                problems.append(f"{case['case']}: outcome {r['outcome']} != {case['outcome']}")
            expected = case["error"]
            message = r["error_message"]
            if isinstance(expected, str):
                expected = expected.replace("M1@", f"{m1}@").replace("M2@", f"{m2}@")
                if message != expected:
                    problems.append(f"{case['case']}: message {message!r} != {expected!r}")
            elif isinstance(expected, list):
                missing = [f for f in expected if f not in (message or "")]
                if missing:
                    problems.append(f"{case['case']}: message {message!r} lacks {missing}")
            elif case["outcome"] == "created" and r["error_name"] != "NONE":
                problems.append(f"{case['case']}: {r['error_name']}")
        # every bad row names its source table
        if case["outcome"] != "created" and any(r["source_table"] not in (str(m1), str(m2))
                                                for r in found):
            problems.append(f"{case['case']}: source table not recorded")
    assert problems == []

    # nothing bad reached the broker; the good rows and the legal 249-character name did
    assert sorted(state) == sorted(["exist_collide", "good.a", "good.b", NAMES["LONG249"]])
    assert (state["good.a"]["partitions"], state["good.b"]["configs"]) == (
        3, {"retention.ms": "60000"})


def test_unknown_option_and_unknown_cluster_exit_2(cli: Callable[..., Completed],
                                                   tmp_path: Path) -> None:
    conf = write_conf(tmp_path / "conf.yaml", "127.0.0.1:9", tmp_path / "wh")
    unknown_option = cli(["apply", "--conf", str(conf), "--allow-delete"])
    assert unknown_option.returncode == 2
    assert ("Error: No such option '--allow-delete'. (Did you mean one of: '--allow-alter', "
            "'--allow-deletes', '--allow-revokes'?)" in unknown_option.output)
    unknown_cluster = cli(["plan", "--conf", str(conf), "--cluster", "prod"])
    assert unknown_cluster.returncode == 2
    assert "error: unknown cluster(s) prod; the conf defines local" in unknown_cluster.output


def test_an_unexpected_error_exits_5_in_one_line_and_frees_the_lock(
        kafka: Any, spark: Any, cli: Callable[..., Completed], tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    write_manifest_table(spark, warehouse / "desired_topics",
                         [{"cluster": "local", "topic": "unexpected.a", "partitions": 1}])
    # An audit table whose columns are not the audit's: the first audit commit fails in a
    # way the job does not anticipate.
    spark.createDataFrame([(1,)], "topic int").write.format("delta").save(
        str(warehouse / "topic_audit"))
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse)

    done = cli(["apply", "--conf", str(conf), "--topics", "unexpected.*"])
    assert done.returncode == 5, done.output[-4000:]
    errors = [line for line in done.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.output[-4000:]
    assert errors[0].startswith("error: unexpected error: AnalysisException: ")
    assert "Traceback" not in done.output
    assert "unexpected.a" not in broker_state(kafka.bootstrap_servers)
    runs = [r for r in spark.read.format("delta").load(str(warehouse / "provision_runs"))
            .collect()]
    assert [(r["command"], r["status"], r["exit_code"], r["message"]) for r in runs] == [
        ("apply", "failed", 5, errors[0][len("error: "):])]
    locks = (spark.read.format("delta").load(str(warehouse / "provision_runs_locks"))
             .orderBy("_metadata.row_commit_version").collect())
    assert [(r["name"], r["run_id"], r["event"]) for r in locks] == [
        ("local", runs[0]["run_id"], "claim"), ("local", runs[0]["run_id"], "release")]
