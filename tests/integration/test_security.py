"""Secured clusters: SASL (PLAIN, SCRAM-SHA-256/512), StandardAuthorizer ACLs, least privilege.

The session's SASL broker (tests/support/brokers.py: SASL_PLAINTEXT and SASL_SSL listeners,
`allow.everyone.if.no.acl.found=false`), emptied for this module.
The job logs in as User:job (a PLAIN user and a SCRAM user of the same name) holding
only the prefixed ACLs the README's "Least privilege" section lists, per prefix:

    sec.ok.     Create, Delete, Describe, DescribeConfigs   (everything the job needs)
    sec.nocfg.  Create, Describe                            (no DescribeConfigs: KIP-525)
    sec.nodel.  Describe, DescribeConfigs                   (no Create, no Delete)
    sec.out.    nothing
    Group '*'   Describe                                    (the in-use check)

The CLI runs through spark-submit.sh four times (plan --json as PLAIN, apply as
SCRAM-SHA-512 with --verbose through the classic launcher, plan again as SCRAM-SHA-256,
apply with a wrong password, those three as thin clients of the session's Connect server);
every test below reads what those runs left behind.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import secrets
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from dev.devkafka import KafkaCluster, TlsFiles
from provisioning.conf import ClusterConf, Credentials, KafkaConf, Secret
from provisioning.errors import ClusterUnreachable
from provisioning.kafka.client import ClusterAdmin, ClusterState
from provisioning.kafka.snapshot import snapshot_rows
from schemas import SNAPSHOT, column_names
from tests.helpers import (
    Completed,
    broker_state_as,
    grant,
    run_cli,
    table_json,
    write_conf,
    write_manifest_table,
)
from tests.support.brokers import (
    ADMIN_PASSWORD,
    PLAIN_PASSWORD,
    SASL_PASSWORDS,
    SASL_TLS_LISTENER,
    SCRAM_PASSWORD,
    reset,
)

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

CLUSTER = "secure"
USER_ENV, PASSWORD_ENV = "SEC_TEST_KAFKA_USER", "SEC_TEST_KAFKA_PASSWORD"
# Known, unguessable values (the session's SASL broker's users, tests/support/brokers.py):
# every output of every run is searched for them.
WRONG_PASSWORD = f"wrongpw{secrets.token_hex(8)}"
PASSWORDS = (*SASL_PASSWORDS, WRONG_PASSWORD)
DENIED = "TOPIC_AUTHORIZATION_FAILED"

JOB_ACLS = [
    ("TOPIC", "sec.ok.", "PREFIXED", ["CREATE", "DELETE", "DESCRIBE", "DESCRIBE_CONFIGS"]),
    ("TOPIC", "sec.nocfg.", "PREFIXED", ["CREATE", "DESCRIBE"]),
    ("TOPIC", "sec.nodel.", "PREFIXED", ["DESCRIBE", "DESCRIBE_CONFIGS"]),
    ("GROUP", "*", "LITERAL", ["DESCRIBE"]),
]
PRE_EXISTING = ("sec.ok.same", "sec.ok.old", "sec.nodel.old", "sec.out.exists", "sec.out.old")
MANIFEST = [
    {"topic": "sec.ok.a", "partitions": 2, "replication_factor": 1,
     "configs": {"retention.ms": "3600000"}},
    {"topic": "sec.ok.b", "partitions": 1},
    {"topic": "sec.ok.same", "partitions": 1},
    {"topic": "sec.ok.old", "state": "absent"},
    {"topic": "sec.ok.never", "state": "absent"},
    {"topic": "sec.nocfg.c", "partitions": 1},
    {"topic": "sec.nodel.new", "partitions": 1},
    {"topic": "sec.nodel.old", "state": "absent"},
    {"topic": "sec.out.new", "partitions": 1},
    {"topic": "sec.out.exists", "partitions": 1},
    {"topic": "sec.out.old", "state": "absent"},
    {"topic": "sec.out.gone", "state": "absent"},
]
HIDDEN = ("sec.out.exists", "sec.out.gone", "sec.out.new", "sec.out.old")


@dataclass(frozen=True)
class Runs:
    cluster: KafkaCluster
    work: Path
    warehouse: Path
    before: dict[str, dict[str, Any]]
    plan: Completed
    after_plan: dict[str, dict[str, Any]]
    apply: Completed
    after_apply: dict[str, dict[str, Any]]
    replan: Completed
    wrong: Completed
    after_wrong: dict[str, dict[str, Any]]

    def run_id(self, run: Completed) -> str:
        return str(run.json()["run_id"])


def _conf(path: Path, cluster: KafkaCluster, warehouse: Path, mechanism: str) -> Path:
    return write_conf(path, cluster.bootstrap_servers, warehouse, cluster=CLUSTER,
                      cluster_extra={"security_protocol": "SASL_PLAINTEXT",
                                     "sasl_mechanism": mechanism,
                                     "sasl_username_env": USER_ENV,
                                     "sasl_password_env": PASSWORD_ENV})


def _login(password: str) -> dict[str, str]:
    return {USER_ENV: "job", PASSWORD_ENV: password}


TLS_LISTENER = SASL_TLS_LISTENER


@pytest.fixture(scope="module")
def tls(sasl_tls: TlsFiles) -> TlsFiles:
    """The session's test CA and the SASL broker certificate it signed."""
    return sasl_tls


