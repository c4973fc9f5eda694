"""Offset reset requests through the job's CLI (in this process, on the tests' SparkSession),
against the session's plain broker, with real kafka-python consumers. Every group and topic
of this module is named under its own prefix (`P`).

    setup        a topic of 2 partitions with 5 records each; `move`, `del` and `keep-1`
                 read all 10, commit (5, 5) and stop (classic groups, Empty); `busy` keeps
                 polling in a thread (Stable, one member)
    load         bad requests from a YAML file (`load_manifest --kind offset-resets`)
    plan         every request planned per partition; the bad rows rejected by name
    apply        without --allow-offset-resets: validated, nothing sent
    allowed      with it: `move` to offset 2 on both partitions, read back; `del`'s offsets
                 deleted; `busy` refused by name at validate (RESET), and its DELETE refused
                 by the broker (GROUP_SUBSCRIBED_TO_TOPIC); `keep-1` protected
    consumer     `move`'s consumer reads from offset 2 on each partition, commits (5, 5)
    again        the same requests applied again: `move` and `del` done by `allowed`'s run,
                 nothing sent; the offsets the consumer committed since left as they are
    ad hoc       `reset-offsets` without --execute changes nothing; with it, the request
                 is appended to the requests table, applied and audited

Each stage's committed offsets are read with kafka-python's own admin client (not the
job's).
"""

from __future__ import annotations

import secrets
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
from kafka.admin import NewTopic

from provisioning.kinds.offsets.schema import OFFSET_RESET_MANIFEST
from tests.helpers import Completed, run_cli_in_process, write_conf, write_manifest_table

pytestmark = pytest.mark.integration

P = f"ofc{secrets.token_hex(3)}-"
TOPIC = f"{P}events"
MOVE, DEL, BUSY, KEEP, ADHOC = (f"{P}{n}" for n in ("move", "del", "busy", "keep-1",
                                                     "adhoc"))
TOPIC_RULES = ("offline_partition", "under_replicated", "below_min_isr",
               "min_insync_within_rf", "unmanaged", "drift", "leader_not_preferred",
               "idle_topic", "empty_topic", "disk_usage", "disk_forecast")


def consume_and_stop(bootstrap: str, group: str) -> None:
    """A classic group that reads the topic's 10 records, commits (5, 5) and stops."""
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    read, deadline = 0, time.monotonic() + 60
    while read < 10 and time.monotonic() < deadline:
        read += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
    assert read == 10
    consumer.commit()
    consumer.close()


def first_offsets(bootstrap: str, group: str) -> dict[int, int]:
    """partition -> the offset of the first record a consumer of `group` reads there (from
    its committed offsets); it commits what it read and stops."""
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="none", enable_auto_commit=False)
    first: dict[int, int] = {}
    read, deadline = 0, time.monotonic() + 60
    while read < 6 and time.monotonic() < deadline:
        for tp, records in consumer.poll(timeout_ms=500).items():
            first.setdefault(tp.partition, records[0].offset)
            read += len(records)
    consumer.commit()
    consumer.close()
    return first


