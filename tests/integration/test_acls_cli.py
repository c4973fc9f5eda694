"""ACL bindings as desired state, through the job's CLI, against the session's SASL broker
(the StandardAuthorizer; emptied for this module): grants, an idempotent rerun, revokes only
when allowed, unlisted bindings kept unless the conf removes them, policies, invalid rows,
the authority check,
a deleted topic's bindings, saved plans, report and import; a batch of 1,000
bindings granted and revoked through `spark-submit.sh` as a thin client of the session's
Spark Connect server, its requests counted by a loopback proxy the broker advertises; and,
on the same server, the bindings planned again under the lock when the topics were.

The CLI runs in this process on the tests' SparkSession (`run_cli_in_process`): the same
command `spark-submit.sh` runs. Every stage reads the broker's whole ACL state back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka import KafkaAdminClient

from dev.devkafka import KafkaCluster
from provisioning.conf import ClusterConf, Credentials, KafkaConf, Secret
from provisioning.kafka.client import ClusterAdmin
from provisioning.kinds.acls.requests import describe_acls
from provisioning.kinds.acls.schema import ACL_MANIFEST
from schemas import column_names
from tests.helpers import (
    Completed,
    grant,
    run_cli,
    run_cli_in_process,
    run_paused,
    wait_until,
    write_conf,
    write_manifest_table,
)
from tests.support.brokers import ADMIN_PASSWORD, USER_PASSWORD, reset
from tests.support.tcpproxy import KafkaProxy

pytestmark = pytest.mark.integration

CLUSTER = "acl"
ADMIN = {"ACL_USER": "admin", "ACL_PASSWORD": ADMIN_PASSWORD}
LIMITED = {"ACL_USER": "limited", "ACL_PASSWORD": USER_PASSWORD}

Key = tuple[str, str, str, str, str, str, str]


def k(principal: str, operation: str, resource_type: str, resource_name: str,
      pattern_type: str = "LITERAL", permission: str = "ALLOW", host: str = "*") -> Key:
    return (principal, host, resource_type, resource_name, pattern_type, operation,
            permission)


# Bindings the fixture makes before any run: `limited`'s own (the job runs as it in one
# test), one a manifest row asks absent, one no manifest names (on a topic that does not
# exist: orphaned too), and one on a topic the manifest deletes.
LIMITED_OWN = [k("User:limited", "DESCRIBE", "CLUSTER", "kafka-cluster"),
               k("User:limited", "CREATE", "TOPIC", "acl.lim.", "PREFIXED"),
               k("User:limited", "DESCRIBE", "TOPIC", "acl.lim.", "PREFIXED"),
               k("User:limited", "DESCRIBE_CONFIGS", "TOPIC", "acl.lim.", "PREFIXED")]
OLD = k("User:old", "READ", "TOPIC", "acl.orders")
LEGACY = k("User:legacy", "DESCRIBE", "TOPIC", "acl.legacy")
DOOMED = k("User:doomed-reader", "READ", "TOPIC", "acl.doomed")

ACL_ROWS: list[dict[str, Any]] = [
    {"principal": "User:orders-app", "resource_type": "TOPIC", "resource_name": "acl.orders",
     "operations": ["PRODUCE"], "owner": "orders"},
    {"principal": "User:readers", "resource_type": "TOPIC", "resource_name": "acl.orders.",
     "pattern_type": "PREFIXED", "operations": ["CONSUME"]},
    {"principal": "User:readers", "resource_type": "GROUP", "resource_name": "readers-",
     "pattern_type": "PREFIXED", "operations": ["READ"]},
    {"principal": "User:intruder", "host": "10.0.0.7", "resource_type": "TOPIC",
     "resource_name": "acl.orders", "operations": ["READ"], "permission": "DENY"},
    {"principal": "User:*", "resource_type": "TOPIC", "resource_name": "acl.public",
     "operations": ["READ"]},
    {"principal": "User:bad", "resource_type": "GROUP", "resource_name": "g1",
     "operations": ["WRITE", "READ"]},
    {"principal": "User:old", "resource_type": "TOPIC", "resource_name": "acl.orders",
     "operations": ["READ"], "state": "absent"},
]
GRANTED = [k("User:orders-app", "WRITE", "TOPIC", "acl.orders"),
           k("User:orders-app", "DESCRIBE", "TOPIC", "acl.orders"),
           k("User:readers", "READ", "TOPIC", "acl.orders.", "PREFIXED"),
           k("User:readers", "DESCRIBE", "TOPIC", "acl.orders.", "PREFIXED"),
           k("User:readers", "READ", "GROUP", "readers-", "PREFIXED"),
           k("User:intruder", "READ", "TOPIC", "acl.orders", permission="DENY",
             host="10.0.0.7")]
WILDCARD = k("User:*", "READ", "TOPIC", "acl.public")
BAD = [k("User:bad", "WRITE", "GROUP", "g1"), k("User:bad", "READ", "GROUP", "g1")]
TOPICS = [{"topic": "acl.orders", "partitions": 1, "replication_factor": 1},
          {"topic": "acl.doomed", "state": "absent"}]


# Kafka's API keys of the ACL requests.
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31


@pytest.fixture(scope="module")
def proxied(sasl_proxy: KafkaProxy) -> Iterator[KafkaProxy]:
    """The loopback proxy the SASL broker's PROXIED listener advertises: clients that
    bootstrap through it reach the broker only through it, so it counts their requests by API
    key."""
    sasl_proxy.reset()
    yield sasl_proxy
    sasl_proxy.reset()


@pytest.fixture(scope="module")
def secured(sasl_kafka: KafkaCluster) -> Iterator[KafkaCluster]:
    """The session's SASL broker, emptied (brokers.reset), then the bindings and topic every
    test starts from."""
    reset(sasl_kafka)
    settings = sasl_kafka.client_settings()
    admin = KafkaAdminClient(**settings)
    admin.create_topics([_new_topic("acl.doomed")])
    admin.close()
    grant(settings, "User:limited", [
        ("CLUSTER", "kafka-cluster", "LITERAL", ["DESCRIBE"]),
        ("TOPIC", "acl.lim.", "PREFIXED", ["CREATE", "DESCRIBE", "DESCRIBE_CONFIGS"])])
    grant(settings, "User:old", [("TOPIC", "acl.orders", "LITERAL", ["READ"])])
    grant(settings, "User:legacy", [("TOPIC", "acl.legacy", "LITERAL", ["DESCRIBE"])])
    grant(settings, "User:doomed-reader", [("TOPIC", "acl.doomed", "LITERAL", ["READ"])])
    yield sasl_kafka
    reset(sasl_kafka)


def _new_topic(name: str) -> Any:
    from kafka.admin import NewTopic

    return NewTopic(name, 1, 1)


def bindings(cluster: KafkaCluster) -> list[Key]:
    """Every binding of the cluster, sorted."""
    conf = ClusterConf(CLUSTER, cluster.bootstrap_servers, "SASL_PLAINTEXT", "PLAIN")
    with ClusterAdmin(conf, Credentials(Secret("admin"), Secret(ADMIN_PASSWORD)),
                      KafkaConf()) as admin:
        found = describe_acls(admin)
    assert found is not None
    return sorted(tuple(b[c] for c in ("principal", "host", "resource_type", "resource_name",
                                        "pattern_type", "operation", "permission"))
                  for b in found)  # type: ignore[misc]


def topics(cluster: KafkaCluster) -> list[str]:
    admin = KafkaAdminClient(**cluster.client_settings())
    try:
        return sorted(t for t in admin.list_topics() if not t.startswith("__"))
    finally:
        admin.close()


def write_acl_table(spark: Any, path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    cols = column_names(ACL_MANIFEST)
    data = [tuple({"cluster": CLUSTER, **r}.get(c) for c in cols) for r in rows]
    (spark.createDataFrame(data, ACL_MANIFEST).write.format("delta").mode("overwrite")
     .option("overwriteSchema", "true").save(str(path)))


def conf_for(work: Path, cluster: KafkaCluster, name: str,
             acls: Mapping[str, Any] | None = None, acl_tables: Sequence[Path] = (),
             bootstrap: str | None = None) -> Path:
    warehouse = work / "wh"
    path = write_conf(work / f"{name}.yaml", bootstrap or cluster.bootstrap_servers, warehouse,
                      cluster=CLUSTER, cluster_extra={
                          "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                          "sasl_username_env": "ACL_USER", "sasl_password_env": "ACL_PASSWORD"},
                      extra={"acls": dict(acls)} if acls else None)
    data = yaml.safe_load(path.read_text())
    data["tables"]["acl_manifests"] = [str(t) for t in acl_tables] or [str(warehouse / "acls")]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run(args: Sequence[str], env: Mapping[str, str] = ADMIN) -> Completed:
    return run_cli_in_process([*args, "--json"], env=env)


def acl_audit(spark: Any, work: Path, run_id: str) -> set[tuple[Any, ...]]:
    """(binding, action, phase, outcome, error_name) of every ACL audit row of a run."""
    rows = (spark.read.format("delta").load(str(work / "wh" / "topic_audit"))
            .where(f"run_id = '{run_id}' AND acl IS NOT NULL").collect())
    return {(tuple(r["acl"][c] for c in ("principal", "host", "resource_type",
                                          "resource_name", "pattern_type", "operation",
                                          "permission")),
             r["action"], r["phase"], r["outcome"], r["error_name"]) for r in rows}


def chain(key: Key, action: str, *steps: tuple[str, str, str | None]
          ) -> set[tuple[Any, ...]]:
    return {(key, action, phase, outcome, error) for phase, outcome, error in steps}


PLANNED = ("plan", "planned", None)
VALIDATED = ("validate", "validated", "NONE")


@pytest.fixture(scope="module")
def work(secured: KafkaCluster, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("acl-cli")
    write_manifest_table(spark, work / "wh" / "desired_topics",
                         [{"cluster": CLUSTER, **t} for t in TOPICS])
    write_acl_table(spark, work / "wh" / "acls", ACL_ROWS)
    return work


def test_grants_reruns_revokes_deleted_topics_and_unlisted_bindings(
        secured: KafkaCluster, spark: Any, work: Path) -> None:
    before = bindings(secured)
    assert before == sorted([*LIMITED_OWN, OLD, LEGACY, DOOMED])
    conf = conf_for(work, secured, "main")

    # 1. apply: the grants are made; the wildcard is blocked, the bad row rejected, the
    # absent row's revoke and the doomed topic's binding are planned only.
    first = run(["apply", "--conf", str(conf)])
    assert first.returncode == 1, first.output
    doc = first.json()
    assert bindings(secured) == sorted([*before, *GRANTED])
    acls = doc["acls"]
    assert acls["counts"] == {"granted": 6, "blocked": 1, "rejected": 2, "validated": 2}
    # The absent row's, and the binding of the topic the plan deletes (not deleted here).
    assert acls["revokes_not_allowed"] == 2
    assert acls["unmanaged"] == {CLUSTER: 6}   # limited's 4, legacy, doomed-reader
    assert acls["orphaned"] == {CLUSTER: 2}    # old and legacy: acl.orders did not exist yet
    expected = set()
    for key in GRANTED:
        expected |= chain(key, "GRANT", PLANNED, VALIDATED, ("apply", "granted", "NONE"),
                          ("verify", "granted", "NONE"))
    expected |= chain(WILDCARD, "GRANT", ("plan", "blocked", "POLICY_VIOLATION"))
    for key in BAD:
        expected |= chain(key, "GRANT", ("plan", "rejected", "INVALID_MANIFEST_ROW"))
    expected |= chain(OLD, "REVOKE", PLANNED, VALIDATED)
    expected |= chain(DOOMED, "REVOKE", PLANNED, VALIDATED)
    assert acl_audit(spark, work, doc["run_id"]) == expected
    assert topics(secured) == ["acl.doomed", "acl.orders"]

    # 2. A second apply changes nothing.
    second = run(["apply", "--conf", str(conf)])
    assert second.returncode == 1, second.output
    assert second.json()["acls"]["counts"] == {"already_present": 6, "blocked": 1,
                                               "rejected": 2, "validated": 2}
    assert bindings(secured) == sorted([*before, *GRANTED])

    # 3. report: unmanaged and orphaned bindings of the latest ACL snapshot.
    unmanaged = run(["report", "--conf", str(conf), "--unmanaged-acls"]).json()
    assert [(b["principal"], b["operation"], b["resource_name"])
            for block in unmanaged["unmanaged_acls"] for b in block["bindings"]] == [
        ("User:doomed-reader", "READ", "acl.doomed"),
        ("User:legacy", "DESCRIBE", "acl.legacy"),
        ("User:limited", "CREATE", "acl.lim."),
        ("User:limited", "DESCRIBE", "kafka-cluster"),
        ("User:limited", "DESCRIBE", "acl.lim."),
        ("User:limited", "DESCRIBE_CONFIGS", "acl.lim."),
    ]
    orphaned = run(["report", "--conf", str(conf), "--orphaned-acls"]).json()
    assert [b["binding"] for block in orphaned["orphaned_acls"] for b in block["bindings"]] == [
        "ALLOW User:legacy DESCRIBE TOPIC acl.legacy (LITERAL) host *"]

    # 4. --allow-revokes --allow-deletes: the absent row's binding is revoked; the doomed
    # topic is deleted and its literal binding goes with it; legacy (unlisted) stays.
    third = run(["apply", "--conf", str(conf), "--allow-revokes", "--allow-deletes"])
    assert third.returncode == 1, third.output
    assert bindings(secured) == sorted([*LIMITED_OWN, LEGACY, *GRANTED])
    assert topics(secured) == ["acl.orders"]
    audit = acl_audit(spark, work, third.json()["run_id"])
    assert chain(OLD, "REVOKE", PLANNED, VALIDATED, ("apply", "revoked", "NONE"),
                 ("verify", "revoked", "NONE")) <= audit
    assert chain(DOOMED, "REVOKE", PLANNED, VALIDATED, ("apply", "revoked", "NONE"),
                 ("verify", "revoked", "NONE")) <= audit

    # 5. acls.remove_unlisted: legacy and limited's own bindings are planned REVOKE, made
    # only with --allow-revokes (limited's are restored after).
    unlisted = conf_for(work, secured, "unlisted", acls={"remove_unlisted": True})
    planned = run(["apply", "--conf", str(unlisted)])
    assert bindings(secured) == sorted([*LIMITED_OWN, LEGACY, *GRANTED])
    assert planned.json()["acls"]["revokes_not_allowed"] == 5
    removed = run(["apply", "--conf", str(unlisted), "--allow-revokes"])
    assert removed.json()["acls"]["counts"]["revoked"] == 5
    assert bindings(secured) == sorted(GRANTED)
    grant(secured.client_settings(), "User:limited", [
        ("CLUSTER", "kafka-cluster", "LITERAL", ["DESCRIBE"]),
        ("TOPIC", "acl.lim.", "PREFIXED", ["CREATE", "DESCRIBE", "DESCRIBE_CONFIGS"])])

    # 6. force lifts the wildcard policy.
    forced = [dict(r, force=True) if r["principal"] == "User:*" else r for r in ACL_ROWS]
    write_acl_table(spark, work / "wh" / "acls", forced)
    run(["apply", "--conf", str(conf)])
    assert bindings(secured) == sorted([*LIMITED_OWN, *GRANTED, WILDCARD])
    write_acl_table(spark, work / "wh" / "acls", ACL_ROWS)


def test_a_principal_without_alter_on_the_cluster_gets_rejections_and_its_topic_work(
        secured: KafkaCluster, spark: Any, tmp_path: Path) -> None:
    write_manifest_table(spark, tmp_path / "wh" / "desired_topics",
                         [{"cluster": CLUSTER, "topic": "acl.lim.new", "partitions": 1,
                           "replication_factor": 1}])
    write_acl_table(spark, tmp_path / "wh" / "acls", [
        {"principal": "User:lim-app", "resource_type": "TOPIC", "resource_name": "acl.lim.new",
         "operations": ["CONSUME"]}])
    before = bindings(secured)
    done = run(["apply", "--conf", str(conf_for(tmp_path, secured, "limited"))], env=LIMITED)
    assert done.returncode == 1, done.output
    doc = done.json()
    assert bindings(secured) == before
    assert "acl.lim.new" in topics(secured)
    assert doc["counts"] == {"created": 1}
    assert doc["acls"]["counts"] == {"rejected": 2}
    assert {(b["operation"], b["outcome"], b["error_name"]) for b in doc["acls"]["bindings"]} \
        == {("READ", "rejected", "CLUSTER_AUTHORIZATION_FAILED"),
            ("DESCRIBE", "rejected", "CLUSTER_AUTHORIZATION_FAILED")}
    assert all("User:limited may not change ACLs on cluster acl" in b["error_message"]
               for b in doc["acls"]["bindings"])


def test_import_round_trip_and_a_saved_plan_covers_bindings(
        secured: KafkaCluster, spark: Any, tmp_path: Path) -> None:
    imported = tmp_path / "wh" / "imported_acls"
    write_manifest_table(spark, tmp_path / "wh" / "desired_topics", [])
    conf = conf_for(tmp_path, secured, "import", acl_tables=[imported])
    done = run(["import", "--conf", str(conf), "--acls", "--table", str(imported)])
    assert done.returncode == 0, done.output
    live = bindings(secured)
    assert done.json()["clusters"][0]["bindings_written"] == len(live)
    table = spark.read.format("delta").load(str(imported))
    assert sorted((r["principal"], r["resource_name"], tuple(r["operations"]))
                  for r in table.where("principal = 'User:limited'").collect()) == [
        ("User:limited", "acl.lim.", ("CREATE", "DESCRIBE", "DESCRIBE_CONFIGS")),
        ("User:limited", "kafka-cluster", ("DESCRIBE",)),
    ]
    plan = run(["plan", "--conf", str(conf), "--out", str(tmp_path / "plan.json")])
    assert plan.returncode == 0, plan.output
    assert plan.json()["acls"]["counts"] == {"already_present": len(live)}

    # A saved plan holds the ACL changes; a binding added since makes it stale.
    with_grant = conf_for(tmp_path, secured, "saved", acl_tables=[tmp_path / "wh" / "more"])
    write_acl_table(spark, tmp_path / "wh" / "more", [
        {"principal": "User:saved", "resource_type": "GROUP", "resource_name": "saved",
         "operations": ["READ"]}])
    saved = run(["plan", "--conf", str(with_grant), "--out", str(tmp_path / "saved.json")])
    document = json.loads((tmp_path / "saved.json").read_text())
    assert [(c["principal"], c["action"]) for c in document["plan"]["acl_changes"]] == [
        ("User:saved", "GRANT")]
    assert saved.returncode == 0, saved.output
    grant(secured.client_settings(), "User:saved", [("GROUP", "saved", "LITERAL", ["READ"])])
    stale = run(["apply", "--conf", str(with_grant), "--plan", str(tmp_path / "saved.json")])
    assert stale.returncode == 2, stale.output
    assert "ACL bindings: 0 added, 1 removed, 0 changed" in stale.output


BULK = 500   # rows of two operations each: 1,000 bindings


def test_a_thousand_bindings_in_a_handful_of_requests_through_spark_connect(
        secured: KafkaCluster, proxied: KafkaProxy, connect_server: Any, spark: Any,
        tmp_path: Path) -> None:
    rows = [{"principal": f"User:bulk-{i:03d}", "resource_type": "TOPIC",
             "resource_name": f"bulk.{i:03d}", "operations": ["READ", "WRITE"]}
            for i in range(BULK)]
    keys = [k(r["principal"], op, "TOPIC", r["resource_name"])
            for r in rows for op in ("READ", "WRITE")]
    write_manifest_table(spark, tmp_path / "wh" / "desired_topics", [])
    write_acl_table(spark, tmp_path / "wh" / "acls", rows)
    bootstrap = f"127.0.0.1:{proxied.port}"
    # The cap raised to fit the batch; one CreateAcls carries up to batch_size bindings.
    conf = conf_for(tmp_path, secured, "bulk", acls={"max_changes_per_cluster": 1000},
                    bootstrap=bootstrap)
    before = bindings(secured)

    def apply(conf_path: Path, *flags: str) -> tuple[dict[str, Any], dict[int, int]]:
        sent = dict(proxied.requests)
        done = run_cli(["apply", "--conf", str(conf_path), *flags, "--json"], env=ADMIN,
                       remote=connect_server.address)
        assert done.returncode == 0, done.output
        counts = {key: proxied.requests[key] - sent.get(key, 0)
                  for key in (CREATE_ACLS, DELETE_ACLS)}
        return done.json(), counts

    granted, requests = apply(conf)
    assert requests == {CREATE_ACLS: 1, DELETE_ACLS: 0}
    assert granted["acls"]["counts"] == {"granted": 1000}
    assert bindings(secured) == sorted([*before, *keys])
    expected: set[tuple[Any, ...]] = set()
    for key in keys:
        expected |= chain(key, "GRANT", PLANNED, VALIDATED, ("apply", "granted", "NONE"),
                          ("verify", "granted", "NONE"))
    assert acl_audit(spark, tmp_path, granted["run_id"]) == expected

    # Every row absent, 400 bindings per request: three DeleteAcls revoke the thousand.
    write_acl_table(spark, tmp_path / "wh" / "acls", [dict(r, state="absent") for r in rows])
    smaller = conf_for(tmp_path, secured, "bulk-revoke",
                       acls={"max_changes_per_cluster": 1000, "batch_size": 400},
                       bootstrap=bootstrap)
    revoked, requests = apply(smaller, "--allow-revokes")
    assert requests == {CREATE_ACLS: 0, DELETE_ACLS: 3}
    assert revoked["acls"]["counts"] == {"revoked": 1000}
    assert bindings(secured) == before
    expected = set()
    for key in keys:
        expected |= chain(key, "REVOKE", PLANNED, VALIDATED, ("apply", "revoked", "NONE"),
                          ("verify", "revoked", "NONE"))
    assert acl_audit(spark, tmp_path, revoked["run_id"]) == expected


def test_bindings_are_planned_again_under_the_lock_when_the_topics_were(
        secured: KafkaCluster, connect_server: Any, spark: Any, tmp_path: Path) -> None:
    """The first plan (without the lock) deletes a topic and revokes its binding with it;
    before the run takes its lock the topic is deleted by hand. Under the lock the topics
    are planned again (the topic is already absent), so the bindings' plan, which reads
    the topics' plan, is made again: no revoke, the binding left as it is, the grant made."""
    settings = secured.client_settings()
    admin = KafkaAdminClient(**settings)
    try:
        admin.create_topics([_new_topic("acl.relock.gone")], wait_for_metadata=True)
        reader = k("User:relock-reader", "READ", "TOPIC", "acl.relock.gone")
        grant(settings, "User:relock-reader", [("TOPIC", "acl.relock.gone", "LITERAL",
                                                ["READ"])])
        app = k("User:relock-app", "READ", "TOPIC", "acl.relock.app")
        # `force`: the delete does not wait on the topic's last write, which the first
        # plan's policies may still be reading when the run reaches its lock.
        write_manifest_table(spark, tmp_path / "wh" / "desired_topics", [
            {"cluster": CLUSTER, "topic": "acl.relock.gone", "state": "absent",
             "force": True}])
        write_acl_table(spark, tmp_path / "wh" / "acls", [
            {"principal": "User:relock-app", "resource_type": "TOPIC",
             "resource_name": "acl.relock.app", "operations": ["READ"]}])
        conf = conf_for(tmp_path, secured, "relock")
        paused = run_paused(["apply", "--conf", str(conf), "--allow-deletes", "--json"],
                            "pause-before-lock", tmp_path / "go", connect_server.address,
                            env=ADMIN)
        admin.delete_topics(["acl.relock.gone"])
        wait_until("acl.relock.gone deleted", lambda: "acl.relock.gone" not in admin.list_topics(),
                   60)
        before = bindings(secured)
        done = paused.go()
    finally:
        admin.close()
    assert done.returncode == 0, done.output[-3000:]
    assert "step plan again under the lock:" in done.output
    assert done.output.count("step ACL plan and policies:") == 2, done.output[-3000:]
    assert "ACL first plan kept" not in done.output
    doc = done.json()
    assert acl_audit(spark, tmp_path, doc["run_id"]) == chain(
        app, "GRANT", PLANNED, VALIDATED, ("apply", "granted", "NONE"),
        ("verify", "granted", "NONE"))
    assert bindings(secured) == sorted([*before, app])
    assert reader in before
    assert "acl.relock.gone" not in topics(secured)
