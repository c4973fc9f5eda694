"""The live state `check` judges, against real brokers: every partition's leader, replicas and
ISR and every config the broker reports, as `describe_topics` and the snapshot rows carry
them; on three nodes, one stopped broker shrinks the ISRs the health rules then judge, and
`check` (the command) reports them until the broker is back."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from dev.devkafka import KafkaCluster
from provisioning.conf import ClusterConf, KafkaConf
from provisioning.kafka.client import ClusterAdmin, PartitionState
from provisioning.kafka.codes import NON_DEFAULT_SOURCES, topic_id_text
from provisioning.kafka.snapshot import snapshot_rows
from tests.helpers import run_cli, wait_until, write_conf, write_manifest_table

pytestmark = [pytest.mark.integration]

KAFKA = KafkaConf(request_timeout_ms=15000, operation_timeout_ms=15000)
AT = dt.datetime(2026, 11, 22, 3, 0, 0)
FINDING = "cluster string, topic string, rule string, detail string"


def _admin(bootstrap: str) -> ClusterAdmin:
    return ClusterAdmin(ClusterConf(name="local", bootstrap_servers=bootstrap), None, KAFKA)


def _rows(bootstrap: str, topics: set[str]) -> list[dict[str, Any]]:
    """The job's SNAPSHOT rows of `topics`, as dicts."""
    from schemas import SNAPSHOT, column_names

    with _admin(bootstrap) as admin:
        rows = list(snapshot_rows(admin, "snap-1", "c-1", AT))
    found = [dict(zip(column_names(SNAPSHOT), r, strict=True)) for r in rows]
    return sorted((r for r in found if r["topic"] in topics), key=lambda r: r["topic"])


def _broker_configs(admin: KafkaAdminClient, topic: str) -> list[dict[str, Any]]:
    """What DescribeConfigs says of `topic`, read apart from the job, as CONFIG_ENTRY rows."""
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                       config_filter="all")["topic"][topic]
    return [{"name": name, "value": e["value"], "source": str(e["config_source"]),
             "read_only": bool(e["read_only"]), "sensitive": bool(e["is_sensitive"])}
            for name, e in sorted(described.items())]


def test_partition_states_and_configs_are_what_the_broker_reports(kafka: Any) -> None:
    topics = {"chk.three": NewTopic("chk.three", 3, 1, topic_configs={
                  "min.insync.replicas": "1", "retention.ms": "3600000"}),
              "chk.plain": NewTopic("chk.plain", 1, 1)}
    client = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        client.create_topics(list(topics.values()), raise_errors=True, wait_for_metadata=True)
        ids = {t["name"]: topic_id_text(t["topic_id"])
               for t in client.describe_topics(sorted(topics))}
        reported = {t: _broker_configs(client, t) for t in topics}
    finally:
        client.close()

    with _admin(kafka.bootstrap_servers) as admin:
        described = {t.name: t.partition_states for t in admin.describe_topics(sorted(topics))}
    rows = _rows(kafka.bootstrap_servers, set(topics))

    assert described == {
        "chk.three": tuple(PartitionState(p, 1, (1,), (1,)) for p in range(3)),
        "chk.plain": (PartitionState(0, 1, (1,), (1,)),)}
    overrides = [{"name": "min.insync.replicas", "value": "1", "source": "DYNAMIC_TOPIC_CONFIG",
                  "read_only": False, "sensitive": False},
                 {"name": "retention.ms", "value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG",
                  "read_only": False, "sensitive": False}]
    assert [c for c in reported["chk.three"] if c["source"] == "DYNAMIC_TOPIC_CONFIG"] == \
        overrides
    inherited = {t: [c for c in reported[t] if c["source"] not in NON_DEFAULT_SOURCES]
                 for t in topics}
    # A KRaft cluster's default min.insync.replicas is a cluster-wide dynamic setting: kept
    # by default_configs, unseen by `configs` (which keeps what somebody set).
    assert [c for c in inherited["chk.plain"] if c["name"] == "min.insync.replicas"] == [
        {"name": "min.insync.replicas", "value": "1", "source": "DYNAMIC_DEFAULT_BROKER_CONFIG",
         "read_only": False, "sensitive": False}]
    assert len(inherited["chk.plain"]) > 20
    assert rows == [
        {"run_id": "snap-1", "cluster": "local", "cluster_id": "c-1", "topic": "chk.plain",
         "topic_id": ids["chk.plain"], "internal": False, "partitions": 1,
         "replication_factor": 1, "replica_assignment": {0: [1]}, "configs": [],
         "consumer_groups": [], "error_name": None, "snapshot_at": AT,
         "partition_states": [{"partition": 0, "leader": 1, "replicas": [1], "isr": [1]}],
         "default_configs": inherited["chk.plain"]},
        {"run_id": "snap-1", "cluster": "local", "cluster_id": "c-1", "topic": "chk.three",
         "topic_id": ids["chk.three"], "internal": False, "partitions": 3,
         "replication_factor": 1, "replica_assignment": {0: [1], 1: [1], 2: [1]},
         "configs": overrides, "consumer_groups": [], "error_name": None, "snapshot_at": AT,
         "partition_states": [{"partition": p, "leader": 1, "replicas": [1], "isr": [1]}
                              for p in range(3)],
         "default_configs": inherited["chk.three"]},
    ]


