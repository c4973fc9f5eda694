"""Shared fixtures: one SparkSession with Delta, real KRaft brokers, fresh Delta dirs."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
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


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """A fresh directory for this test's Delta tables."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return path


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """On a failure, attach the tail of each broker log the test used."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for name in ("kafka",):
        cluster = getattr(item, "funcargs", {}).get(name)
        if cluster is None:
            continue
        for node_id in cluster.node_ids:
            report.sections.append(
                (f"{name} node {node_id} log ({cluster.log_file(node_id)})",
                 cluster.log_tail(node_id, 40))
            )