@pytest.fixture(scope="module")
def secure(sasl_kafka: KafkaCluster) -> Iterator[KafkaCluster]:
    """The session's SASL broker, emptied first (brokers.reset): the runs' plans judge every
    topic the job may see. Its first listener carries inter-broker traffic and the CLI runs;
    SASLSSL serves the same users over TLS."""
    reset(sasl_kafka)
    admin = KafkaAdminClient(**sasl_kafka.client_settings())
    admin.create_topics({name: {"num_partitions": 1, "replication_factor": 1}
                         for name in PRE_EXISTING},
                        raise_errors=True, wait_for_metadata=True)
    admin.close()
    grant(sasl_kafka.client_settings(), "User:job", JOB_ACLS)
    yield sasl_kafka
    reset(sasl_kafka)


@pytest.fixture(scope="module")
def runs(secure: KafkaCluster, spark: Any, cli: Callable[..., Completed],
         tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Four runs: the plan (PLAIN), the second plan (SCRAM-SHA-256) and the refused apply as
    thin clients of the session's Connect server; the apply (SCRAM-SHA-512) through the
    classic launcher, whose driver's own Spark event log is searched for the passwords."""
    work = tmp_path_factory.mktemp("sec-runs")
    warehouse = work / "wh"
    events = work / "events"
    events.mkdir()
    write_manifest_table(spark, warehouse / "desired_topics",
                         [{"cluster": CLUSTER, **row} for row in MANIFEST])
    admin = secure.client_settings()
    before = broker_state_as(admin)
    plan = cli(["plan", "--conf", str(_conf(work / "plain.yaml", secure, warehouse, "PLAIN")),
                "--json", "--out", str(work / "plan.json")], env=_login(PLAIN_PASSWORD))
    after_plan = broker_state_as(admin)
    apply = run_cli(["apply", "--conf", str(_conf(work / "scram512.yaml", secure, warehouse,
                                                       "SCRAM-SHA-512")),
                     "--allow-deletes", "--json", "--verbose"], env=_login(SCRAM_PASSWORD),
                    # uncompressed, one file: the event log searched as plain text
                    spark_args=["--conf", "spark.eventLog.enabled=true",
                                "--conf", "spark.eventLog.compress=false",
                                "--conf", "spark.eventLog.rolling.enabled=false",
                                "--conf", f"spark.eventLog.dir={events.as_uri()}"])
    after_apply = broker_state_as(admin)
    scram256 = _conf(work / "scram256.yaml", secure, warehouse, "SCRAM-SHA-256")
    replan = cli(["plan", "--conf", str(scram256)], env=_login(SCRAM_PASSWORD))
    wrong = cli(["apply", "--conf", str(scram256), "--allow-deletes", "--json"],
                env=_login(WRONG_PASSWORD))
    return Runs(secure, work, warehouse, before, plan, after_plan, apply, after_apply, replan,
                wrong, broker_state_as(admin))


def _audit(spark: Any, runs: Runs, run_id: str) -> dict[tuple[str, str], tuple[Any, ...]]:
    """(topic, phase) -> (action, outcome, error_code, error_name, topic_config_error_code,
    result_partitions, result_replication_factor, result_configs is null)."""
    rows = (spark.read.format("delta").load(str(runs.warehouse / "topic_audit"))
            .where(f"run_id = '{run_id}'").collect())
    found = {}
    for r in rows:
        key = (r["topic"], r["phase"])
        assert key not in found, f"two audit rows for {key}"
        found[key] = (r["action"], r["outcome"], r["error_code"], r["error_name"],
                      r["topic_config_error_code"], r["result_partitions"],
                      r["result_replication_factor"], r["result_configs"] is None)
    return found


def _only(rows: dict[tuple[str, str], Any], *topics: str) -> dict[tuple[str, str], Any]:
    return {k: v for k, v in rows.items() if k[0] in topics}


def _planned(action: str) -> tuple[Any, ...]:
    return (action, "planned", None, None, None, None, None, True)


def _hidden_row() -> tuple[Any, ...]:
    return ("NOOP", "failed", None, DENIED, None, None, None, True)


CREATED = ("CREATE", "created", 0, "NONE", None)
VALIDATED = ("CREATE", "validated", 0, "NONE", None)

# The apply run (SCRAM-SHA-512, --allow-deletes): every row, keyed by (topic, phase).
APPLY_AUDIT: dict[tuple[str, str], tuple[Any, ...]] = {
    ("sec.ok.a", "plan"): _planned("CREATE"),
    ("sec.ok.a", "validate"): (*VALIDATED, 2, 1, False),
    ("sec.ok.a", "apply"): (*CREATED, 2, 1, False),
    ("sec.ok.a", "verify"): (*CREATED, 2, 1, True),
    ("sec.ok.b", "plan"): _planned("CREATE"),
    ("sec.ok.b", "validate"): (*VALIDATED, 1, 1, False),
    ("sec.ok.b", "apply"): (*CREATED, 1, 1, False),
    ("sec.ok.b", "verify"): (*CREATED, 1, 1, True),
    ("sec.ok.same", "plan"): ("NOOP", "already_present", None, None, None, None, None, True),
    ("sec.ok.old", "plan"): _planned("DELETE"),
    ("sec.ok.old", "apply"): ("DELETE", "deleted", 0, "NONE", None, None, None, True),
    ("sec.ok.old", "verify"): ("DELETE", "deleted", 0, "NONE", None, None, None, True),
    ("sec.ok.never", "plan"): ("NOOP", "already_absent", None, None, None, None, None, True),
    # KIP-525 without DescribeConfigs: created, configs unknown (29), never broker defaults
    ("sec.nocfg.c", "plan"): _planned("CREATE"),
    ("sec.nocfg.c", "validate"): ("CREATE", "validated", 0, "NONE", 29, None, None, True),
    ("sec.nocfg.c", "apply"): ("CREATE", "created", 0, "NONE", 29, None, None, True),
    ("sec.nocfg.c", "verify"): (*CREATED, 1, 1, True),
    # Describe but neither Create nor Delete: the broker refuses each, per topic
    ("sec.nodel.new", "plan"): _planned("CREATE"),
    ("sec.nodel.new", "validate"): ("CREATE", "rejected", 29, DENIED, None, None, None, True),
    ("sec.nodel.old", "plan"): _planned("DELETE"),
    ("sec.nodel.old", "apply"): ("DELETE", "rejected", 29, DENIED, None, None, None, True),
    # no ACL at all: the job cannot tell whether these exist and touches none of them
    **{(topic, "plan"): _hidden_row() for topic in HIDDEN},
}


def test_plan_changes_nothing_and_judges_every_topic_on_the_secured_cluster(
        runs: Runs, spark: Any) -> None:
    assert sorted(runs.before) == sorted(PRE_EXISTING)
    assert runs.plan.returncode == 1, runs.plan.output[-4000:]
    assert runs.after_plan == runs.before
    doc = runs.plan.json()
    assert doc["counts"] == {"validated": 3, "rejected": 1, "planned": 2, "failed": 4,
                             "already_present": 1, "already_absent": 1}
    expected = {k: v for k, v in APPLY_AUDIT.items() if k[1] in ("plan", "validate")}
    assert _audit(spark, runs, runs.run_id(runs.plan)) == expected


def test_creates_inside_the_prefix_succeed_while_other_topics_fail_one_by_one(
        runs: Runs, spark: Any) -> None:
    assert runs.apply.returncode == 1, runs.apply.output[-4000:]
    audit = _audit(spark, runs, runs.run_id(runs.apply))
    ok = ("sec.ok.a", "sec.ok.b", "sec.ok.same", "sec.ok.old", "sec.ok.never",
          "sec.nodel.new", *HIDDEN)
    assert _only(audit, *ok) == _only(APPLY_AUDIT, *ok)
    # and the run holds nothing else
    assert audit == APPLY_AUDIT
    after = {n: {k: v for k, v in s.items() if k != "topic_id"}
             for n, s in runs.after_apply.items()}
    one = {"partitions": 1, "replication_factor": 1, "configs": {}}
    assert after == {
        "sec.ok.a": {"partitions": 2, "replication_factor": 1,
                     "configs": {"retention.ms": "3600000"}},
        "sec.ok.b": one, "sec.ok.same": one, "sec.nocfg.c": one, "sec.nodel.old": one,
        "sec.out.exists": one, "sec.out.old": one,
    }
    for name in ("sec.ok.same", "sec.nodel.old", "sec.out.exists", "sec.out.old"):
        assert runs.after_apply[name]["topic_id"] == runs.before[name]["topic_id"]


def test_create_without_describe_configs_records_unknown_configs_not_defaults(
        runs: Runs, spark: Any) -> None:
    audit = _audit(spark, runs, runs.run_id(runs.apply))
    assert _only(audit, "sec.nocfg.c") == _only(APPLY_AUDIT, "sec.nocfg.c")
    assert runs.after_apply["sec.nocfg.c"]["partitions"] == 1
    # the topic id of the create is the one the broker holds
    row = (spark.read.format("delta").load(str(runs.warehouse / "topic_audit"))
           .where(f"run_id = '{runs.run_id(runs.apply)}' and topic = 'sec.nocfg.c' "
                  "and phase = 'apply'").collect()[0])
    assert row["topic_id"] == runs.after_apply["sec.nocfg.c"]["topic_id"]


def test_delete_without_the_delete_acl_is_rejected_never_absent(
        runs: Runs, spark: Any) -> None:
    audit = _audit(spark, runs, runs.run_id(runs.apply))
    assert _only(audit, "sec.nodel.old") == {
        ("sec.nodel.old", "plan"): _planned("DELETE"),
        ("sec.nodel.old", "apply"): ("DELETE", "rejected", 29, DENIED, None, None, None, True),
    }
    assert runs.after_apply["sec.nodel.old"] == runs.before["sec.nodel.old"]


def test_topics_the_job_may_not_describe_are_never_created_deleted_or_called_absent(
        runs: Runs, spark: Any) -> None:
    run_id = runs.run_id(runs.apply)
    audit = _audit(spark, runs, run_id)
    assert _only(audit, *HIDDEN) == {(t, "plan"): _hidden_row() for t in HIDDEN}
    assert "sec.out.new" not in runs.after_apply
    for name in ("sec.out.exists", "sec.out.old"):
        assert runs.after_apply[name] == runs.before[name]
    message = (spark.read.format("delta").load(str(runs.warehouse / "topic_audit"))
               .where(f"run_id = '{run_id}' and topic = 'sec.out.old'").collect()[0]
               ["error_message"])
    assert message == (
        f"the job may not see topic sec.out.old on cluster {CLUSTER} ({DENIED}): it may or "
        "may not exist, so it was neither created, deleted nor compared; grant the job's "
        "principal Describe and DescribeConfigs on it (README: Least privilege)")
    # the snapshot says so too: listed topics in full, manifest topics it may not see by name
    snapshot = (spark.read.format("delta").load(str(runs.warehouse / "topic_snapshots"))
                .where(f"run_id = '{run_id}'").collect())
    assert sorted((r["topic"], r["topic_id"] is None, r["partitions"], r["configs"],
                   r["consumer_groups"], r["error_name"]) for r in snapshot) == [
        ("sec.nodel.old", False, 1, [], [], None),
        ("sec.ok.old", False, 1, [], [], None),
        ("sec.ok.same", False, 1, [], [], None),
        *[(t, True, None, None, None, DENIED) for t in HIDDEN],
    ]


def test_a_second_plan_over_scram_sha_256_sees_what_the_apply_did(
        runs: Runs, spark: Any) -> None:
    assert runs.replan.returncode == 1, runs.replan.output[-4000:]
    audited = {r["run_id"] for r in spark.read.format("delta")
               .load(str(runs.warehouse / "topic_audit")).select("run_id").collect()}
    (run_id,) = audited - {runs.run_id(runs.plan), runs.run_id(runs.apply)}
    present = ("NOOP", "already_present", None, None, None, None, None, True)
    absent = ("NOOP", "already_absent", None, None, None, None, None, True)
    assert _audit(spark, runs, run_id) == {
        ("sec.ok.a", "plan"): present, ("sec.ok.b", "plan"): present,
        ("sec.ok.same", "plan"): present, ("sec.nocfg.c", "plan"): present,
        ("sec.ok.old", "plan"): absent, ("sec.ok.never", "plan"): absent,
        ("sec.nodel.new", "plan"): _planned("CREATE"),
        ("sec.nodel.new", "validate"): ("CREATE", "rejected", 29, DENIED, None, None, None,
                                        True),
        ("sec.nodel.old", "plan"): _planned("DELETE"),
        **{(topic, "plan"): _hidden_row() for topic in HIDDEN},
    }
    # the operator reads why, in the human output
    assert "the job may not see topic sec.out.gone on cluster secure" in runs.replan.stdout, \
        runs.replan.stdout[-3000:]


def test_wrong_password_exits_3_changes_nothing_and_says_authentication_failed(
        runs: Runs, spark: Any) -> None:
    assert runs.wrong.returncode == 3, runs.wrong.output[-4000:]
    message = (f"cluster {CLUSTER}: authentication failed (SASL_AUTHENTICATION_FAILED: "
               "Authentication failed during authentication due to invalid credentials with "
               "SASL mechanism SCRAM-SHA-256)")
    doc = runs.wrong.json()
    assert (doc["exit_code"], doc["error"]) == (3, message)
    run = (spark.read.format("delta").load(str(runs.warehouse / "provision_runs"))
           .where(f"run_id = '{doc['run_id']}'").collect())
    assert [(r["command"], r["status"], r["exit_code"], r["message"]) for r in run] == [
        ("apply", "failed", 3, message)]
    audit = (spark.read.format("delta").load(str(runs.warehouse / "topic_audit"))
             .where(f"run_id = '{doc['run_id']}'").collect())
    assert audit == []
    assert runs.after_wrong == runs.after_apply


def test_no_password_reaches_any_output_table_or_exception(runs: Runs, spark: Any) -> None:
    texts = {}
    for name in ("plan", "apply", "replan", "wrong"):
        run: Completed = getattr(runs, name)
        texts[f"{name} stdout"] = run.stdout
        texts[f"{name} stderr"] = run.stderr
    texts["plan --json"] = json.dumps(runs.plan.json())
    texts["apply --json"] = json.dumps(runs.apply.json())
    texts["plan --out"] = (runs.work / "plan.json").read_text()
    event_logs = sorted((runs.work / "events").iterdir())
    texts["spark event log"] = "\n".join(f.read_text() for f in event_logs)
    for table in ("desired_topics", "topic_audit", "provision_runs", "topic_snapshots"):
        texts[f"table {table}"] = "\n".join(table_json(spark, runs.warehouse / table))
    # What the job raises on a refused login, with everything chained to it.
    with pytest.raises(ClusterUnreachable) as refused:
        _job_admin(runs.cluster, WRONG_PASSWORD, "PLAIN").__enter__()
    texts["exception"] = "".join(traceback.format_exception(refused.value)) \
        + repr(refused.value)
    # The searched texts are the real ones: the verbose run's log, the tables holding this
    # module's runs, the exception naming the refusal.
    assert " INFO provisioning." in texts["apply stdout"] \
        + texts["apply stderr"]
    assert runs.run_id(runs.apply) in texts["table topic_audit"]
    assert runs.run_id(runs.wrong) in texts["table provision_runs"]
    assert "Invalid username or password" in texts["exception"]
    assert [f.name.split("-")[0] for f in event_logs] == ["local"]  # the apply run's
    assert '"Event":"SparkListenerApplicationEnd"' in texts["spark event log"]
    assert "sec.ok.a" in texts["plan --out"]
    leaks = {(where, pw[:7]) for where, text in texts.items() for pw in PASSWORDS
             if pw in text}
    assert leaks == set()


# --- the adapter against the secured broker, without Spark --------------------------------------


def _job_admin(cluster: KafkaCluster, password: str, mechanism: str,
               user: str = "job") -> ClusterAdmin:
    conf = ClusterConf(CLUSTER, cluster.bootstrap_servers, "SASL_PLAINTEXT", mechanism)
    return ClusterAdmin(conf, Credentials(Secret(user), Secret(password)),
                        KafkaConf(request_timeout_ms=5000))


@pytest.mark.parametrize(("mechanism", "password"), [
    ("PLAIN", PLAIN_PASSWORD), ("SCRAM-SHA-256", SCRAM_PASSWORD),
    ("SCRAM-SHA-512", SCRAM_PASSWORD)], ids=["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_every_mechanism_logs_in_and_needs_no_cluster_acl_for_preflight(
        secure: KafkaCluster, mechanism: str, password: str) -> None:
    with _job_admin(secure, password, mechanism) as admin:
        state = admin.cluster_state()
    # no DescribeConfigs on the cluster: broker defaults are unknown, not guessed
    assert state == ClusterState(cluster_id=secure.cluster_id, controller_id=1,
                                 broker_ids=(1,), default_partitions=None,
                                 default_replication_factor=None)


@pytest.mark.parametrize(("mechanism", "reason"), [
    ("PLAIN", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-512", "Authentication failed during authentication due to invalid "
                      "credentials with SASL mechanism SCRAM-SHA-512")],
    ids=["PLAIN", "SCRAM-SHA-512"])
def test_a_refused_login_is_reported_as_such(secure: KafkaCluster, mechanism: str,
                                             reason: str) -> None:
    with pytest.raises(ClusterUnreachable) as err:
        _job_admin(secure, WRONG_PASSWORD, mechanism).__enter__()
    assert str(err.value) == (
        f"cluster {CLUSTER}: authentication failed (SASL_AUTHENTICATION_FAILED: {reason})")


def test_in_use_check_is_unknown_unless_every_group_is_visible(
        secure: KafkaCluster, runs: Runs) -> None:
    # `runs` first: the topic and group made here must not show in the CLI runs' state.
    super_user = secure.client_settings()
    topic = "sec.ok.groups"
    admin = KafkaAdminClient(**super_user)
    admin.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}},
                        raise_errors=True, wait_for_metadata=True)
    admin.close()
    consumer = KafkaConsumer(group_id="team-readers", enable_auto_commit=False, **super_user)
    consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(0, "", -1)})
    consumer.close()
    # `nogroups` may describe the topic and the groups named nogroups-*, nothing more
    grant(super_user, "User:nogroups", [
        ("TOPIC", topic, "LITERAL", ["DESCRIBE", "DESCRIBE_CONFIGS"]),
        ("GROUP", "nogroups-", "PREFIXED", ["DESCRIBE"])])
    at = dt.datetime(2026, 1, 1)
    groups_at = column_names(SNAPSHOT).index("consumer_groups")

    with _job_admin(secure, SCRAM_PASSWORD, "SCRAM-SHA-512", user="nogroups") as partial:
        assert partial.topics_in_use() is None
        rows = list(snapshot_rows(partial, "r", None, at, [topic]))
    assert [(r[column_names(SNAPSHOT).index("topic")], r[groups_at]) for r in rows] == [
        (topic, None)]

    with _job_admin(secure, SCRAM_PASSWORD, "SCRAM-SHA-512") as full:  # Group '*'
        in_use = full.topics_in_use()
    assert in_use is not None and in_use[topic] == ["team-readers"]


