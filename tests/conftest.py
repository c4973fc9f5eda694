"""Shared fixtures: one SparkSession with Delta, real KRaft brokers, fresh Delta dirs."""

from __future__ import annotations

import functools
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

# The tests start brokers with a preexec hook (a forked child, not vfork), from a process
# that holds a Spark Connect client: gRPC's fork handlers would restart its poller in the
# child, which aborts once the child closes the poller's descriptor, before the broker's
# exec. Set before anything imports grpc.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

import pytest

from dev.sparkconnect import G1_REGIONS, SMALL_BUFFERS
from tests.helpers import INTERPRETED

REPO = Path(__file__).resolve().parents[1]
DELTA_JARS = REPO / ".cache" / "jars" / "delta"
KAFKA_JARS = REPO / ".cache" / "jars" / "kafka"
# The same two long-lived JVMs compile with C2 only their hottest code: ten times the JVM's
# thresholds for its top tier. Over ten unit modules their session's JVM took a fifth less
# CPU in the same wall time (C2 had been most of the JVM's CPU in a short module; C1 alone
# saved less over a longer run, its code being slower). The Connect server too: over four
# CLI modules (test_provision_e2e, test_alter, test_check_cli, test_operator_cli; one run
# of each variant) it took 262 s of CPU so, against 332 s with the JVM's defaults,
# 396 s with C1 only, 328 s without tiers, 287 s with C1's thresholds five times higher and
# 272 s with a 512 MiB code cache. Its JIT still took about 45 % of that CPU.
HOT_ONLY_C2 = ("-XX:Tier4InvocationThreshold=50000", "-XX:Tier4MinInvocationThreshold=6000",
               "-XX:Tier4CompileThreshold=150000", "-XX:Tier4BackEdgeThreshold=400000")
# The session's Connect server collects with the parallel collector, not G1 (its regions,
# sparkconnect.G1_REGIONS, then go unused): over six 5-topic flows (plan, apply, no-op) on a
# warm server, 157 to 162 s of server CPU in three runs, against 164 and 173 s with G1 and
# 170 s with the serial collector; its start took about 4 s more. The tests' classic
# session keeps G1: the parallel collector saved it nothing over five modules (316 s of
# JVM CPU against 303 s).
SERVER_GC = ("-XX:+UseParallelGC",)

# The Spark workers run this interpreter, so they import the same packages.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
# Spark binds and advertises loopback only.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


# `make test` runs two pytest sessions at once, one per core (tests/support/suites.sh):
# lane `connect` holds every test that needs one of these components (each the costliest
# to start and to keep running), so each is started once per run; lane `rest` holds the
# others: the unit tests, and the integration tests of the classic launcher and of
# components of their own.
CONNECT_LANE = frozenset({"connect_server", "racked_kafka", "oauth_kafka"})
LANES = ("connect", "rest")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--lane", choices=LANES, default=None,
                     help="run only the tests of one of make test's two lanes: `connect` "
                          f"(those needing {', '.join(sorted(CONNECT_LANE))}) or `rest`")
    parser.addoption("--module-times", default=None, metavar="PATH",
                     help="write every module's time (seconds and tests, slowest first) "
                          "and the shared components' start times to PATH as JSON")


def lane_of(item: pytest.Item) -> str:
    """The lane of a test: its `lane` mark's (a test that starts a lane's component itself,
    by `request.getfixturevalue`), else `connect` when its fixture closure holds one of
    CONNECT_LANE."""
    marked = item.get_closest_marker("lane")
    if marked is not None:
        return str(marked.args[0])
    return "connect" if CONNECT_LANE & set(getattr(item, "fixturenames", ())) else "rest"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    lane = config.getoption("--lane")
    if lane is None:
        return
    keep = [i for i in items if lane_of(i) == lane]
    dropped = [i for i in items if lane_of(i) != lane]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_configure(config: pytest.Config) -> None:
    """The suite's time against its budget, printed at the end (tests/support/budget.py)."""
    from tests.support.budget import Budget

    config.addinivalue_line("markers", "lane(name): the lane of make test that runs the test "
                                       "(tests/conftest.py: lane_of)")

    config.pluginmanager.register(Budget(config.getoption("--module-times")),
                                  "provisioning-budget")


def _jars(directory: Path) -> list[str]:
    jars = sorted(str(p) for p in directory.glob("*.jar"))
    if not jars:
        pytest.fail(f"no jars in {directory}: run `make jars` first", pytrace=False)
    return jars