class Member(threading.Thread):
    """A consumer of `group` that keeps polling until stopped (one live member)."""

    def __init__(self, bootstrap: str, group: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.group, self.stop = bootstrap, group, threading.Event()
        self.assigned = threading.Event()

    def run(self) -> None:
        consumer = KafkaConsumer(TOPIC, bootstrap_servers=self.bootstrap,
                                 group_id=self.group, enable_auto_commit=False,
                                 auto_offset_reset="earliest")
        read = 0
        while not self.stop.is_set():
            read += sum(len(r) for r in consumer.poll(timeout_ms=200).values())
            if read == 10 and not self.assigned.is_set():
                consumer.commit()  # (5, 5), then it stays
                self.assigned.set()
        consumer.close()


def committed(admin: KafkaAdminClient, group: str) -> dict[int, int]:
    return {tp.partition: o.offset for tp, o in
            admin.list_group_offsets({group: None}).get(group, {}).items()
            if tp.topic == TOPIC}


def write_requests(spark: Any, path: Path, rows: list[dict[str, Any]]) -> None:
    cols = [f.name for f in OFFSET_RESET_MANIFEST.fields]
    (spark.createDataFrame([tuple(r.get(c) for c in cols) for r in rows],
                           OFFSET_RESET_MANIFEST)
     .write.format("delta").mode("overwrite").option("overwriteSchema", "true")
     .save(str(path)))


def requests_of(spark: Any, path: Path) -> list[tuple[Any, ...]]:
    """(request_id, group, partitions, to, value, requested_by, reason) of a requests
    table."""
    return sorted((r["request_id"], r["group"], r["partitions"], r["to"], r["value"],
                   r["requested_by"], r["reason"])
                  for r in spark.read.format("delta").load(str(path)).collect())


def request(rid: str, group: str, to: str, value: str | None = None,
            **cols: Any) -> dict[str, Any]:
    return {"request_id": rid, "cluster": "local", "group": group, "topic": TOPIC,
            "to": to, "value": value, "requested_by": "team-ofc", "reason": "replay",
            **cols}


@dataclass
class Flow:
    work: Path
    bootstrap: str
    runs: dict[str, Completed] = field(default_factory=dict)
    offsets: dict[str, dict[str, dict[int, int]]] = field(default_factory=dict)
    first: dict[int, int] = field(default_factory=dict)
    requests: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)

    @property
    def wh(self) -> Path:
        return self.work / "wh"

    def run_id(self, name: str) -> str:
        return str(self.runs[name].json()["run_id"])


@pytest.fixture(scope="module")
def flow(kafka: Any, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    bootstrap = kafka.bootstrap_servers
    done = Flow(tmp_path_factory.mktemp("ofc"), bootstrap)
    wh = done.wh
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(TOPIC, 2, 1)])
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(10):
        producer.send(TOPIC, f"record-{i}".encode(), partition=i % 2)
    producer.flush()
    producer.close()
    for group in (MOVE, DEL, KEEP, ADHOC):
        consume_and_stop(bootstrap, group)
    member = Member(bootstrap, BUSY)
    member.start()
    assert member.assigned.wait(60)

    write_manifest_table(spark, wh / "desired_topics", [])
    main = wh / "offset_resets"
    write_requests(spark, main, [
        request("r-move", MOVE, "offset", "2"),
        request("r-del", DEL, "delete"),
        request("r-busy", BUSY, "earliest"),
        request("r-busy-del", BUSY, "delete"),
        request("r-keep", KEEP, "earliest"),
        request("r-dup", MOVE, "earliest")])
    bad = done.work / "bad.yaml"
    bad.write_text(yaml.safe_dump([
        request("r-sideways", MOVE, "sideways"),
        request("r-time", MOVE, "timestamp", "yesterday"),
        request("r-shift", MOVE, "shift", "ten"),
        request("r-part", MOVE, "earliest", partitions=[7]),
        request("r-name", "   ", "earliest"),
        request("r-dup", MOVE, "latest")]))

    from provisioning.cli.load_manifest import main as load_manifest

    loaded = CliRunner().invoke(load_manifest, [
        "--source", str(bad), "--table", str(wh / "bad_resets"), "--kind", "offset-resets",
        "--json"], catch_exceptions=False)
    done.runs["load"] = Completed(loaded.exit_code, loaded.stdout, loaded.stderr)
    conf = write_conf(done.work / "conf.yaml", bootstrap, wh, extra={
        "tables": {"manifests": [str(wh / "desired_topics")],
                   "audit": str(wh / "topic_audit"), "runs": str(wh / "provision_runs"),
                   "snapshots": str(wh / "topic_snapshots"),
                   "offset_resets": [str(main), str(wh / "bad_resets")]},
        "groups": {"protected_groups": [f"{P}keep-*"]},
        "checks": {"severity": dict.fromkeys(TOPIC_RULES, "off")}})

    def run(name: str, *args: str) -> None:
        done.runs[name] = run_cli_in_process([*args, "--conf", str(conf), "--json"])

    def record(stage: str) -> None:
        done.offsets[stage] = {g: committed(admin, g) for g in (MOVE, DEL, BUSY, KEEP, ADHOC)}

    try:
        record("before")
        run("plan", "plan")
        run("apply", "apply")
        record("apply")
        run("allowed", "apply", "--allow-offset-resets")
        record("allowed")
        done.first = first_offsets(bootstrap, MOVE)
        run("again", "apply", "--allow-offset-resets")
        record("again")
        adhoc = ("reset-offsets", "--cluster", "local", "--group", ADHOC, "--topic",
                 f"{TOPIC}:1", "--to-offset", "3", "--reason", "replay")
        run("dry", *adhoc)
        record("dry")
        done.requests["dry"] = requests_of(spark, main)
        run("execute", *adhoc, "--execute", "--requested-by", "ops-oncall")
        record("execute")
        done.requests["execute"] = requests_of(spark, main)
        yield done
    finally:
        member.stop.set()
        member.join(30)
        admin.close()