def test_a_snapshot_table_of_an_earlier_release_gains_the_new_columns(
        spark: Any, tmp_path: Path) -> None:
    from provisioning.delta.tables import TableRef, append
    from schemas import SNAPSHOT
    from tests.builders import partition_state, snapshot_df

    table = str(tmp_path / "topic_snapshots")
    new_columns = ("partition_states", "default_configs")
    old = snapshot_df(spark, [{"run_id": "old", "cluster": "local", "topic": "t"}])
    old.drop(*new_columns).write.format("delta").save(table)

    append(snapshot_df(spark, [{"run_id": "new", "cluster": "local", "topic": "t",
                                "partition_states": [partition_state(0, 2, [2, 1], [1])],
                                "default_configs": []}]), TableRef(table))

    assert_df_equality(
        spark.read.format("delta").load(table),
        snapshot_df(spark, [{"run_id": "old", "cluster": "local", "topic": "t"},
                            {"run_id": "new", "cluster": "local", "topic": "t",
                             "partition_states": [partition_state(0, 2, [2, 1], [1])],
                             "default_configs": []}]),
        ignore_row_order=True, ignore_nullable=True)
    assert [f.name for f in spark.read.format("delta").load(table).schema.fields] == \
        [f.name for f in SNAPSHOT.fields]


# -- three nodes ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def three_nodes(racked_kafka: KafkaCluster) -> Iterator[KafkaCluster]:
    """The session's three-node cluster; the node the test stops is running again (in the
    test's own `finally`) and this module's topics are gone when the module ends."""
    yield racked_kafka
    admin = KafkaAdminClient(bootstrap_servers=racked_kafka.bootstrap_servers)
    try:
        mine = [t for t in admin.list_topics() if t.startswith("chk.")]
        if mine:
            admin.delete_topics(mine)
    finally:
        admin.close()


def _states(bootstrap: str, topics: set[str]) -> dict[str, Any]:
    with _admin(bootstrap) as admin:
        return {t.name: t.partition_states for t in admin.describe_topics(sorted(topics))}


def _checked(connect_server: Any, conf: Path) -> tuple[int, set[tuple[str, str, str]]]:
    """`check` through spark-submit.sh (a thin client of the suite's Connect server): its
    exit code and its (topic, rule, severity) rows."""
    done = run_cli(["check", "--conf", str(conf), "--topics", "chk.*", "--json"],
                   remote=connect_server.address)
    assert done.returncode in (0, 1), done.output[-4000:]
    return done.returncode, {(v["topic"], v["rule"], v["severity"])
                             for v in done.json()["violations"]}