# The tests' own session's settings that a Spark Connect session can take (runtime SQL).
TEST_SESSION_SQL = {
    "spark.sql.shuffle.partitions": "2",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.session.timeZone": "UTC",
    # chispa's ignore_row_order sorts by hash() of every column, which Spark 4 refuses on
    # map columns (PLAN and AUDIT have several) without this flag.
    "spark.sql.legacy.allowHashOnMapType": "true",
    # PySpark's DataFrame debugging: on a classic session, a walk of the Python stack and
    # four more calls to the JVM for every Column and DataFrame call, to name its call site
    # in Spark's error messages. PySpark reads the setting once per process, at the first
    # such call; a classic run of the job made none of those JVM calls with it on (counted
    # at its py4j client), the tests' own process thousands per module. Over test_check and
    # test_policies_create it was a quarter of their CPU (JVM and pytest: 140 s, 105 s off).
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[object]:
    """The tests' own session: what they write (manifests) and read (the job's tables)
    with, and what job code they call directly runs on.

    In lane `connect`, a session of its own on the lane's Spark Connect server, opened as
    the job opens one (its code shipped): no second JVM beside the server. Over test_alter
    and test_provision_e2e that JVM had taken 50 s of CPU, and the server took no more with
    the tests' reads and writes on it (174 s against 185 s). Elsewhere, a small local
    session with Delta: local[2], no UI, few partitions."""
    from provisioning.session import build_session

    if request.config.getoption("--lane") == "connect":
        server = request.getfixturevalue("connect_server")
        from tests import helpers

        session = build_session("provisioning-tests", TEST_SESSION_SQL,
                                remote=f"{server.address}/;session_id={uuid.uuid4()}")
        helpers.TESTS_SESSION["connect"] = True
        yield session
        helpers.TESTS_SESSION["connect"] = False
        session.stop()
        return
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = build_session(
        "provisioning-tests",
        {
            "spark.master": "local[2]",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            **TEST_SESSION_SQL,
            **INTERPRETED,
            **SMALL_BUFFERS,
            "spark.driver.extraJavaOptions": " ".join((*HOT_ONLY_C2, G1_REGIONS)),
            "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
            "spark.default.parallelism": "2",
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
    from dev.devkafka import KafkaCluster

    _jars(KAFKA_JARS)
    cluster = KafkaCluster(base, nodes=nodes, **kwargs)  # type: ignore[arg-type]
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


# The session's shared components (tests/support/brokers.py): one plain broker, one SASL
# broker, one three-node cluster with racks, each started by the first test that asks for
# it. Each module keeps to its own topic, group and principal prefix; a module that judges a
# whole cluster starts from brokers.reset. tests/README.md says which to use.


@pytest.fixture(scope="session")
def policy_jar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Java test code of tests/java (the broker-side test policies, a KIP-848 consumer
    group member), compiled once."""
    from tests.helpers import compile_policy_jar

    _jars(KAFKA_JARS)
    return compile_policy_jar(tmp_path_factory.mktemp("policy-jar"))


@pytest.fixture(scope="session")
def _plain_kafka(tmp_path_factory: pytest.TempPathFactory,
                 policy_jar: Path) -> Iterator[tuple[object, object]]:
    from tests.support.brokers import plain_broker, running_behind

    with running_behind(*plain_broker(tmp_path_factory.mktemp("kafka-1"), policy_jar)) as both:
        yield both


@pytest.fixture(scope="session")
def kafka(_plain_kafka: tuple[object, object]) -> object:
    """The session's plain one-node KRaft broker (PLAINTEXT; the broker-side test policies
    under `reserved.` and `capped.`)."""
    return _plain_kafka[0]


@pytest.fixture(scope="session")
def kafka_proxy(_plain_kafka: tuple[object, object]) -> object:
    """The loopback proxy (tests/support/tcpproxy.py) the plain broker's PROXIED listener
    advertises: clients bootstrapping through it reach the broker only through it."""
    return _plain_kafka[1]


@pytest.fixture(scope="session")
def sasl_tls(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The session's test CA and the SASL broker's certificate it signed."""
    from dev.devkafka import TlsFiles

    return TlsFiles.create(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def _sasl_kafka(tmp_path_factory: pytest.TempPathFactory,
                sasl_tls: object) -> Iterator[tuple[object, object]]:
    from tests.support.brokers import running_behind, sasl_broker

    _jars(KAFKA_JARS)
    with running_behind(*sasl_broker(tmp_path_factory.mktemp("kafka-sasl"),
                                     sasl_tls)) as both:  # type: ignore[arg-type]
        yield both


@pytest.fixture(scope="session")
def sasl_kafka(_sasl_kafka: tuple[object, object]) -> object:
    """The session's SASL broker: the StandardAuthorizer, the users of brokers.SASL_USERS
    (the admin the only super user), listeners SASL (SASL_PLAINTEXT), SASLSSL and PROXIED."""
    return _sasl_kafka[0]


@pytest.fixture(scope="session")
def sasl_proxy(_sasl_kafka: tuple[object, object]) -> object:
    """The loopback proxy the SASL broker's PROXIED listener advertises."""
    return _sasl_kafka[1]


# The racks of the three-node cluster: one per node.
RACKS = {1: "a", 2: "b", 3: "c"}
# The racked cluster's own settings:
# - no automatic preferred-leader election: the controller's five-minute check would move
#   a leader a test placed off its preferred replica back at a moment no test controls;
# - follower fetches of at most 64 KiB: a replication throttle holds to its rate only when
#   one fetch is small beside the rate times the quota's ten-second window (a 1 MiB fetch
#   passes in one go and is forgotten eleven seconds later).
RACKED_SETTINGS = {"auto.leader.rebalance.enable": "false",
                   "replica.fetch.max.bytes": str(64 * 1024)}


@pytest.fixture(scope="session")
def racked_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The session's three-node KRaft cluster with one rack per node (RACKS). A test that
    stops or kills a node starts it again before it ends."""
    yield from _cluster(tmp_path_factory.mktemp("kafka-racks"), 3, racks=RACKS,
                        broker_properties=RACKED_SETTINGS)


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The session's Spark standalone cluster: a master and two one-core workers on loopback
    (tests/support/standalone.py), for the flows whose subject is a job on a cluster whose
    executors share nothing with the driver."""
    from tests.support.standalone import Standalone

    cluster = Standalone(tmp_path_factory.mktemp("spark-standalone"), 2)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


_CONNECT: dict[str, object] = {}


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One Spark Connect server for the session (local[2], Delta; its Python has only
    pyspark[connect]), warmed once: every CLI flow but the classic launcher's runs on it."""
    from dev.sparkconnect import ConnectServer, warm_up

    _jars(DELTA_JARS)
    server = ConnectServer(tmp_path_factory.mktemp("spark-connect"), extra=INTERPRETED,
                           java_options=(*HOT_ONLY_C2, *SERVER_GC))
    server.start()
    _CONNECT["server"] = server
    try:
        warm_up(server.address)
        yield server
    finally:
        _CONNECT.clear()
        server.stop()


@pytest.fixture(scope="session")
def cli(connect_server: object) -> Callable[..., object]:
    """`tests.helpers.run_cli` as a thin client of the session's Spark Connect server: how
    every CLI flow runs but those whose subject is the classic launcher itself."""
    from tests.helpers import run_cli

    return functools.partial(run_cli, remote=connect_server.address)  # type: ignore[attr-defined]


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
def oauth_kafka(tmp_path_factory: pytest.TempPathFactory, policy_jar: Path) -> Iterator[object]:
    """A broker whose OAUTH listener validates the JWTs of a loopback token endpoint with
    Kafka's own validator, whose IAM listener checks MSK IAM tokens (tests/java), with
    StandardAuthorizer and no ACL but its admin's, for the session."""
    from tests.support.secured import SCRAM_PASSWORD, SCRAM_USER, TokenIssuer, start_oauth_broker

    _jars(KAFKA_JARS)
    base = tmp_path_factory.mktemp("kafka-oauth")
    issuer = TokenIssuer(base / "issuer")
    issuer.start()
    try:
        broker = start_oauth_broker(base, issuer, policy_jar, {SCRAM_USER: SCRAM_PASSWORD})
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
    server = _CONNECT.get("server")
    if server is not None and {"connect_server", "cli"} & set(getattr(item, "funcargs", {})):
        report.sections.append((f"spark connect server log ({server.log_file})",
                                server.log_tail(60)))
    from dev.devkafka import KafkaCluster

    seen: set[int] = set()
    for name, value in getattr(item, "funcargs", {}).items():
        clusters = [v for v in (value if isinstance(value, tuple) else (value,))
                    if isinstance(v, KafkaCluster) and id(v) not in seen]
        for cluster in clusters:
            seen.add(id(cluster))
            for node_id in cluster.node_ids:
                report.sections.append(
                    (f"{name} node {node_id} log ({cluster.log_file(node_id)})",
                     cluster.log_tail(node_id, 40)))
