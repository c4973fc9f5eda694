"""The session's three-node KRaft cluster (racked_kafka) under the job: a model-based soak,
and the active controller killed with -9 in the middle of a 2,000-topic apply (the node
started again, and every topic of the module deleted, before the module ends).

The soak runs the CLI 8 times through spark-submit.sh as thin clients of the shared Spark
Connect server, each on a manifest mutated at random from a
printed seed (`SOAK_SEED=<n>` replays one): new topics, `state: absent`,
changed partitions, retention and replication factor, invalid rows, duplicates, a topic
deleted or created behind the job's back, protected topics marked absent. From the
second mutation on, every kind of change (KINDS) the runs so far have not made is made as
soon as it can be, so the soak covers each of them in its 8 runs whatever the seed (it
asserts so); the last run (spark-submit.sh) always has an ALTER to apply. A
model of the cluster predicts, before each run, every audit row the run must write, its
exit code and what the broker must hold after it; each run is checked against it exactly.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from dev.devkafka import KafkaCluster
from tests.helpers import (
    audit_rows,
    broker_state,
    plan_counts,
    run_cli,
    runs_rows,
    wait_until,
    write_conf,
    write_manifest_table,
)

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

NODES = 3
SOAK_RUNS = 8
# From this mutation on, a kind of change not made yet is made as soon as it can be.
FORCE_FROM = 2
KINDS = ("new", "absent", "partitions up", "partitions down", "retention up",
         "retention down", "replication factor", "revert", "revive", "absent (protected)",
         "present again (protected)", "invalid", "replication factor above the cluster",
         "duplicate", "deleted behind the back", "created behind the back (unmanaged)",
         "created behind the back (wanted absent)")
RETENTIONS = (3_600_000, 86_400_000, 604_800_000, 2_592_000_000)
PROTECTED = "soak.keep.*"


@pytest.fixture(scope="module")
def three_nodes(racked_kafka: KafkaCluster) -> Iterator[KafkaCluster]:
    """The session's three-node cluster, every node running and none of this module's
    topics on it (the soak's and the 2,000 of the controller kill) when the module ends."""
    yield racked_kafka
    for node in racked_kafka.node_ids:
        if not racked_kafka.is_running(node):
            racked_kafka.start_node(node)
    _delete_prefixed(racked_kafka, ("soak.", "soak-foreign.", "ctl."))


def _delete_prefixed(cluster: KafkaCluster, prefixes: tuple[str, ...]) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        mine = [t for t in admin.list_topics() if t.startswith(prefixes)]
        if mine:
            admin.delete_topics(mine, raise_errors=False)
        wait_until("the earlier tests' topics gone", lambda: not any(
            t.startswith(prefixes) for t in admin.list_topics()), 120)
    finally:
        admin.close()


# -- the model ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Shape:
    partitions: int
    rf: int
    retention: int


@dataclass(frozen=True)
class Row:
    """One valid manifest row: the topic wanted in `shape`, or absent."""
    shape: Shape
    absent: bool = False

    def manifest(self, topic: str) -> dict[str, Any]:
        row: dict[str, Any] = {"cluster": "local", "topic": topic,
                               "partitions": self.shape.partitions,
                               "replication_factor": self.shape.rf,
                               "configs": {"retention.ms": str(self.shape.retention)}}
        if self.absent:
            row["state"] = "absent"
        return row


Expected = list[tuple[str, str, str, str, str]]


class Model:
    """What the manifest wants, what the broker holds, and what a run must do between them."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.rows: dict[str, Row] = {}
        self.live: dict[str, Shape] = {}
        self.foreign: dict[str, str] = {}      # unmanaged topic -> its topic id
        self.extra: list[dict[str, Any]] = []  # this run's invalid rows and duplicates
        self.duplicated: set[str] = set()
        self.serial = 0
        self.log: list[str] = []
        self.mutations = 0
        self.seen: set[str] = set()  # the KINDS of change made so far

    # mutations ---------------------------------------------------------------------

    def _name(self, prefix: str = "soak.t") -> str:
        self.serial += 1
        return f"{prefix}{self.serial:03d}"

    def _shape(self) -> Shape:
        return Shape(self.rng.randint(1, 3), self.rng.randint(1, NODES),
                     self.rng.choice(RETENTIONS))

    def _settled(self) -> list[str]:
        """Managed present topics whose manifest row and live shape agree."""
        return sorted(t for t, r in self.rows.items() if not r.absent and t in self.live
                      and self.live[t] == r.shape and not t.startswith("soak.keep."))

    def _pick(self, candidates: list[str], most: int, least: int = 0) -> list[str]:
        return self.rng.sample(candidates, min(len(candidates), self.rng.randint(least, most)))

    def _due(self, kind: str) -> bool:
        """A kind of change not made yet, to be made now if it can be."""
        return self.mutations >= FORCE_FROM and kind not in self.seen

    def _note(self, kind: str, text: str) -> None:
        self.seen.add(kind)
        self.log.append(text)

    def _gone(self) -> list[str]:
        """Topics the manifest wants absent that the broker no longer holds."""
        return sorted(t for t, r in self.rows.items() if r.absent and t not in self.live
                      and not t.startswith("soak.keep."))

    def _partitions(self, t: str, grown: bool) -> None:
        s = self.rows[t].shape
        partitions = s.partitions + self.rng.randint(1, 2) if grown else s.partitions - 1
        self.rows[t] = Row(replace(s, partitions=partitions))
        self._note("partitions up" if grown else "partitions down",
                   f"partitions {t} {s.partitions}->{partitions}")

    def _retention(self, t: str, lower: bool | None) -> None:
        s = self.rows[t].shape
        retention = self.rng.choice([r for r in RETENTIONS if r != s.retention
                                     and (lower is None or (r < s.retention) == lower)])
        self.rows[t] = Row(replace(s, retention=retention))
        self._note("retention down" if retention < s.retention else "retention up",
                   f"retention {t} {s.retention}->{retention}")

    def start(self) -> None:
        for _ in range(12):
            self.rows[self._name()] = Row(self._shape())
        for i in range(2):
            self.rows[f"soak.keep.{i}"] = Row(Shape(1, 1, RETENTIONS[1]))
        self.log.append("start: 14 topics")

    def mutate(self, admin: KafkaAdminClient, alter: bool = False) -> None:
        """Change the manifest (and the cluster behind the job's back) at random; from
        mutation FORCE_FROM on, each kind of change not made yet is made if it can be;
        with `alter`, one present topic gets more partitions (an ALTER the run applies)."""
        self.mutations += 1
        self.extra, self.duplicated = [], set()
        settled = self._settled()
        touched: set[str] = set()

        def take(most: int, least: int = 0, where: Any = None) -> list[str]:
            chosen = self._pick([t for t in settled if t not in touched
                                 and (where is None or where(self.rows[t].shape))],
                                most, least)
            touched.update(chosen)
            return chosen

        def forced(kind: str, where: Any = None) -> list[str]:
            """The settled topic a due kind of change takes first (none if not due)."""
            return take(1, 1, where) if self._due(kind) else []

        # The topics of the kinds still due are taken first, so that random changes of
        # other kinds cannot use up the settled topics they need.
        # A revival and a recreation behind the back each need a deleted topic of their own.
        wanted_gone = sum(self._due(k) for k in
                          ("revive", "created behind the back (wanted absent)"))
        absent = take(2, max(int(self._due("absent")), wanted_gone - len(self._gone())))
        shrunk = forced("partitions down", lambda s: s.partitions > 1)
        grown = forced("partitions up") or (take(1, 1) if alter else [])
        if alter and not grown:  # no settled topic left: one back to its live shape first
            present = sorted(t for t, r in self.rows.items() if not r.absent and t in self.live
                             and self.live[t].retention != -1 and t not in touched
                             and not t.startswith("soak.keep."))
            grown = self.rng.sample(present, 1)
            touched.update(grown)
            self.rows[grown[0]] = Row(self.live[grown[0]])
        lowered = forced("retention down", lambda s: s.retention > RETENTIONS[0])
        raised = forced("retention up", lambda s: s.retention < RETENTIONS[-1])
        replicated = forced("replication factor")
        duplicated = forced("duplicate")
        deleted = forced("deleted behind the back")

        for _ in range(self.rng.randint(int(self._due("new")), 3)):
            name = self._name()
            self.rows[name] = Row(self._shape())
            self._note("new", f"new {name} {self.rows[name].shape}")
        for t in absent:
            self.rows[t] = replace(self.rows[t], absent=True)
            self._note("absent", f"absent {t}")
        for t in shrunk:
            self._partitions(t, grown=False)
        for t in grown:
            self._partitions(t, grown=True)
        for t in take(2):
            self._partitions(t, self.rng.random() < 0.7 or self.rows[t].shape.partitions == 1)
        for t in lowered:
            self._retention(t, lower=True)
        for t in raised:
            self._retention(t, lower=False)
        for t in take(2):
            self._retention(t, lower=None)
        for t in replicated or take(1):
            s = self.rows[t].shape
            rf = self.rng.choice([r for r in range(1, NODES + 1) if r != s.rf])
            self.rows[t] = Row(replace(s, rf=rf))
            self._note("replication factor", f"replication factor {t} {s.rf}->{rf}")
        # Back to what the broker holds: a drifted or blocked topic settles again (not one
        # this mutation changed to make a kind still due, or the ALTER asked for).
        chosen = {*shrunk, *grown, *lowered, *raised, *replicated}
        unsettled = sorted(t for t, r in self.rows.items() if t in self.live
                           and not r.absent and r.shape != self.live[t] and t not in chosen)
        for t in self._pick(unsettled, 2, int(self._due("revert"))):
            self.rows[t] = Row(self.live[t])
            self._note("revert", f"revert {t}")
        # Revive an absent topic: it is created again (keeping one back while a recreation
        # behind the back is due).
        gone = self._gone()[int(self._due("created behind the back (wanted absent)")):]
        for t in self._pick(gone, 1, int(self._due("revive"))):
            self.rows[t] = Row(self._shape())
            self._note("revive", f"revive {t} {self.rows[t].shape}")
        keeps = ["soak.keep.0", "soak.keep.1"]
        absent_keeps = [k for k in keeps if self.rows[k].absent]
        again = self._due("present again (protected)") and bool(absent_keeps)
        keep = absent_keeps[0] if again else self.rng.choice(keeps)
        if self.rows[keep].absent and (again or self.rng.random() < 0.5):
            self.rows[keep] = replace(self.rows[keep], absent=False)
            self._note("present again (protected)", f"present again (protected) {keep}")
        elif self._due("absent (protected)") or self.rng.random() < 0.3:
            self.rows[keep] = replace(self.rows[keep], absent=True)
            self._note("absent (protected)", f"absent (protected) {keep}")
        if self._due("invalid") or self.rng.random() < 0.4:
            name = self._name("soak.bad.")
            row = self.rng.choice([{"partitions": 0}, {"replication_factor": 0},
                                   {"partitions": -2}])
            self.extra.append({"cluster": "local", "topic": name, "partitions": 1,
                               "replication_factor": 1, **row})
            self._note("invalid", f"invalid {name} {row}")
        if self._due("replication factor above the cluster") or self.rng.random() < 0.3:
            name = self._name()
            self.extra.append({"cluster": "local", "topic": name, "partitions": 1,
                               "replication_factor": NODES + 1})
            self._note("replication factor above the cluster",
                       f"replication factor above the cluster {name}")
        for t in duplicated or take(1):
            self.duplicated.add(t)
            self._note("duplicate", f"duplicate {t}")
        self._behind_the_back(admin, deleted or (take(1) if self.rng.random() < 0.4 else []))

    def _behind_the_back(self, admin: KafkaAdminClient, deleted: list[str]) -> None:
        for t in deleted:
            admin.delete_topics([t], timeout_ms=30000)
            wait_until(f"{t} deleted", lambda t=t: t not in admin.list_topics())
            del self.live[t]
            self._note("deleted behind the back", f"deleted behind the back {t}")
        if self._due("created behind the back (unmanaged)") or self.rng.random() < 0.3:
            name = self._name("soak-foreign.")
            admin.create_topics([NewTopic(name, 1, 1)], timeout_ms=30000)
            wait_until(f"{name} created", lambda: name in admin.list_topics())
            self.foreign[name] = ""
            self._note("created behind the back (unmanaged)",
                       f"created behind the back (unmanaged) {name}")
        gone = self._gone()
        if gone and (self._due("created behind the back (wanted absent)")
                     or self.rng.random() < 0.3):
            t = self.rng.choice(gone)
            admin.create_topics([NewTopic(t, 1, 1)], timeout_ms=30000)
            wait_until(f"{t} created", lambda: t in admin.list_topics())
            self.live[t] = Shape(1, 1, -1)
            self._note("created behind the back (wanted absent)",
                       f"created behind the back (wanted absent) {t}")

    # the run ---------------------------------------------------------------------------

    def manifest(self) -> list[dict[str, Any]]:
        rows = [r.manifest(t) for t, r in sorted(self.rows.items())]
        rows += [self.rows[t].manifest(t) for t in sorted(self.duplicated)]
        return rows + self.extra

    def expect(self) -> tuple[Expected, int]:
        """Every audit row the next run writes and its exit code; moves the model on."""
        rows: Expected = []
        attention = False

        def add(topic: str, action: str, *phases: tuple[str, str]) -> None:
            rows.extend(("local", topic, action, p, o) for p, o in phases)

        for t, r in sorted(self.rows.items()):
            live = self.live.get(t)
            action = self._action(r, live)
            if t in self.duplicated:
                add(t, action, ("plan", "rejected"))
                add(t, action, ("plan", "rejected"))
                attention = True
            elif action == "NOOP":
                add(t, action, ("plan", "already_absent" if r.absent else "already_present"))
            elif action == "DRIFT":
                add(t, action, ("plan", "drift"))
            elif action == "REASSIGN" and self._to_one(r, live):
                add(t, action, ("plan", "blocked"))
                attention = True
            elif action == "REASSIGN":
                # checked, not made: the soak's applies run without --allow-reassign
                add(t, action, ("plan", "planned"), ("validate", "validated"))
            elif action == "DELETE" and t.startswith("soak.keep."):
                add(t, action, ("plan", "blocked"))
                attention = True
            elif action == "DELETE":
                add(t, action, ("plan", "planned"), ("apply", "deleted"), ("verify", "deleted"))
                del self.live[t]
            elif action == "ALTER" and live is not None and (r.shape.retention < live.retention
                                                              or self._to_one(r, live)):
                add(t, action, ("plan", "blocked"))
                attention = True
            elif action == "ALTER":
                add(t, action, ("plan", "planned"), ("validate", "validated"),
                    ("apply", "altered"), ("verify", "altered"))
                assert live is not None
                if r.shape.rf != live.rf:
                    # its replica moves: checked, not made (no --allow-reassign)
                    add(t, "REASSIGN", ("validate", "validated"))
                self.live[t] = replace(live, retention=r.shape.retention,
                                       partitions=max(live.partitions, r.shape.partitions))
            else:
                add(t, action, ("plan", "planned"), ("validate", "validated"),
                    ("apply", "created"), ("verify", "created"))
                self.live[t] = r.shape
        for extra in self.extra:
            outcome = "blocked" if extra["replication_factor"] > NODES else "rejected"
            add(extra["topic"], "CREATE", ("plan", outcome))
            attention = True
        if not any(phase == "plan" and outcome == "planned" for *_, phase, outcome in rows):
            # A plan with nothing to change records its findings only (run.commits).
            rows = [r for r in rows if r[4] in ("drift", "blocked", "rejected", "failed")]
        return sorted(rows), 1 if attention else 0

    @staticmethod
    def _action(row: Row, live: Shape | None) -> str:
        if row.absent:
            return "DELETE" if live is not None else "NOOP"
        if live is None:
            return "CREATE"
        want = row.shape
        if want.partitions > live.partitions or want.retention != live.retention:
            return "ALTER"
        if want.rf != live.rf:
            return "REASSIGN"
        if want.partitions < live.partitions:
            return "DRIFT"
        return "NOOP"

    @staticmethod
    def _to_one(row: Row, live: Shape | None) -> bool:
        """A replication factor lowered to 1: blocked by `replication_factor_to_one`."""
        return live is not None and row.shape.rf == 1 and live.rf > 1

    def broker_view(self) -> dict[str, tuple[int, int, dict[str, str]]]:
        return {t: (s.partitions, s.rf,
                    {} if s.retention == -1 else {"retention.ms": str(s.retention)})
                for t, s in sorted(self.live.items())}


def _soak_state(cluster: KafkaCluster) -> tuple[dict[str, tuple[int, int, dict[str, str]]],
                                                 dict[str, str]]:
    state = broker_state(cluster.bootstrap_servers)
    managed = {t: (s["partitions"], s["replication_factor"], s["configs"])
               for t, s in sorted(state.items()) if t.startswith("soak.")}
    foreign = {t: s["topic_id"] for t, s in state.items() if t.startswith("soak-foreign.")}
    return managed, foreign


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_soak_eight_runs_against_a_model(three_nodes: KafkaCluster, spark: Any,
                                           connect_server: Any, tmp_path: Path) -> None:
    seed = int(os.environ.get("SOAK_SEED") or random.SystemRandom().randrange(2**31))
    print(f"soak seed {seed}: replay with SOAK_SEED={seed}")
    model = Model(random.Random(seed))
    warehouse = tmp_path / "wh"
    conf = write_conf(tmp_path / "conf.yaml", three_nodes.bootstrap_servers, warehouse,
                      extra={"deletes": {"max_per_cluster": 10, "protected": [PROTECTED]}})
    admin = KafkaAdminClient(bootstrap_servers=three_nodes.bootstrap_servers)
    run_ids: list[str] = []
    try:
        for run in range(SOAK_RUNS):
            if run == 0:
                model.start()
            else:
                # the last run (spark-submit.sh) always has an ALTER to apply
                model.mutate(admin, alter=run == SOAK_RUNS - 1)
            context = f"seed {seed}, run {run}:\n  " + "\n  ".join(model.log)
            # foreign topics are known by id once they exist
            _, foreign_ids = _soak_state(three_nodes)
            model.foreign.update({t: i for t, i in foreign_ids.items()
                                  if not model.foreign.get(t)})
            write_manifest_table(spark, warehouse / "desired_topics", model.manifest())
            expected, code = model.expect()

            args = ["apply", "--conf", str(conf), "--allow-deletes", "--allow-alter", "--json"]
            done = run_cli(args, remote=connect_server.address)
            assert done.returncode == code, f"{context}\n{done.output[-3000:]}"
            run_id = done.json()["run_id"]
            run_ids.append(run_id)
            assert audit_rows(spark, warehouse, run_id) == expected, context
            managed, foreign = _soak_state(three_nodes)
            assert managed == model.broker_view(), context
            assert foreign == model.foreign, context
            assert sorted(runs_rows(spark, warehouse)) == sorted(run_ids), context
            model.log.clear()
    finally:
        admin.close()
    # The runs made every kind of change, so each was checked against the model.
    assert sorted(model.seen) == sorted(KINDS), f"seed {seed}"


# -- the active controller killed mid-apply -----------------------------------------------

def test_active_controller_killed_mid_apply_then_rerun_converges(
        three_nodes: KafkaCluster, spark: Any, connect_server: Any, tmp_path: Path) -> None:
    names = [f"ctl.{i:04d}" for i in range(2000)]
    warehouse = tmp_path / "wh"
    write_manifest_table(spark, warehouse / "desired_topics", [
        {"cluster": "local", "topic": n, "partitions": 1, "replication_factor": NODES}
        for n in names])
    conf = write_conf(tmp_path / "conf.yaml", three_nodes.bootstrap_servers, warehouse,
                      extra={"kafka": {"batch_size": 100, "request_timeout_ms": 15000,
                                       "operation_timeout_ms": 15000,
                                       "verify_timeout_ms": 60000}})
    killed: list[int] = []

    def kill_when_creating() -> None:
        admin = KafkaAdminClient(bootstrap_servers=three_nodes.bootstrap_servers)
        try:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                if sum(t.startswith("ctl.") for t in admin.list_topics()) >= 300:
                    break
                time.sleep(0.05)
        finally:
            admin.close()
        leader = three_nodes.active_controller()
        three_nodes.kill_node(leader)
        killed.append(leader)

    watcher = threading.Thread(target=kill_when_creating, daemon=True)
    watcher.start()
    first = run_cli(["apply", "--conf", str(conf), "--json"], remote=connect_server.address)
    watcher.join(timeout=120)
    assert killed, first.output[-3000:]
    # The client finds the new controller: a request the dead one never answered is resent
    # by the job (TOPIC_ALREADY_EXISTS for what it had created: `created`, saying so) or
    # retried inside the cluster (TOPIC_ALREADY_EXISTS too, indistinguishable from another
    # client's create: `already_present`); every other request goes to the new controller.
    assert first.returncode == 0, first.output[-3000:]
    run_id = first.json()["run_id"]
    rows = {(r["topic"], r["phase"]): r for r in spark.read.format("delta")
            .load(str(warehouse / "topic_audit")).where(f"run_id = '{run_id}'").collect()}
    assert sorted(rows) == sorted((t, p) for t in names
                                  for p in ("plan", "validate", "apply", "verify")
                                  if p != "verify" or rows[(t, "apply")]["outcome"] == "created")
    assert {(r["phase"], r["action"], r["outcome"]) for r in rows.values()} <= {
        ("plan", "CREATE", "planned"), ("validate", "CREATE", "validated"),
        ("apply", "CREATE", "created"), ("apply", "CREATE", "already_present"),
        ("verify", "CREATE", "created")}
    for t in names:
        applied = rows[(t, "apply")]
        if applied["error_name"] == "NONE":
            assert applied["outcome"] == "created"
        else:
            assert applied["error_name"] == "TOPIC_ALREADY_EXISTS", applied
            assert applied["error_message"].startswith(
                "created by this run: the answer to its CreateTopics was lost"
                if applied["outcome"] == "created" else
                "the topic exists as requested: it appeared after the snapshot"), applied
        assert (applied["result_partitions"], applied["result_replication_factor"]) == (
            1, NODES), applied
    print("apply outcomes around the kill:", Counter(
        (r["outcome"], r["error_name"]) for r in rows.values() if r["phase"] == "apply"))

    three_nodes.start_node(killed[0])
    present = {t: s["topic_id"] for t, s in broker_state(three_nodes.bootstrap_servers).items()
               if t.startswith("ctl.")}
    assert sorted(present) == names
    # The rerun, with the killed node back: nothing to change, the same topics (same ids).
    rerun = run_cli(["apply", "--conf", str(conf), "--json"], remote=connect_server.address)
    assert rerun.returncode == 0, rerun.output[-3000:]
    assert audit_rows(spark, warehouse, rerun.json()["run_id"]) == []
    assert plan_counts(spark, warehouse, rerun.json()["run_id"]) == [
        ("topics", "local", "NOOP", "already_present", len(names))]
    after = broker_state(three_nodes.bootstrap_servers)
    assert {t: after[t]["topic_id"] for t in names} == present
    assert {(after[t]["partitions"], after[t]["replication_factor"]) for t in names} == {
        (1, NODES)}