def test_a_stopped_broker_shrinks_the_isrs_the_health_rules_judge(
        three_nodes: KafkaCluster, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    from provisioning.kinds.topics.rules.health import health_findings
    from provisioning.transforms.policies import PolicyContext
    from schemas import SNAPSHOT, column_names
    from tests.builders import cluster_states_df, desired_df

    # The stopped node is not the active controller, so the quorum keeps its leader, and
    # leads no partition of these topics, so their leaders stay where they are.
    controller = three_nodes.active_controller()
    victim = max(n for n in three_nodes.node_ids if n != controller)
    a, b = (n for n in three_nodes.node_ids if n != victim)
    everyone = three_nodes.bootstrap_servers
    survivors = ",".join(s for i, s in enumerate(everyone.split(","), start=1) if i != victim)
    topics = {"chk.strict", "chk.apart"}
    client = KafkaAdminClient(bootstrap_servers=everyone)
    try:
        client.create_topics([
            NewTopic("chk.strict", replica_assignments={0: [a, b, victim], 1: [b, victim, a]},
                     topic_configs={"min.insync.replicas": "3"}),
            NewTopic("chk.apart", replica_assignments={0: [a, b]})],
            raise_errors=True, wait_for_metadata=True)
    finally:
        client.close()

    def in_sync() -> bool:
        return all(p.isr == tuple(sorted(p.replicas))
                   for states in _states(everyone, topics).values() for p in states or ())

    def judged(bootstrap: str) -> Any:
        rows = [tuple(r[c] for c in column_names(SNAPSHOT)) for r in _rows(bootstrap, topics)]
        live = spark.createDataFrame(rows, SNAPSHOT)
        context = PolicyContext(clusters=cluster_states_df(spark, []), live=live)
        return live, health_findings(live, desired_df(spark, []), context, rules=(
            "offline_partition", "under_replicated", "below_min_isr"))

    wait_until("every replica in sync", in_sync, 90, pause=0.5)
    full = {"chk.strict": (PartitionState(0, a, (a, b, victim), tuple(sorted((a, b, victim)))),
                           PartitionState(1, b, (b, victim, a), tuple(sorted((a, b, victim))))),
            "chk.apart": (PartitionState(0, a, (a, b), tuple(sorted((a, b)))),)}
    assert _states(everyone, topics) == full
    # (also the first FindCoordinator: __consumer_offsets is made while every node is up)
    _, found = judged(everyone)
    assert_df_equality(found, spark.createDataFrame([], FINDING), ignore_nullable=True)

    three_nodes.stop_node(victim)
    try:
        wait_until(f"node {victim} out of every ISR", lambda: all(
            victim not in p.isr for states in _states(survivors, topics).values()
            for p in states or ()), 90, pause=0.5)
        live, found = judged(survivors)

        shrunk = tuple(sorted((a, b)))
        partitions = live.select("topic", "partition_states")
        assert_df_equality(partitions, spark.createDataFrame([
            ("chk.strict", [(0, a, [a, b, victim], list(shrunk)),
                            (1, b, [b, victim, a], list(shrunk))]),
            ("chk.apart", [(0, a, [a, b], list(shrunk))]),
        ], partitions.schema), ignore_row_order=True)
        isr = ",".join(map(str, shrunk))
        assert_df_equality(found, spark.createDataFrame([
            ("local", "chk.strict", "under_replicated",
             f"partition 0 has in-sync replicas {isr} of replicas {a},{b},{victim}; "
             f"partition 1 has in-sync replicas {isr} of replicas {b},{victim},{a}; every "
             "replica should be in sync"),
            ("local", "chk.strict", "below_min_isr",
             f"partition 0 has 2 in-sync replica(s) ({isr}); partition 1 has 2 in-sync "
             f"replica(s) ({isr}); min.insync.replicas is 3: acks=all producers are refused "
             "until that many replicas are in sync"),
        ], FINDING), ignore_row_order=True, ignore_nullable=True)

        # the command, on the same broken state (no manifest names these topics)
        warehouse = tmp_path / "wh"
        write_manifest_table(spark, warehouse / "desired_topics", [
            {"cluster": "local", "topic": "other.topic", "partitions": 1,
             "replication_factor": 1}])
        # The usage rules have a module of their own (test_usage): here both topics are
        # empty, and how full the disk is is the machine's.
        conf = write_conf(tmp_path / "conf.yaml", survivors, warehouse, extra={"checks": {
            "severity": {"empty_topic": "off"}, "disk_used_ratio": 1}})
        assert _checked(connect_server, conf) == (1, {
            ("chk.strict", "under_replicated", "warning"),
            ("chk.strict", "below_min_isr", "error"),
            ("chk.strict", "unmanaged", "info"),
            ("chk.apart", "unmanaged", "info")})
    finally:
        if not three_nodes.is_running(victim):
            three_nodes.start_node(victim)

    wait_until("every replica back in sync", in_sync, 90, pause=0.5)
    _, found = judged(everyone)
    assert_df_equality(found, spark.createDataFrame([], FINDING), ignore_nullable=True)
    assert _checked(connect_server, conf) == (0, {
        ("chk.strict", "unmanaged", "info"), ("chk.apart", "unmanaged", "info")})
