"""Shared fixtures: one SparkSession with Delta, real KRaft brokers, fresh Delta dirs."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DELTA_JARS = REPO / ".cache" / "jars" / "delta"
KAFKA_JARS = REPO / ".cache" / "jars" / "kafka"

# The Spark workers run this interpreter, so they import the same packages.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
# Spark binds and advertises loopback only.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def _jars(directory: Path) -> list[str]:
    jars = sorted(str(p) for p in directory.glob("*.jar"))
    if not jars:
        pytest.fail(f"no jars in {directory}: run `make jars` first", pytrace=False)
    return jars


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A small local session with Delta: local[2], no UI, few partitions."""
    from provisioning.session import build_session

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = build_session(
        "provisioning-tests",
        {
            "spark.master": "local[2]",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
            "spark.default.parallelism": "2",
            "spark.databricks.delta.snapshotPartitions": "2",
            "spark.sql.session.timeZone": "UTC",
            # chispa's ignore_row_order sorts by hash() of every column, which Spark 4
            # refuses on map columns (PLAN and AUDIT have several) without this flag.
            "spark.sql.legacy.allowHashOnMapType": "true",
            "spark.sql.warehouse.dir": str(warehouse),
            "spark.driver.memory": "1g",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
        },
        jars=_jars(DELTA_JARS),
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _cluster(base: Path, nodes: int, **kwargs: object) -> Iterator[object]:
    from tests.support.devkafka import KafkaCluster

    _jars(KAFKA_JARS)
    cluster = KafkaCluster(base, nodes=nodes, **kwargs)  # type: ignore[arg-type]
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real one-node KRaft cluster for the whole session."""
    yield from _cluster(tmp_path_factory.mktemp("kafka-1"), 1)


# The racks of the three-node cluster of replica moves: one per node.
RACKS = {1: "a", 2: "b", 3: "c"}


@pytest.fixture(scope="session")
def racked_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real three-node KRaft cluster with one rack per node (RACKS), for the replica-move
    tests (the job's CLI flows, then kafka.reassign's requests)."""
    yield from _cluster(tmp_path_factory.mktemp("kafka-racks"), 3, racks=RACKS)


_CONNECT: dict[str, object] = {}


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One stock Spark Connect server for the session (local[2], Delta; its Python has only
    pyspark[connect]), warmed once; started only when a test runs in Connect mode."""
    from tests.support.sparkconnect import ConnectServer, warm_up

    _jars(DELTA_JARS)
    server = ConnectServer(tmp_path_factory.mktemp("spark-connect"))
    server.start()
    _CONNECT["server"] = server
    try:
        warm_up(server.address)
        yield server
    finally:
        _CONNECT.clear()
        server.stop()


# Where the job runs: classic Spark through spark-submit.sh, or a Spark Connect client.
MODES = ("classic", "connect")


@pytest.fixture(scope="module", params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    """The mode a module's end-to-end flow runs in (each module runs once per mode)."""
    return str(request.param)


@pytest.fixture(scope="module")
def cli(mode: str, request: pytest.FixtureRequest) -> Callable[..., object]:
    """`tests.helpers.run_cli` in this module's mode."""
    from tests.helpers import run_cli

    if mode == "classic":
        return run_cli
    server = request.getfixturevalue("connect_server")
    return functools.partial(run_cli, remote=server.address)


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """A fresh directory for this test's Delta tables."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return path


# --- secured brokers (issue 51: mTLS, OAUTHBEARER, MSK IAM; tests/support/secured.py) -----


@pytest.fixture(scope="session")
def mtls_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A broker whose MTLS listener requires a client certificate of its own CA, with
    StandardAuthorizer and no ACL but its admin's, for the session."""
    from tests.support.secured import start_mtls_broker

    _jars(KAFKA_JARS)
    broker = start_mtls_broker(tmp_path_factory.mktemp("kafka-mtls"))
    try:
        yield broker
    finally:
        broker.cluster.stop()


@pytest.fixture(scope="session")
def oauth_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A broker whose OAUTH listener validates the JWTs of a loopback token endpoint with
    Kafka's own validator, whose IAM listener checks MSK IAM tokens (tests/java), with
    StandardAuthorizer and no ACL but its admin's, for the session."""
    from tests.helpers import compile_policy_jar
    from tests.support.secured import SCRAM_PASSWORD, SCRAM_USER, TokenIssuer, start_oauth_broker

    _jars(KAFKA_JARS)
    base = tmp_path_factory.mktemp("kafka-oauth")
    issuer = TokenIssuer(base / "issuer")
    issuer.start()
    try:
        broker = start_oauth_broker(base, issuer, compile_policy_jar(base / "java"),
                                    {SCRAM_USER: SCRAM_PASSWORD})
        try:
            yield broker
        finally:
            broker.cluster.stop()
    finally:
        issuer.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """On a failure, attach the tail of each broker log the test used."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    callspec = getattr(item, "callspec", None)
    server = _CONNECT.get("server")
    in_connect_mode = callspec is not None and callspec.params.get("mode") == "connect"
    if server is not None and (in_connect_mode
                               or "connect_server" in getattr(item, "funcargs", {})):
        report.sections.append((f"spark connect server log ({server.log_file})",
                                server.log_tail(60)))
    for name in ("kafka",):
        cluster = getattr(item, "funcargs", {}).get(name)
        if cluster is None:
            continue
        for node_id in cluster.node_ids:
            report.sections.append(
                (f"{name} node {node_id} log ({cluster.log_file(node_id)})",
                 cluster.log_tail(node_id, 40))
            )
