"""Consumer groups as desired state, through the job's CLI (in this process, on the tests'
SparkSession), against the session's plain broker, with real kafka-python consumers. Every
group of this module is named under its own prefix (`P`); the broker's other groups are
other tests' and are left out of every assertion.

    setup        a topic with 3 records; `old`, `tuned` and `adopt` consume them, commit and
                 stop (classic groups, Empty); `busy` keeps polling in a thread (Stable, one
                 member); `adopt` gets a config of its own by hand
    load         bad rows from a YAML file (`load_manifest --kind groups`)
    plan, apply  (the plan saved, then applied with --plan) `tuned`'s configs set and read
                 back; `typo`'s unknown config refused by the broker at validateOnly;
                 `old` absent, kept without --allow-group-removals; `busy` absent, refused
                 with its type, state and members; `keep-1` protected; the bad rows
                 rejected by name
    remove       with --allow-group-removals: `old` deleted, `busy` still refused and live
    report       --unmanaged-groups
    check        the live groups no manifest names, as `unmanaged_group` findings
    import       the live groups no manifest names, with their configs; a plan over them and
                 the manifest changes nothing

    kip848       (its own topic, manifest and runs) `kip848`, a KIP-848 consumer group whose
                 one member is a Java KafkaConsumer with `group.protocol=consumer`
                 (tests/java ConsumerGroupMember): absent with --allow-group-removals,
                 refused while the member lives; deleted once it left and the group is Empty

Each stage's broker state is read with kafka-python's own admin client (not the job's).
"""

from __future__ import annotations

import os
import queue
import secrets
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from provisioning.kinds.groups.schema import GROUP_MANIFEST
from tests.helpers import REPO, Completed, run_cli_in_process, write_conf, write_manifest_table

pytestmark = pytest.mark.integration

P = f"grp{secrets.token_hex(3)}-"
TOPIC = f"{P}events"
OLD, BUSY, TUNED, TYPO, KEEP, ADOPT = (f"{P}{n}" for n in ("old", "busy", "tuned", "typo",
                                                            "keep-1", "adopt"))
KIP, KIP_TOPIC = f"{P}kip848", f"{P}kip848-events"
TUNING = {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}
TOPIC_RULES = ("offline_partition", "under_replicated", "below_min_isr",
               "min_insync_within_rf", "unmanaged", "drift", "leader_not_preferred",
               "idle_topic", "empty_topic", "disk_usage", "disk_forecast")


def consume_and_stop(bootstrap: str, group: str) -> None:
    """A classic group that reads the topic's 3 records, commits and stops (Empty)."""
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    read, deadline = 0, time.monotonic() + 60
    while read < 3 and time.monotonic() < deadline:
        read += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
    assert read == 3
    consumer.commit()
    consumer.close()