def audit(spark: Any, flow: Flow, run: str) -> list[tuple[Any, ...]]:
    """(request_id, partition, action, phase, outcome, before, after, target, done_by,
    error_name) of one run's offset rows."""
    rows = (spark.read.format("delta").load(str(flow.wh / "topic_audit"))
            .where(f"run_id = '{flow.run_id(run)}' AND offset_reset IS NOT NULL").collect())
    return sorted(((o := r["offset_reset"])["request_id"], o["partition"], r["action"],
                   r["phase"], r["outcome"], o["before"], o["after"], o["target"],
                   o["done_by"], r["error_name"]) for r in rows)


def messages(spark: Any, flow: Flow, run: str) -> dict[tuple[str, str], str]:
    """(request_id, phase) -> the error message of one run's refused offset rows."""
    rows = (spark.read.format("delta").load(str(flow.wh / "topic_audit"))
            .where(f"run_id = '{flow.run_id(run)}' AND offset_reset IS NOT NULL")
            .where("outcome IN ('rejected', 'blocked')").collect())
    return {(r["offset_reset"]["request_id"], r["phase"]): r["error_message"] for r in rows}


FIVES = {0: 5, 1: 5}
BEFORE = {MOVE: FIVES, DEL: FIVES, BUSY: FIVES, KEEP: FIVES, ADHOC: FIVES}
BAD = {
    ("r-dup", "plan"): None,
    ("r-name", "plan"): "group: '   ' is not a legal group id (1 to 255 characters, no "
                        "control character, not blank)",
    ("r-part", "plan"): f"partitions: topic {TOPIC} has no partition 7 (it has 2)",
    ("r-shift", "plan"): "value: 'ten' is not a signed integer, such as -100 or +20",
    ("r-sideways", "plan"): "to: 'sideways' is not one of earliest, latest, timestamp, "
                            "duration, shift, offset, delete",
    ("r-time", "plan"): "value: 'yesterday' is not an ISO-8601 time with its zone, such as "
                        "2026-11-28T09:00:00Z",
}
# Every run's rows of the requests refused at plan, whatever the flags.
REFUSED = sorted([(rid, None, "RESET", "plan", "rejected", None, None, None, None,
                   "INVALID_MANIFEST_ROW") for rid, _ in BAD] + [
    ("r-dup", None, "RESET", "plan", "rejected", None, None, None, None,
     "INVALID_MANIFEST_ROW")] + [
    ("r-keep", p, "RESET", "plan", "blocked", 5, None, 0, None, "POLICY_VIOLATION")
    for p in (0, 1)])


def test_bad_requests_are_loaded_then_rejected_by_name_while_the_others_go_on(
        flow: Flow, spark: Any) -> None:
    assert flow.runs["load"].returncode == 0, flow.runs["load"].output[-3000:]
    assert flow.runs["load"].json()["rows"] == 6
    assert flow.runs["plan"].returncode == 1, flow.runs["plan"].output[-3000:]
    found = messages(spark, flow, "plan")
    dup = (spark.read.format("delta").load(str(flow.wh / "topic_audit"))
           .where(f"run_id = '{flow.run_id('plan')}' AND offset_reset.request_id = 'r-dup'")
           .collect())
    assert sorted(r["error_message"] for r in dup) == sorted(
        f"request_id: r-dup is also the id of {flow.wh / t}@0; no copy is applied (ids "
        "are unique)" for t in ("bad_resets", "offset_resets"))
    assert {k: v for k, v in found.items() if k in BAD and k[0] != "r-dup"} == {
        k: v for k, v in BAD.items() if k[0] != "r-dup"}
    assert found[("r-keep", "plan")] == (
        f"protected_groups: offset reset request r-keep (group {KEEP}, topic {TOPIC}, "
        f"partition 1): groups.protected_groups protects group {KEEP} ({P}keep-*); the job "
        "never resets or deletes its offsets")
    assert flow.offsets["before"] == BEFORE


