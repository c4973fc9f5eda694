"""SCRAM credentials (KIP-554) as desired state, through the job's CLI (thin clients of the
session's Connect server), against the session's SASL broker (emptied for this module: its
SCRAM users are `job` and `nogroups`, both mechanisms; the job logs in as `admin`, PLAIN).

One flow, each step read back from the broker and proved by logging in: a fresh client per
user and password (`logs_in`), the right one accepted and a wrong one refused.

    load_manifest  the rows the run refuses (an unreadable password file, sources the conf does
                   not allow: PATH and the job's own password variable, protected users)
    plan, apply    three users, two mechanisms; the refused rows rejected and blocked
    apply          the same rows again: nothing to do
    apply          usr-a's SCRAM-SHA-512 password_version bumped, with a new password
    apply x2       usr-c `state: absent`: kept without --allow-user-removals, gone with it
    report         --unmanaged-users
    check          unmanaged_user, and acl_without_user turned on
    import, plan   the live credentials as rows, each rejected until it has a password source

Every password of the flow is then searched for in the audit, runs and snapshot tables, the
plan file, each run's stdout and stderr, and the Connect server's log.
"""

from __future__ import annotations

import functools
import json
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from dev.devkafka import KafkaCluster
from provisioning.conf import ClusterConf, Credentials, KafkaConf, Secret
from provisioning.errors import ClusterUnreachable
from provisioning.kafka.client import ClusterAdmin
from provisioning.kinds.users.requests import describe_credentials
from provisioning.kinds.users.schema import USER_MANIFEST
from tests.helpers import Completed, grant, table_json, write_conf, write_manifest_table
from tests.support.brokers import ADMIN_PASSWORD, SCRAM_PASSWORD, reset

pytestmark = pytest.mark.integration

CLUSTER = "users"
S256, S512 = "SCRAM-SHA-256", "SCRAM-SHA-512"
ADMIN_USER_ENV, ADMIN_PASSWORD_ENV = "USR_TEST_ADMIN", "USR_TEST_ADMIN_PASSWORD"
# Known, unguessable passwords: every output of the flow is searched for them.
PW_A, PW_A2, PW_B, PW_C = (f"usrpw{secrets.token_hex(8)}" for _ in range(4))
WRONG = f"wrongpw{secrets.token_hex(8)}"
PASSWORDS = (PW_A, PW_A2, PW_B, PW_C, ADMIN_PASSWORD)
ENV = {ADMIN_USER_ENV: "admin", ADMIN_PASSWORD_ENV: ADMIN_PASSWORD, "USR_A_PW": PW_A,
       "USR_A2_PW": PW_A2, "USR_C_PW": PW_C}
KAFKA = KafkaConf(request_timeout_ms=5000)


def logs_in(cluster: KafkaCluster, user: str, password: str, mechanism: Any) -> bool:
    """Whether a fresh client logs in as `user` with `password` over `mechanism`."""
    conf = ClusterConf(CLUSTER, cluster.bootstrap_servers, "SASL_PLAINTEXT", mechanism)
    try:
        with ClusterAdmin(conf, Credentials(Secret(user), Secret(password)), KAFKA):
            return True
    except ClusterUnreachable as exc:
        assert "uthentication failed" in str(exc), str(exc)
        return False


def credentials(cluster: KafkaCluster) -> dict[str, dict[str, int]]:
    """Every SCRAM credential of the broker, as the super user reads it."""
    conf = ClusterConf(CLUSTER, cluster.bootstrap_servers, "SASL_PLAINTEXT", "PLAIN")
    with ClusterAdmin(conf, Credentials(Secret("admin"), Secret(ADMIN_PASSWORD)),
                      KAFKA) as admin:
        return {u: m for u, m in describe_credentials(admin).items() if m}


def write_users(spark: Any, path: Path, rows: list[dict[str, Any]]) -> None:
    cols = [f.name for f in USER_MANIFEST.fields]
    (spark.createDataFrame([tuple(r.get(c) for c in cols) for r in rows], USER_MANIFEST)
     .write.format("delta").mode("overwrite").option("overwriteSchema", "true")
     .save(str(path)))


def row(user: str, mechanism: str, **cols: Any) -> dict[str, Any]:
    return {"cluster": CLUSTER, "user": user, "mechanism": mechanism, "owner": "team-usr",
            **cols}