class Member(threading.Thread):
    """A consumer of `group` that keeps polling until stopped (one live member)."""

    def __init__(self, bootstrap: str, group: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.group, self.stop = bootstrap, group, threading.Event()

    def run(self) -> None:
        consumer = KafkaConsumer(TOPIC, bootstrap_servers=self.bootstrap, group_id=self.group,
                                 auto_offset_reset="earliest", enable_auto_commit=True)
        while not self.stop.is_set():
            consumer.poll(timeout_ms=200)
        consumer.close()


def groups(admin: KafkaAdminClient) -> dict[str, tuple[str, str]]:
    """group -> (type, state) of this module's groups, as ListGroups says."""
    return {g["group_id"]: (g["group_type"], g["group_state"]) for g in admin.list_groups()
            if g["group_id"].startswith(P)}


def own_configs(admin: KafkaAdminClient, group: str) -> dict[str, str]:
    """The configs set on `group` itself (DescribeConfigs of the group resource)."""
    found = admin.describe_configs([ConfigResource(ConfigResourceType.GROUP, group)])
    return {k: v["value"] for k, v in found["group"][group].items()
            if v["config_source"] == "DYNAMIC_GROUP_CONFIG"}


def members(admin: KafkaAdminClient, group: str) -> int:
    return len(admin.describe_groups([group])[group]["members"])


def wait_for(what: str, check: Any, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def write_groups(spark: Any, path: Path, rows: list[dict[str, Any]]) -> None:
    cols = [f.name for f in GROUP_MANIFEST.fields]
    (spark.createDataFrame([tuple(r.get(c) for c in cols) for r in rows], GROUP_MANIFEST)
     .write.format("delta").mode("overwrite").option("overwriteSchema", "true")
     .save(str(path)))


def row(group: str, **cols: Any) -> dict[str, Any]:
    return {"cluster": "local", "group": group, "owner": "team-grp", **cols}


def group_conf(path: Path, bootstrap: str, wh: Path, tables: list[Path]) -> Path:
    """The job's conf of this module: the groups of `tables`, `keep-*` protected, two
    groups a request, no topic check."""
    return write_conf(path, bootstrap, wh, extra={
        "tables": {"manifests": [str(wh / "desired_topics")],
                   "audit": str(wh / "topic_audit"), "runs": str(wh / "provision_runs"),
                   "snapshots": str(wh / "topic_snapshots"),
                   "group_manifests": [str(t) for t in tables]},
        "groups": {"protected_groups": [f"{P}keep-*"], "batch_size": 2},
        "checks": {"severity": dict.fromkeys(TOPIC_RULES, "off")}})


@dataclass
class Flow:
    work: Path
    runs: dict[str, Completed] = field(default_factory=dict)
    live: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    configs: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    busy_members: dict[str, int] = field(default_factory=dict)

    @property
    def wh(self) -> Path:
        return self.work / "wh"

    def run_id(self, name: str) -> str:
        return str(self.runs[name].json()["run_id"])


@pytest.fixture(scope="module")
def flow(kafka: Any, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    bootstrap = kafka.bootstrap_servers
    done = Flow(tmp_path_factory.mktemp("grp"))
    wh = done.wh
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(TOPIC, 1, 1)])
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(3):
        producer.send(TOPIC, f"record-{i}".encode())
    producer.flush()
    producer.close()
    for group in (OLD, TUNED, ADOPT):
        consume_and_stop(bootstrap, group)
    admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, ADOPT,
                                        {"consumer.heartbeat.interval.ms": "7000"})],
                        raise_on_unknown=False, incremental=True)
    member = Member(bootstrap, BUSY)
    member.start()
    wait_for("busy to be Stable", lambda: groups(admin).get(BUSY) == ("classic", "Stable"))

    write_manifest_table(spark, wh / "desired_topics", [])
    main = wh / "desired_groups"
    write_groups(spark, main, [
        row(OLD, state="absent"), row(BUSY, state="absent"),
        row(TUNED, configs=TUNING),
        row(TYPO, configs={"consumer.sesion.timeout.ms": "50000"}),
        row(KEEP, configs={"consumer.session.timeout.ms": "50000"})])
    bad = done.work / "bad.yaml"
    bad.write_text(yaml.safe_dump([
        row("   "), row(f"{P}gone", state="gone"),
        row(f"{P}nullcfg", configs={"consumer.session.timeout.ms": None}),
        row(f"{P}absentcfg", state="absent", configs={"consumer.session.timeout.ms": 50000})]))

    from provisioning.cli.load_manifest import main as load_manifest

    loaded = CliRunner().invoke(load_manifest, ["--source", str(bad), "--table",
                                                str(wh / "bad_groups"), "--kind", "groups",
                                                "--json"], catch_exceptions=False)
    done.runs["load"] = Completed(loaded.exit_code, loaded.stdout, loaded.stderr)

    def conf(name: str, tables: list[Path]) -> Path:
        return group_conf(done.work / name, bootstrap, wh, tables)

    def run(name: str, *args: str) -> None:
        done.runs[name] = run_cli_in_process(list(args))

    def record(stage: str) -> None:
        done.live[stage] = groups(admin)
        done.configs[stage] = {g: own_configs(admin, g) for g in (TUNED, TYPO, KEEP, ADOPT)}
        done.busy_members[stage] = members(admin, BUSY)

    everything, good = conf("all.yaml", [main, wh / "bad_groups"]), conf("good.yaml", [main])
    try:
        record("before")
        run("plan", "plan", "--conf", str(everything), "--out", str(done.work / "plan.json"))
        run("apply", "apply", "--conf", str(everything), "--plan", str(done.work / "plan.json"),
            "--json")
        record("applied")
        run("remove", "apply", "--conf", str(good), "--allow-group-removals", "--json")
        record("removed")
        run("report", "report", "--conf", str(good), "--unmanaged-groups", "--json")
        run("report-text", "report", "--conf", str(good), "--unmanaged-groups")
        run("check", "check", "--conf", str(good), "--json")
        run("import", "import", "--conf", str(good), "--groups", "--table",
            str(wh / "imported"), "--owner", "platform", "--json")
        run("adopted", "plan", "--conf", str(conf("adopted.yaml", [main, wh / "imported"])),
            "--json")
        yield done
    finally:
        member.stop.set()
        member.join(30)
        admin.close()