def test_the_plan_shows_each_partitions_offset_target_and_lags(flow: Flow) -> None:
    listed = flow.runs["plan"].json()["offsets"]["resets"]
    shown = sorted((r["request_id"], r["partition"], r["action"], r["outcome"], r["before"],
                    r["target"], r["lag_before"], r["lag_after"]) for r in listed
                   if r["request_id"] in ("r-move", "r-del", "r-busy", "r-busy-del"))
    # `plan` runs validate too: a RESET of a group with a member is refused there.
    assert shown == [
        ("r-busy", 0, "RESET", "rejected", 5, 0, 0, 5),
        ("r-busy", 1, "RESET", "rejected", 5, 0, 0, 5),
        ("r-busy-del", 0, "DELETE", "validated", 5, None, 0, None),
        ("r-busy-del", 1, "DELETE", "validated", 5, None, 0, None),
        ("r-del", 0, "DELETE", "validated", 5, None, 0, None),
        ("r-del", 1, "DELETE", "validated", 5, None, 0, None),
        ("r-move", 0, "RESET", "validated", 5, 2, 0, 3),
        ("r-move", 1, "RESET", "validated", 5, 2, 0, 3)]


def test_apply_without_the_flag_sends_nothing(flow: Flow, spark: Any) -> None:
    applied = flow.runs["apply"]
    assert applied.returncode == 1, applied.output[-3000:]
    assert flow.offsets["apply"] == BEFORE
    assert applied.json()["offsets"]["resets_not_allowed"] == 6
    assert [r for r in audit(spark, flow, "apply") if r[2:4] not in (
        ("RESET", "plan"), ("DELETE", "plan"))] == [
        ("r-busy", 0, "RESET", "validate", "rejected", 5, None, 0, None, "NON_EMPTY_GROUP"),
        ("r-busy", 1, "RESET", "validate", "rejected", 5, None, 0, None, "NON_EMPTY_GROUP"),
        *[(rid, p, "DELETE", "validate", "validated", 5, None, None, None, "NONE")
          for rid in ("r-busy-del", "r-del") for p in (0, 1)],
        *[("r-move", p, "RESET", "validate", "validated", 5, None, 2, None, "NONE")
          for p in (0, 1)]]


def test_apply_with_the_flag_resets_deletes_and_records_the_brokers_answers(
        flow: Flow, spark: Any) -> None:
    assert flow.offsets["allowed"] == {MOVE: {0: 2, 1: 2}, DEL: {}, BUSY: FIVES,
                                       KEEP: FIVES, ADHOC: FIVES}
    rows = audit(spark, flow, "allowed")
    assert [r for r in rows if r[0] in ("r-move", "r-del", "r-busy", "r-busy-del")] == [
        *[("r-busy", p, "RESET", phase, outcome, 5, None, 0, None, error)
          for p in (0, 1) for phase, outcome, error in (
              ("plan", "planned", None), ("validate", "rejected", "NON_EMPTY_GROUP"))],
        *[("r-busy-del", p, "DELETE", phase, outcome, 5, None, None, None, error)
          for p in (0, 1) for phase, outcome, error in (
              ("apply", "rejected", "GROUP_SUBSCRIBED_TO_TOPIC"), ("plan", "planned", None),
              ("validate", "validated", "NONE"))],
        *[("r-del", p, "DELETE", phase, outcome, 5, None, None, None, error)
          for p in (0, 1) for phase, outcome, error in (
              ("apply", "offsets_deleted", "NONE"), ("plan", "planned", None),
              ("validate", "validated", "NONE"), ("verify", "offsets_deleted", "NONE"))],
        *[("r-move", p, "RESET", phase, outcome, 5, after, 2, None, error)
          for p in (0, 1) for phase, outcome, after, error in (
              ("apply", "reset", 2, "NONE"), ("plan", "planned", None, None),
              ("validate", "validated", None, "NONE"), ("verify", "reset", 2, "NONE"))]]
    assert [r for r in rows if r[0] not in ("r-move", "r-del", "r-busy", "r-busy-del")
            ] == REFUSED
    found = messages(spark, flow, "allowed")
    assert found[("r-busy", "validate")] == (
        f"group {BUSY}: it has 1 member(s) (type classic, state Stable); nothing was sent")
    assert found[("r-busy-del", "apply")] == (
        "Deleting offsets of a topic is forbidden while the consumer group is actively "
        "subscribed to it.")