def good_rows(a512_version: str = "v1", a512_env: str = "USR_A_PW",
              c_state: str = "present", b_file: str = "") -> list[dict[str, Any]]:
    return [
        row("usr-a", S256, password_env="USR_A_PW", password_version="v1"),
        row("usr-a", S512, password_env=a512_env, password_version=a512_version),
        row("usr-b", S512, iterations=16384, password_file=b_file, password_version="v1"),
        row("usr-c", S256, iterations=4096, password_env="USR_C_PW", password_version="v1",
            state=c_state),
    ]


@dataclass
class Flow:
    cluster: KafkaCluster
    work: Path
    runs: dict[str, Completed] = field(default_factory=dict)
    logins: dict[str, dict[tuple[str, str, str], bool]] = field(default_factory=dict)
    live: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)

    @property
    def wh(self) -> Path:
        return self.work / "wh"

    def run_id(self, name: str) -> str:
        return str(self.runs[name].json()["run_id"])


@pytest.fixture(scope="module")
def flow(sasl_kafka: KafkaCluster, spark: Any, cli: Callable[..., Completed],
         connect_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    reset(sasl_kafka)
    work = tmp_path_factory.mktemp("usr")
    done = Flow(sasl_kafka, work)
    wh = done.wh
    pw_b = work / "pw_b"
    pw_b.write_text(PW_B + "\n")
    unreadable = work / "a-directory"
    unreadable.mkdir()
    write_manifest_table(spark, wh / "desired_topics", [])
    main = wh / "desired_users"
    write_users(spark, main, good_rows(b_file=str(pw_b)))

    def conf(name: str, tables: list[Path], **extra: Any) -> Path:
        return write_conf(work / name, sasl_kafka.bootstrap_servers, wh, cluster=CLUSTER,
                          cluster_extra={"security_protocol": "SASL_PLAINTEXT",
                                         "sasl_mechanism": "PLAIN",
                                         "sasl_username_env": ADMIN_USER_ENV,
                                         "sasl_password_env": ADMIN_PASSWORD_ENV},
                          extra={"tables": {
                              "manifests": [str(wh / "desired_topics")],
                              "audit": str(wh / "topic_audit"),
                              "runs": str(wh / "provision_runs"),
                              "snapshots": str(wh / "topic_snapshots"),
                              "user_manifests": [str(t) for t in tables]},
                              "users": {"iterations_min": 4096,
                                        "protected_users": ["nog*"], "batch_size": 2,
                                        "password_sources": {"env_prefix": "USR_",
                                                             "folders": [str(work)]}},
                              **extra})

    def run(name: str, *args: str, job: str = "jobs/provision_topics.py") -> Completed:
        done.runs[name] = cli(list(args), env=ENV, job=job)
        return done.runs[name]

    def snapshot(stage: str, *checks: tuple[str, str, str]) -> None:
        done.live[stage] = credentials(sasl_kafka)
        done.logins[stage] = {c: logs_in(sasl_kafka, *c) for c in checks}

    # The rows the run refuses, published from a YAML file.
    refused = work / "refused.yaml"
    refused.write_text(yaml.safe_dump([
        row("usr-bad", S512, password_file=str(unreadable), password_version="v1"),
        row("admin", S512, password_env="USR_A_PW"),
        row("nogroups", S512, password_env="USR_A_PW"),
        # Sources the conf does not allow: rejected at plan, never read.
        row("usr-path", S512, password_env="PATH", password_version="v1"),
        row("usr-jobpw", S512, password_env=ADMIN_PASSWORD_ENV, password_version="v1")]))
    run("load", "--source", str(refused), "--table", str(wh / "refused"), "--kind", "users",
        "--json", job="jobs/load_manifest.py")
    everything = conf("all.yaml", [main, wh / "refused"])
    good = conf("good.yaml", [main])

    # In text: what an operator reads of a refused row.
    run("plan", "plan", "--conf", str(everything), "--out", str(work / "plan.json"))
    snapshot("planned", ("usr-a", PW_A, S256))
    run("apply", "apply", "--conf", str(everything), "--plan", str(work / "plan.json"),
        "--json")
    snapshot("applied", ("usr-a", PW_A, S256), ("usr-a", PW_A, S512), ("usr-b", PW_B, S512),
             ("usr-c", PW_C, S256), ("usr-a", WRONG, S512), ("usr-b", PW_A, S512),
             ("nogroups", SCRAM_PASSWORD, S512), ("usr-bad", PW_A, S512))
    run("again", "apply", "--conf", str(good), "--json")
    snapshot("again")

    write_users(spark, main, good_rows("v2", "USR_A2_PW", b_file=str(pw_b)))
    run("rotate", "apply", "--conf", str(good), "--json")
    snapshot("rotated", ("usr-a", PW_A, S512), ("usr-a", PW_A2, S512), ("usr-a", PW_A, S256))

    write_users(spark, main, good_rows("v2", "USR_A2_PW", "absent", b_file=str(pw_b)))
    # In text: the line that tells an operator the removal waits for its flag.
    run("absent", "apply", "--conf", str(good))
    snapshot("kept", ("usr-c", PW_C, S256))
    run("remove", "apply", "--conf", str(good), "--allow-user-removals", "--json")
    snapshot("removed", ("usr-c", PW_C, S256))
    run("report", "report", "--conf", str(good), "--unmanaged-users", "--json")

    grant(sasl_kafka.client_settings(), "User:usr-ghost",
          [("TOPIC", "usr-orders", "LITERAL", ["READ"])])
    grant(sasl_kafka.client_settings(), "User:usr-a",
          [("TOPIC", "usr-orders", "LITERAL", ["WRITE"])])
    checking = conf("check.yaml", [main], checks={"severity": {
        "acl_without_user": "warning", **dict.fromkeys(TOPIC_RULES, "off")}})
    run("check", "check", "--conf", str(checking), "--json")

    run("import", "import", "--conf", str(good), "--users", "--table",
        str(wh / "imported"), "--owner", "platform", "--json")
    run("import-text", "import", "--conf", str(good), "--users", "--table",
        str(wh / "imported-text"), "--owner", "platform")
    adopted = conf("adopted.yaml", [main, wh / "imported"])
    run("adopted", "plan", "--conf", str(adopted), "--json")
    try:
        yield done
    finally:
        reset(sasl_kafka)


TOPIC_RULES = ("offline_partition", "under_replicated", "below_min_isr",
               "min_insync_within_rf", "unmanaged", "drift", "leader_not_preferred",
               "idle_topic", "empty_topic", "disk_usage", "disk_forecast")
FORMATTED = {"job": {S256: 4096, S512: 4096}, "nogroups": {S256: 4096, S512: 4096}}
GOOD = {"usr-a": {S256: 8192, S512: 8192}, "usr-b": {S512: 16384}, "usr-c": {S256: 4096}}


def audit(spark: Any, flow: Flow, run: str) -> list[tuple[Any, ...]]:
    """(user, mechanism, action, phase, outcome, iterations, found, password_version,
    error_name) of one run's credential rows."""
    rows = (spark.read.format("delta").load(str(flow.wh / "topic_audit"))
            .where(f"run_id = '{flow.run_id(run)}' AND credential IS NOT NULL").collect())
    return sorted((r["credential"]["user"], r["credential"]["mechanism"], r["action"],
                   r["phase"], r["outcome"], r["credential"]["iterations"],
                   r["credential"]["found"], r["credential"]["password_version"],
                   r["error_name"]) for r in rows)


def made(user: str, mechanism: str, iterations: int, version: str = "v1",
         found: int | None = None) -> list[tuple[Any, ...]]:
    """The rows of a credential set and read back."""
    return [(user, mechanism, "UPSERT", "apply", "upserted", iterations, found, version,
             "NONE"),
            (user, mechanism, "UPSERT", "plan", "planned", iterations, found, version, None),
            (user, mechanism, "UPSERT", "validate", "validated", iterations, found, version,
             "NONE"),
            (user, mechanism, "UPSERT", "verify", "upserted", iterations, iterations, version,
             "NONE")]


def unlisted(user: str, mechanism: str, iterations: int = 4096) -> tuple[Any, ...]:
    return (user, mechanism, "NOOP", "plan", "already_present", None, iterations, None, None)


def test_three_users_two_mechanisms_log_in_with_their_passwords_and_only_those(
        flow: Flow, spark: Any) -> None:
    assert flow.runs["load"].returncode == 0, flow.runs["load"].output[-3000:]
    assert flow.runs["load"].json()["rows"] == 5
    plan = flow.runs["plan"]
    assert plan.returncode == 1, plan.output[-3000:]
    # plan changes nothing.
    assert flow.live["planned"] == FORMATTED
    assert flow.logins["planned"] == {("usr-a", PW_A, S256): False}
    applied = flow.runs["apply"]
    assert applied.returncode == 1, applied.output[-3000:]
    assert flow.live["applied"] == {**FORMATTED, **GOOD}
    assert flow.logins["applied"] == {
        ("usr-a", PW_A, S256): True, ("usr-a", PW_A, S512): True, ("usr-b", PW_B, S512): True,
        ("usr-c", PW_C, S256): True, ("usr-a", WRONG, S512): False,
        ("usr-b", PW_A, S512): False, ("nogroups", SCRAM_PASSWORD, S512): True,
        ("usr-bad", PW_A, S512): False}
    doc = applied.json()["users"]
    assert doc["counts"] == {"upserted": 4, "rejected": 3, "blocked": 2, "already_present": 3}
    assert doc["unmanaged"] == {CLUSTER: 3}
    bad = ("password_file: the file it names gives no password (missing, unreadable, not a "
           "regular file, empty or over 4096 bytes)")
    assert audit(spark, flow, "apply") == sorted([
        *made("usr-a", S256, 8192), *made("usr-a", S512, 8192), *made("usr-b", S512, 16384),
        *made("usr-c", S256, 4096),
        ("usr-bad", S512, "UPSERT", "plan", "planned", 8192, None, "v1", None),
        ("usr-bad", S512, "UPSERT", "validate", "rejected", 8192, None, "v1",
         "INVALID_MANIFEST_ROW"),
        ("usr-path", S512, "UPSERT", "plan", "rejected", 8192, None, "v1",
         "INVALID_MANIFEST_ROW"),
        ("usr-jobpw", S512, "UPSERT", "plan", "rejected", 8192, None, "v1",
         "INVALID_MANIFEST_ROW"),
        ("admin", S512, "UPSERT", "plan", "blocked", 8192, None, None, "POLICY_VIOLATION"),
        ("nogroups", S512, "UPSERT", "plan", "blocked", 8192, 4096, None, "POLICY_VIOLATION"),
        unlisted("job", S256), unlisted("job", S512), unlisted("nogroups", S256)])
    messages = {(r["credential"]["user"], r["phase"]): r["error_message"] for r in
                spark.read.format("delta").load(str(flow.wh / "topic_audit"))
                .where(f"run_id = '{flow.run_id('apply')}' AND credential IS NOT NULL")
                .where("outcome IN ('rejected', 'blocked')").collect()}
    assert messages == {
        ("usr-bad", "validate"): bad,
        ("usr-path", "plan"): "password_env: not a variable users.password_sources allows (a "
                              "name starting with USR_)",
        ("usr-jobpw", "plan"): "password: the variable or file it names holds a secret the "
                               "job itself uses for a cluster; a user's password never comes "
                               "from there",
        ("admin", "plan"): "protected_users: credential admin SCRAM-SHA-512: it is the user "
                           "the job logs in as on this cluster; the job never changes or "
                           "removes it (change it by hand, or take it out of "
                           "users.protected_users first)",
        ("nogroups", "plan"): "protected_users: credential nogroups SCRAM-SHA-512: "
                              "users.protected_users protects it (nog*); the job never "
                              "changes or removes it (change it by hand, or take it out of "
                              "users.protected_users first)"}
    assert f"  ! {CLUSTER} credential usr-bad SCRAM-SHA-512 (none) -> 8192 iterations, " \
           f"password_version v1  rejected: {bad}" in plan.stdout


def test_a_second_apply_is_a_no_op(flow: Flow, spark: Any) -> None:
    again = flow.runs["again"]
    assert again.returncode == 0, again.output[-3000:]
    assert again.json()["users"]["counts"] == {"already_present": 8}
    assert flow.live["again"] == {**FORMATTED, **GOOD}


def test_a_new_password_version_sets_the_new_password_and_the_old_one_stops_working(
        flow: Flow, spark: Any) -> None:
    rotated = flow.runs["rotate"]
    assert rotated.returncode == 0, rotated.output[-3000:]
    assert rotated.json()["users"]["counts"] == {"upserted": 1, "already_present": 7}
    assert flow.logins["rotated"] == {("usr-a", PW_A, S512): False,
                                      ("usr-a", PW_A2, S512): True,
                                      ("usr-a", PW_A, S256): True}
    assert [r for r in audit(spark, flow, "rotate") if r[4] != "already_present"] == \
        made("usr-a", S512, 8192, "v2", found=8192)
    assert flow.live["rotated"] == {**FORMATTED, **GOOD}


def test_an_absent_row_removes_the_credential_only_with_the_flag(flow: Flow) -> None:
    kept = flow.runs["absent"]
    assert kept.returncode == 0, kept.output[-3000:]
    assert "1 credential removal(s) not made: run apply with --allow-user-removals" in \
        kept.stdout
    assert flow.logins["kept"] == {("usr-c", PW_C, S256): True}
    assert flow.live["kept"] == {**FORMATTED, **GOOD}
    removed = flow.runs["remove"]
    assert (removed.returncode, removed.json()["users"]["counts"]) == \
        (0, {"deleted": 1, "already_present": 7}), removed.stdout[-3000:]
    assert flow.logins["removed"] == {("usr-c", PW_C, S256): False}
    assert flow.live["removed"] == {**FORMATTED, "usr-a": GOOD["usr-a"],
                                    "usr-b": GOOD["usr-b"]}


def test_report_lists_the_credentials_no_manifest_names(flow: Flow) -> None:
    report = flow.runs["report"]
    assert report.returncode == 0, report.output[-3000:]
    blocks = report.json()["unmanaged_users"]
    assert [(b["cluster"], [(c["user"], c["mechanism"], c["iterations"], c["credential"])
                            for c in b["credentials"]]) for b in blocks] == [
        (CLUSTER, [(u, m, 4096, f"{u} {m}") for u in ("job", "nogroups")
                   for m in (S256, S512)])]


def test_check_finds_unmanaged_credentials_and_bindings_of_users_without_one(
        flow: Flow) -> None:
    checked = flow.runs["check"]
    assert checked.returncode == 0, checked.output[-3000:]
    assert sorted((v["rule"], v["severity"], v["detail"])
                  for v in checked.json()["violations"]) == sorted([
        *[("unmanaged_user", "info", f"credential {u} {m} (4096 iterations): named by no "
                                     "user manifest row (import --users adopts it)")
          for u, m in (("job", S256), ("job", S512), ("nogroups", S256),
                       ("nogroups", S512))],
        ("acl_without_user", "warning", "ACL binding User:usr-ghost READ TOPIC usr-orders: "
                                        "the principal has no SCRAM credential on this "
                                        "cluster")])


def test_imported_credentials_plan_as_rejected_until_they_name_a_password_source(
        flow: Flow, spark: Any) -> None:
    imported = flow.runs["import"]
    assert imported.returncode == 0, imported.output[-3000:]
    doc = imported.json()
    assert [(c["cluster"], c["rows_written"], c["credentials_written"])
            for c in doc["clusters"]] == [(CLUSTER, 4, 4)]
    assert doc["needs_password_source"] == 4
    assert "next: each of the 4 row(s) has no password source: fill in password_env or " \
           "password_file" in flow.runs["import-text"].stdout
    by_text = functools.partial(json.dumps, sort_keys=True)
    written = sorted((json.loads(r) for r in table_json(spark, flow.wh / "imported")),
                     key=by_text)
    assert written == sorted([
        {"cluster": CLUSTER, "user": u, "mechanism": m, "iterations": 4096,
         "password_env": None, "password_file": None, "password_version": None,
         "state": "present", "owner": "platform", "force": None}
        for u in ("job", "nogroups") for m in (S256, S512)], key=by_text)
    adopted = flow.runs["adopted"]
    assert adopted.returncode == 1, adopted.output[-3000:]
    assert adopted.json()["users"]["counts"] == {"rejected": 4, "already_present": 3,
                                                 "already_absent": 1}
    no_source = ("password: no password source; set password_env or password_file (the job "
                 "reads the password there; never put it in the table)")
    assert sorted((c["user"], c["mechanism"], c["action"], c["outcome"], c["iterations"],
                   c["found"], c["error_message"])
                  for c in adopted.json()["users"]["credentials"]
                  if c["outcome"] != "already_absent") == [
        (u, m, "NOOP", "rejected", 4096, 4096, no_source)
        for u in ("job", "nogroups") for m in (S256, S512)]


def test_no_password_is_in_any_table_plan_file_output_or_log(
        flow: Flow, spark: Any, connect_server: Any) -> None:
    texts: dict[str, str] = {}
    for name, done in flow.runs.items():
        texts[f"{name} stdout"], texts[f"{name} stderr"] = done.stdout, done.stderr
    texts["plan file"] = (flow.work / "plan.json").read_text()
    for table in ("topic_audit", "provision_runs", "topic_snapshots_users", "desired_users",
                  "imported", "refused"):
        texts[table] = "\n".join(table_json(spark, flow.wh / table))
    texts["connect server log"] = Path(connect_server.log_file).read_text(errors="replace")
    # The texts searched are the real ones.
    assert flow.run_id("rotate") in texts["topic_audit"]
    assert "usr-bad" in texts["plan file"] and "v2" in texts["topic_snapshots_users"]
    leaks = {(where, pw[:7]) for where, text in texts.items() for pw in PASSWORDS
             if pw in text}
    assert leaks == set()