def audit(spark: Any, flow: Flow, run: str) -> list[tuple[Any, ...]]:
    """(group, action, phase, outcome, type, state, members, configs, found, error_name) of
    one run's rows about this module's groups."""
    rows = (spark.read.format("delta").load(str(flow.wh / "topic_audit"))
            .where(f"run_id = '{flow.run_id(run)}' AND consumer_group IS NOT NULL").collect())
    found = [(r["consumer_group"], r) for r in rows]
    return sorted((g["group"], r["action"], r["phase"], r["outcome"], g["type"],
                   g["group_state"], g["members"], g["configs"], g["found"], r["error_name"])
                  for g, r in found if (g["group"] or "").startswith((P, "   ")))


def messages(spark: Any, flow: Flow, run: str) -> dict[tuple[str, str], str]:
    rows = (spark.read.format("delta").load(str(flow.wh / "topic_audit"))
            .where(f"run_id = '{flow.run_id(run)}' AND consumer_group IS NOT NULL")
            .where("outcome IN ('rejected', 'blocked')").collect())
    return {(r["consumer_group"]["group"], r["phase"]): r["error_message"] for r in rows}


EMPTY = ("classic", "Empty")


def test_the_groups_before_the_runs(flow: Flow) -> None:
    assert flow.live["before"] == {OLD: EMPTY, TUNED: EMPTY, ADOPT: EMPTY,
                                   BUSY: ("classic", "Stable")}
    assert flow.busy_members["before"] == 1
    assert flow.configs["before"] == {TUNED: {}, TYPO: {}, KEEP: {},
                                      ADOPT: {"consumer.heartbeat.interval.ms": "7000"}}


def test_bad_rows_are_loaded_then_rejected_by_name_while_the_others_go_on(
        flow: Flow, spark: Any) -> None:
    assert flow.runs["load"].returncode == 0, flow.runs["load"].output[-3000:]
    assert flow.runs["load"].json()["rows"] == 4
    plan = flow.runs["plan"]
    assert plan.returncode == 1, plan.output[-3000:]
    assert f"group {P}gone" in plan.stdout and "rejected: state: 'gone' must be present or " \
        "absent" in plan.stdout
    applied = flow.runs["apply"]
    assert applied.returncode == 1, applied.output[-3000:]
    assert {k: v for k, v in messages(spark, flow, "apply").items()
            if k[1] == "plan" and k[0] not in (BUSY, KEEP)} == {
        ("   ", "plan"): "group: '   ' is not a group id the job manages (1 to 255 "
                        "characters, no control character, not blank)",
        (f"{P}gone", "plan"): "state: 'gone' must be present or absent",
        (f"{P}nullcfg", "plan"): "configs: consumer.session.timeout.ms has no value (null); "
                                 "give each config a value, or leave it out",
        (f"{P}absentcfg", "plan"): "configs: an absent group sets no configs; leave configs "
                                   "out or make the row present"}


