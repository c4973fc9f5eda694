"""`--profile` through spark-submit.sh, classic and Spark Connect: a run tells, per step and in
all, its wall time, the Spark work it ran, the Delta commits it made (by table), the Kafka
requests it sent (by API, the admin tasks' included) and its requests to a Spark Connect
server (by method), in its JSON document and printed."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from tests.helpers import run_cli, write_conf, write_manifest_table

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

PREFIX = "prof."


@pytest.fixture(params=["classic", pytest.param("connect", marks=pytest.mark.lane("connect"))])
def mode(request: pytest.FixtureRequest) -> str:
    """Both launchers: a classic driver profiles from its own event log, a Connect client
    from its operations' tags."""
    return str(request.param)


@pytest.fixture
def cli(mode: str, request: pytest.FixtureRequest) -> Any:
    remote = request.getfixturevalue("connect_server").address if mode == "connect" else None
    return functools.partial(run_cli, remote=remote)


def _named(entries: list[dict[str, Any]]) -> dict[str, int]:
    return {e["name"]: e["count"] for e in entries}


def _where(profile: dict[str, Any], what: str, name: str) -> dict[str, int]:
    """step -> how many `name` commits or requests it holds (`what`: commits, requests)."""
    return {s["step"]: n for s in profile["steps"]
            if (n := _named(s[what]).get(name, 0))}


def test_a_profile_counts_each_steps_spark_work_commits_and_requests(
        kafka: Any, spark: Any, cli: Any, mode: str, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    rows = [{"cluster": "local", "topic": f"{PREFIX}{mode}.{i}", "partitions": 1,
             "replication_factor": 1} for i in range(3)]
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, wh)
    scope = ["--topics", f"{PREFIX}{mode}.*"]

    # The topics exist (made here, not by a run: a classic run is a JVM of its own); the
    # one run profiled alters one of them, on a new warehouse, so every table is made by
    # its first commit in that run.
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    admin.create_topics([NewTopic(r["topic"], 1, 1) for r in rows], wait_for_metadata=True)
    admin.close()
    rows[1]["configs"] = {"retention.ms": "1209600000"}  # 14 days, up from the default
    write_manifest_table(spark, wh / "desired_topics", rows)
    altered = cli(["apply", "--conf", str(conf), *scope, "--allow-alter", "--profile",
                   "--json"])
    assert altered.returncode == 0, altered.output[-3000:]
    doc = altered.json()
    assert doc["counts"] == {"altered": 1, "already_present": 2}
    profile = doc["profile"]
    steps = [s["step"] for s in profile["steps"]]
    assert steps == ["start", "preflight", "manifest read", "snapshot",
                     "reassignments in flight", "plan and policies",
                     "lock", "read again under the lock", "first plan kept under the lock",
                     "validate", "audit write", "create", "verify", "audit write",
                     "summary", "unlock", "record the run"]
    assert _where(profile, "requests", "IncrementalAlterConfigs") == {
        "validate": 1, "create": 1}
    # validateOnly first, each request sent by an admin task; no topic is created.
    assert "CreateTopics" not in _named(profile["totals"]["requests"])
    # The lock log by the lock's claim (then its release), the snapshots by the view under
    # the lock, the audit by the intent (then the results), the runs table by the runs row.
    assert _named(profile["totals"]["commits"]) == {
        "provision_runs": 1, "provision_runs_locks": 2, "topic_audit": 2,
        "topic_snapshots": 1}
    assert _where(profile, "commits", "provision_runs") == {"record the run": 1}
    # Each commit is Spark work of its own (a job on classic, an action through Connect):
    # the Spark counted is the steps' together, and at least one per commit.
    spark_total = profile["totals"]["spark"]
    assert spark_total["count"] == sum(s["spark"]["count"] for s in profile["steps"])
    kind = "ExecutePlan" if mode == "connect" else "job"
    work = sum(e["count"] for e in spark_total["by_kind"] if e["name"].split(":")[0] == kind)
    # Named by the job labels of the phases that ran them.
    assert f"{kind}: apply: plan; policies" in _named(spark_total["by_kind"])
    assert work >= sum(_named(profile["totals"]["commits"]).values())
    assert profile["spark_measures"] == (
        "client requests to the Spark Connect server: ExecutePlan (an action or command), "
        "AnalyzePlan, Config" if mode == "connect" else "Spark jobs (the driver's event log)")
    # The steps tile the run: their times, each rounded to the millisecond, add up to its.
    assert sum(s["seconds"] for s in profile["steps"]) == pytest.approx(
        profile["totals"]["seconds"], abs=0.0005 * (len(profile["steps"]) + 1))
    # Every request to the server, by method: through Connect the operations, their
    # releases and the releases of checkpointed data, schema questions, settings and (new
    # warehouse) the details of the errors the lookups of tables not made yet answer; the
    # code's artifacts only when the server session did not have them yet. Classic Spark
    # has no server.
    server = _named(profile["totals"]["server_requests"]["by_kind"])
    if mode == "connect":
        assert set(server) - {"AddArtifacts", "ArtifactStatus"} == {
            "AnalyzePlan", "Config", "ExecutePlan", "ExecutePlan (release cached data)",
            "FetchErrorDetails", "ReleaseExecute"}
        assert profile["totals"]["server_requests"]["count"] == sum(server.values())
        # The operations, schema questions and settings requests are the Spark work counted.
        for method in ("ExecutePlan", "AnalyzePlan", "Config"):
            assert server[method] == sum(e["count"] for e in spark_total["by_kind"]
                                         if e["name"].split(":")[0] == method), method
    else:
        assert server == {}
    printed = altered.output
    assert "profile (spark: " in printed
    assert any(line.startswith("  total ") for line in printed.splitlines())