def test_the_groups_consumer_reads_from_exactly_the_planned_offset(flow: Flow) -> None:
    assert flow.first == {0: 2, 1: 2}


def test_a_request_is_applied_once_and_later_plans_show_it_done_by_its_run(
        flow: Flow, spark: Any) -> None:
    first = flow.run_id("allowed")
    assert flow.offsets["again"] == {MOVE: FIVES, DEL: {}, BUSY: FIVES, KEEP: FIVES,
                                     ADHOC: FIVES}
    rows = audit(spark, flow, "again")
    assert [r for r in rows if r[0] in ("r-move", "r-del")] == [
        ("r-del", None, "NOOP", "plan", "already_done", None, None, None, first, None),
        ("r-move", None, "NOOP", "plan", "already_done", None, None, None, first, None)]
    listed = {r["request_id"]: (r["outcome"], r["note"])
              for r in flow.runs["again"].json()["offsets"]["resets"]
              if r["request_id"] in ("r-move", "r-del")}
    assert listed == {rid: ("already_done", f"done: applied by run {first}")
                      for rid in ("r-move", "r-del")}


TABLE = sorted([("r-busy", BUSY, None, "earliest", None, "team-ofc", "replay"),
                ("r-busy-del", BUSY, None, "delete", None, "team-ofc", "replay"),
                ("r-del", DEL, None, "delete", None, "team-ofc", "replay"),
                ("r-dup", MOVE, None, "earliest", None, "team-ofc", "replay"),
                ("r-keep", KEEP, None, "earliest", None, "team-ofc", "replay"),
                ("r-move", MOVE, None, "offset", "2", "team-ofc", "replay")])


def test_reset_offsets_without_execute_shows_the_plan_and_changes_nothing(
        flow: Flow) -> None:
    dry = flow.runs["dry"]
    assert dry.returncode == 0, dry.output[-3000:]
    document = dry.json()
    assert document["executed"] is False
    assert [(r["partition"], r["action"], r["outcome"], r["before"], r["target"],
             r["lag_before"], r["lag_after"]) for r in document["plan"]] == [
        (1, "RESET", "planned", 5, 3, 0, 2)]
    assert flow.offsets["dry"] == flow.offsets["again"]
    assert flow.requests["dry"] == TABLE


def test_reset_offsets_with_execute_appends_the_request_applies_and_audits_it(
        flow: Flow, spark: Any) -> None:
    executed = flow.runs["execute"]
    assert executed.returncode == 0, executed.output[-3000:]
    rid = f"reset-{flow.run_id('execute')}"
    assert executed.json()["request"]["request_id"] == rid
    assert flow.offsets["execute"] == {**flow.offsets["again"], ADHOC: {0: 5, 1: 3}}
    assert flow.requests["execute"] == sorted(
        [*TABLE, (rid, ADHOC, [1], "offset", "3", "ops-oncall", "replay")])
    assert audit(spark, flow, "execute") == [
        (rid, 1, "RESET", "apply", "reset", 5, 3, 3, None, "NONE"),
        (rid, 1, "RESET", "plan", "planned", 5, None, 3, None, None),
        (rid, 1, "RESET", "validate", "validated", 5, None, 3, None, "NONE"),
        (rid, 1, "RESET", "verify", "reset", 5, 3, 3, None, "NONE")]