def test_a_groups_configs_are_set_and_read_back_and_an_unknown_one_is_refused_by_the_broker(
        flow: Flow, spark: Any) -> None:
    assert flow.configs["applied"] == {TUNED: TUNING, TYPO: {}, KEEP: {},
                                       ADOPT: {"consumer.heartbeat.interval.ms": "7000"}}
    rows = audit(spark, flow, "apply")
    assert [r for r in rows if r[0] in (TUNED, TYPO, KEEP)] == [
        (KEEP, "ALTER", "plan", "blocked", None, None, None,
         {"consumer.session.timeout.ms": "50000"}, None, "POLICY_VIOLATION"),
        (TUNED, "ALTER", "apply", "altered", "classic", "Empty", 0, TUNING, {}, "NONE"),
        (TUNED, "ALTER", "plan", "planned", "classic", "Empty", 0, TUNING, {}, None),
        (TUNED, "ALTER", "validate", "validated", "classic", "Empty", 0, TUNING, {}, "NONE"),
        (TUNED, "ALTER", "verify", "altered", "classic", "Empty", 0, TUNING, TUNING, "NONE"),
        (TYPO, "ALTER", "plan", "planned", None, None, None,
         {"consumer.sesion.timeout.ms": "50000"}, None, None),
        (TYPO, "ALTER", "validate", "rejected", None, None, None,
         {"consumer.sesion.timeout.ms": "50000"}, None, "INVALID_CONFIG")]
    found = messages(spark, flow, "apply")
    assert found[(TYPO, "validate")] == "Unknown group config name: consumer.sesion.timeout.ms"
    assert found[(KEEP, "plan")] == (
        f"protected_groups: group {KEEP}: groups.protected_groups protects it ({P}keep-*); "
        "the job never changes or deletes it (change it by hand, or take it out of "
        "groups.protected_groups first)")


def test_an_absent_group_is_deleted_only_with_the_flag_and_only_without_members(
        flow: Flow, spark: Any) -> None:
    busy = (f"group_members: group {BUSY}: it has 1 member(s) (type classic, state Stable); "
            "a group is deleted only when it has none: stop its consumers first (`force` "
            "does not lift this policy)")
    assert flow.live["applied"] == {OLD: EMPTY, TUNED: EMPTY, ADOPT: EMPTY,
                                    BUSY: ("classic", "Stable")}
    assert [r for r in audit(spark, flow, "apply") if r[0] in (OLD, BUSY)] == [
        (BUSY, "DELETE", "plan", "blocked", "classic", "Stable", 1, None, {},
         "POLICY_VIOLATION"),
        (OLD, "DELETE", "plan", "planned", "classic", "Empty", 0, None, {}, None),
        (OLD, "DELETE", "validate", "validated", "classic", "Empty", 0, None, {}, "NONE")]
    assert messages(spark, flow, "apply")[(BUSY, "plan")] == busy
    assert flow.runs["apply"].json()["groups"]["removals_not_allowed"] == 1

    removed = flow.runs["remove"]
    assert removed.returncode == 1, removed.output[-3000:]
    assert flow.live["removed"] == {TUNED: EMPTY, ADOPT: EMPTY, BUSY: ("classic", "Stable")}
    assert flow.busy_members["removed"] == 1
    assert [r for r in audit(spark, flow, "remove") if r[0] in (OLD, BUSY, TUNED)] == [
        (BUSY, "DELETE", "plan", "blocked", "classic", "Stable", 1, None, {},
         "POLICY_VIOLATION"),
        (OLD, "DELETE", "apply", "deleted", "classic", "Empty", 0, None, {}, "NONE"),
        (OLD, "DELETE", "plan", "planned", "classic", "Empty", 0, None, {}, None),
        (OLD, "DELETE", "validate", "validated", "classic", "Empty", 0, None, {}, "NONE"),
        (OLD, "DELETE", "verify", "deleted", "classic", "Empty", 0, None, None, "NONE"),
        (TUNED, "NOOP", "plan", "already_present", "classic", "Empty", 0, TUNING, TUNING,
         None)]
    assert messages(spark, flow, "remove")[(BUSY, "plan")] == busy