def test_sensitive_configs_stay_null_with_their_flag(secure: KafkaCluster) -> None:
    """No topic config is sensitive in Kafka 4.3: LogConfig defines no PASSWORD-type
    config and the broker refuses unknown topic config names, so DescribeConfigs and
    CreateTopics (KIP-525) mark none. Broker configs are, so the mapping is checked on
    the broker's real DescribeConfigs answer, as the super user."""
    admin_conf = ClusterConf(CLUSTER, secure.bootstrap_servers, "SASL_PLAINTEXT", "PLAIN")
    creds = Credentials(Secret("admin"), Secret(ADMIN_PASSWORD))
    with ClusterAdmin(admin_conf, creds, KafkaConf()) as admin:
        broker = {e["name"]: e for e in admin.broker_configs(1)}
        topic = admin.topic_configs(["sec.ok.same"], only_non_default=False)["sec.ok.same"]
    assert broker["listener.name.sasl.plain.sasl.jaas.config"] == {
        "name": "listener.name.sasl.plain.sasl.jaas.config", "value": None,
        "source": "STATIC_BROKER_CONFIG", "read_only": True, "sensitive": True}
    assert broker["num.partitions"]["sensitive"] is False
    assert broker["num.partitions"]["value"] == "1"
    assert all(e["value"] is None for e in broker.values() if e["sensitive"])
    assert ADMIN_PASSWORD not in json.dumps(list(broker.values()))
    assert len(topic) > 20
    assert [e["name"] for e in topic if e["sensitive"]] == []