def test_report_lists_the_live_groups_no_manifest_names(flow: Flow) -> None:
    report = flow.runs["report"]
    assert report.returncode == 0, report.output[-3000:]
    assert [(b["cluster"], [(g["group"], g["type"], g["group_state"], g["members"],
                             g["configs"]) for g in b["groups"] if g["group"].startswith(P)])
            for b in report.json()["unmanaged_groups"]] == [
        ("local", [(ADOPT, "classic", "Empty", 0, {"consumer.heartbeat.interval.ms": "7000"})])]
    assert (f"  ? group {ADOPT} (classic, Empty) consumer.heartbeat.interval.ms=7000"
            in flow.runs["report-text"].stdout)


def test_check_reports_each_live_group_no_manifest_names_as_info(flow: Flow) -> None:
    checked = flow.runs["check"]
    assert checked.returncode == 0, checked.output[-3000:]
    assert sorted((v["rule"], v["severity"], v["detail"]) for v in checked.json()["violations"]
                  if v["rule"] == "unmanaged_group" and P in v["detail"]) == [
        ("unmanaged_group", "info", f"group {ADOPT} (type classic, state Empty): named by no "
                                    "group manifest row (import --groups adopts it)")]
    assert [v for v in checked.json()["violations"] if P in str(v.get("detail"))
            and v["rule"] != "unmanaged_group"] == []


def test_import_writes_the_unnamed_live_groups_with_their_configs(
        flow: Flow, spark: Any) -> None:
    imported = flow.runs["import"]
    assert imported.returncode == 0, imported.output[-3000:]
    written = (spark.read.format("delta").load(str(flow.wh / "imported"))
               .where(f"`group` LIKE '{P}%'"))
    expected = spark.createDataFrame([
        ("local", ADOPT, "present", {"consumer.heartbeat.interval.ms": "7000"}, "platform",
         None)], GROUP_MANIFEST)
    assert sorted(written.collect()) == sorted(expected.collect())
    adopted = flow.runs["adopted"]
    assert adopted.returncode == 1, adopted.output[-3000:]
    assert [r for r in audit(spark, flow, "adopted") if r[0] in (ADOPT, TUNED)] == [
        (ADOPT, "NOOP", "plan", "already_present", "classic", "Empty", 0,
         {"consumer.heartbeat.interval.ms": "7000"},
         {"consumer.heartbeat.interval.ms": "7000"}, None),
        (TUNED, "NOOP", "plan", "already_present", "classic", "Empty", 0, TUNING, TUNING,
         None)]


class JavaMember:
    """A KIP-848 consumer group's one live member: tests/java's ConsumerGroupMember (a Java
    KafkaConsumer with `group.protocol=consumer`) in its own process, polling until its
    stdin closes. Its stderr goes to `log`."""

    def __init__(self, policy_jar: Path, bootstrap: str, group: str, topic: str,
                 log: Path) -> None:
        jars = REPO / ".cache" / "jars" / "kafka" / "*"
        self.log = log
        with log.open("w") as err:
            self.process = subprocess.Popen(
                ["java", "-cp", f"{policy_jar}{os.pathsep}{jars}",
                 "provisioning.testing.ConsumerGroupMember", bootstrap, group, topic],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_assigned(self, timeout_s: float = 120) -> str:
        """The member's `assigned ...` line (it then has its partitions)."""
        try:
            line = self.lines.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError("the Java member printed no assignment: "
                                 + self.log.read_text()[-3000:]) from None
        assert line.startswith("assigned "), line
        return line

    def stop(self) -> int:
        """Close its stdin (it leaves the group and exits); its exit code."""
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                return self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        return int(self.process.returncode)


@pytest.fixture(scope="module")
def kip848(kafka: Any, spark: Any, policy_jar: Path,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    """`kip848`'s runs: `refused` while its Java member lives, `deleted` once it left; the
    live groups after each (`member`, `refused`, `left`, `deleted`), and the member's exit
    code in busy_members["exit"]."""
    bootstrap = kafka.bootstrap_servers
    done = Flow(tmp_path_factory.mktemp("grp-kip848"))
    wh = done.wh
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(KIP_TOPIC, 1, 1)])
    write_manifest_table(spark, wh / "desired_topics", [])
    write_groups(spark, wh / "desired_groups", [row(KIP, state="absent")])
    conf = group_conf(done.work / "kip848.yaml", bootstrap, wh, [wh / "desired_groups"])
    member = JavaMember(policy_jar, bootstrap, KIP, KIP_TOPIC, done.work / "member.log")
    try:
        member.wait_assigned()
        wait_for("kip848 to be Stable",
                 lambda: groups(admin).get(KIP) == ("consumer", "Stable"))
        done.live["member"] = groups(admin)
        done.runs["refused"] = run_cli_in_process(
            ["apply", "--conf", str(conf), "--allow-group-removals", "--json"])
        done.live["refused"] = groups(admin)
        done.busy_members["exit"] = member.stop()
        wait_for("kip848 to be Empty", lambda: groups(admin).get(KIP) == ("consumer", "Empty"))
        done.live["left"] = groups(admin)
        done.runs["deleted"] = run_cli_in_process(
            ["apply", "--conf", str(conf), "--allow-group-removals", "--json"])
        done.live["deleted"] = groups(admin)
        yield done
    finally:
        member.stop()
        admin.close()


def test_a_kip848_consumer_group_with_a_live_java_member_is_refused_then_deleted_once_empty(
        kip848: Flow, spark: Any) -> None:
    def ours(stage: str) -> dict[str, tuple[str, str]]:
        return {g: s for g, s in kip848.live[stage].items() if g == KIP}

    assert ours("member") == {KIP: ("consumer", "Stable")}
    refused = kip848.runs["refused"]
    assert refused.returncode == 1, refused.output[-3000:]
    assert [r for r in audit(spark, kip848, "refused") if r[0] == KIP] == [
        (KIP, "DELETE", "plan", "blocked", "consumer", "Stable", None, None, {},
         "POLICY_VIOLATION")]
    assert messages(spark, kip848, "refused")[(KIP, "plan")] == (
        f"group_members: group {KIP}: it has an unknown number of member(s) (type consumer, "
        "state Stable); a group is deleted only when it has none: stop its consumers first "
        "(`force` does not lift this policy)")
    assert ours("refused") == {KIP: ("consumer", "Stable")}

    assert kip848.busy_members["exit"] == 0
    assert ours("left") == {KIP: ("consumer", "Empty")}
    deleted = kip848.runs["deleted"]
    assert deleted.returncode == 0, deleted.output[-3000:]
    assert [r for r in audit(spark, kip848, "deleted") if r[0] == KIP] == [
        (KIP, "DELETE", "apply", "deleted", "consumer", "Empty", 0, None, {}, "NONE"),
        (KIP, "DELETE", "plan", "planned", "consumer", "Empty", 0, None, {}, None),
        (KIP, "DELETE", "validate", "validated", "consumer", "Empty", 0, None, {}, "NONE"),
        (KIP, "DELETE", "verify", "deleted", "consumer", "Empty", 0, None, None, "NONE")]
    assert ours("deleted") == {}