def test_debug_logging_anywhere_never_shows_a_password(
        secure: KafkaCluster, caplog: pytest.LogCaptureFixture) -> None:
    leaky = ("kafka", "kafka.admin.client", "kafka.net.connection", "kafka.protocol.parser")
    levels = {name: logging.getLogger(name).level for name in leaky}
    caplog.set_level(logging.DEBUG)
    for name in leaky:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        for mechanism, password in (("PLAIN", PLAIN_PASSWORD),
                                    ("SCRAM-SHA-256", SCRAM_PASSWORD)):
            with _job_admin(secure, password, mechanism) as admin:
                admin.describe_topics(["sec.ok.same", "sec.out.old"])
        with pytest.raises(ClusterUnreachable):
            _job_admin(secure, WRONG_PASSWORD, "PLAIN").__enter__()
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
    messages = [r.getMessage() for r in caplog.records]
    # the capture did see the job's own DEBUG-level world (kafka-python at INFO)
    assert any(r.name.startswith("kafka") and r.levelno == logging.INFO
               for r in caplog.records)
    assert [m for m in messages for pw in PASSWORDS if pw in m] == []


def test_sasl_ssl_trusts_the_conf_ca_file_and_reports_refused_logins(
        secure: KafkaCluster, tls: TlsFiles, tmp_path: Path) -> None:
    bootstrap = secure.bootstrap_servers_for(TLS_LISTENER)
    conf = ClusterConf(CLUSTER, bootstrap, "SASL_SSL", "SCRAM-SHA-512",
                       ssl_cafile=str(tls.ca_file))
    timeouts = KafkaConf(request_timeout_ms=5000)

    with ClusterAdmin(conf, Credentials(Secret("job"), Secret(SCRAM_PASSWORD)),
                      timeouts) as admin:
        assert admin.cluster_state() == ClusterState(
            cluster_id=secure.cluster_id, controller_id=1, broker_ids=(1,))
        assert [t.name for t in admin.describe_topics(["sec.ok.same"])] == ["sec.ok.same"]

    with pytest.raises(ClusterUnreachable) as refused:
        ClusterAdmin(conf, Credentials(Secret("job"), Secret(WRONG_PASSWORD)),
                     timeouts).__enter__()
    assert str(refused.value) == (
        f"cluster {CLUSTER}: authentication failed (SASL_AUTHENTICATION_FAILED: "
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-512)")

    # a CA that did not sign the broker's certificate: no TLS session, so no login either
    stranger = TlsFiles.create(tmp_path / "other-ca")
    with pytest.raises(ClusterUnreachable) as untrusted:
        ClusterAdmin(dataclasses.replace(conf, ssl_cafile=str(stranger.ca_file)),
                     Credentials(Secret("job"), Secret(SCRAM_PASSWORD)), timeouts).__enter__()
    assert str(untrusted.value) == (
        f"cluster {CLUSTER} at {bootstrap} is unreachable (KafkaTimeoutError)")
