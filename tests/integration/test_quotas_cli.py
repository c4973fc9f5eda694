"""Client quotas as desired state, through the job's CLI, against the session's real broker:
every kind of entity set and read back, an idempotent rerun, a changed value applied,
removals only when allowed, unlisted quotas kept unless the conf removes them, the
quota_range policy and `force`, a key that does not fit its entity rejected while the rest
are made, the broker's own refusal at validateOnly, the audit rows, saved plans, report,
check and the import round trip.

The CLI runs in this process on the tests' SparkSession (`run_cli_in_process`: the same
command spark-submit.sh runs), but in the import test (lane connect), whose runs and
`load_manifest --kind quotas` go through spark-submit.sh as thin clients of the session's
Spark Connect server. Every stage reads the broker's whole quota state back
(DescribeClientQuotas).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from provisioning.conf import ClusterConf, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kinds.quotas.entities import Entity
from provisioning.kinds.quotas.requests import (
    QuotaEntry,
    alter_client_quotas,
    describe_client_quotas,
)
from provisioning.kinds.quotas.schema import QUOTA_MANIFEST
from tests.helpers import (
    Completed,
    run_cli,
    run_cli_in_process,
    run_paused,
    write_conf,
    write_manifest_table,
)

pytestmark = pytest.mark.integration

KAFKA = KafkaConf(request_timeout_ms=15000)
TOPIC_RULES = ("offline_partition", "under_replicated", "below_min_isr",
               "min_insync_within_rf", "unmanaged", "drift", "leader_not_preferred",
               "idle_topic", "empty_topic", "disk_usage", "disk_forecast")
MIB = 1024 * 1024
State = dict[Entity, dict[str, float]]


def E(**parts: str | None) -> Entity:
    """An entity from keyword arguments: client_id= stands for the `client-id` type."""
    return Entity({k.replace("_", "-"): v for k, v in parts.items()})


def _admin(bootstrap: str) -> ClusterAdmin:
    return ClusterAdmin(ClusterConf("local", bootstrap), None, KAFKA)


def live(bootstrap: str, expected: State | None = None, timeout_s: float = 15) -> State:
    """The broker's quotas (once they are `expected`, or as they are after `timeout_s`: a
    read-back may trail an answered alter by a moment)."""
    deadline = time.monotonic() + timeout_s
    with _admin(bootstrap) as admin:
        while True:
            found = {e: dict(q) for e, q in describe_client_quotas(admin).items()}
            if expected is None or found == expected or time.monotonic() > deadline:
                return found
            time.sleep(0.2)


def _set(bootstrap: str, quotas: Mapping[Entity, Mapping[str, float | None]]) -> None:
    with _admin(bootstrap) as admin:
        results = alter_client_quotas(admin, [QuotaEntry(e, dict(q)) for e, q in
                                              quotas.items()], False, 100)
    assert {r["error_name"] for r in results} == {"NONE"}


@pytest.fixture
def clean_quotas(kafka: Any) -> Iterator[str]:
    """The session's broker with no client quota, before and after the test."""
    bootstrap = kafka.bootstrap_servers

    def clear() -> None:
        found = live(bootstrap)
        if found:
            _set(bootstrap, {e: dict.fromkeys(q) for e, q in found.items()})
        assert live(bootstrap, {}) == {}

    clear()
    yield bootstrap
    clear()


def write_quota_table(spark: Any, path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """A Delta quota manifest table from partial rows (missing columns null), and an empty
    topic manifest beside it (these runs manage no topic)."""
    topics = path.parent / "desired_topics"
    if not topics.exists():
        write_manifest_table(spark, topics, [])
    cols = [f.name for f in QUOTA_MANIFEST.fields]
    floats = [{**r, "quotas": None if r.get("quotas") is None else
               {k: float(v) for k, v in r["quotas"].items()}} for r in rows]
    (spark.createDataFrame([tuple(r.get(c) for c in cols) for r in floats], QUOTA_MANIFEST)
     .write.format("delta").mode("overwrite").option("overwriteSchema", "true")
     .save(str(path)))


def quota_conf(tmp_path: Path, bootstrap: str, wh: Path, quota_tables: Sequence[Path],
               quotas: Mapping[str, Any] | None = None, name: str = "conf.yaml") -> Path:
    return write_conf(tmp_path / name, bootstrap, wh, extra={
        "tables": {"manifests": [str(wh / "desired_topics")],
                   "audit": str(wh / "topic_audit"), "runs": str(wh / "provision_runs"),
                   "snapshots": str(wh / "topic_snapshots"),
                   "quota_manifests": [str(t) for t in quota_tables]},
        "quotas": {"batch_size": 3, **(quotas or {})},
        "policies": {"quota": [{"name": "quota_range", "key": "producer_byte_rate",
                                "max": 100 * MIB}]},
        # `check` here judges the quotas; the session broker's topics are other tests'.
        "checks": {"severity": dict.fromkeys(TOPIC_RULES, "off")},
    })


def cli(*args: str) -> Completed:
    return run_cli_in_process(list(args))


def quota_audit(spark: Any, wh: Path, run_id: str) -> list[tuple[Any, ...]]:
    """(entity, key, action, phase, outcome, value asked, found) of one run's quota rows."""
    rows = (spark.read.format("delta").load(str(wh / "topic_audit"))
            .where(f"run_id = '{run_id}' AND quota IS NOT NULL").collect())
    return sorted((" ".join(f"{t}={r['quota'][c]}" for t, c in (
        ("user", "entity_user"), ("client-id", "entity_client_id"), ("ip", "entity_ip"))
        if r["quota"][c] is not None), r["quota"]["key"], r["action"], r["phase"],
        r["outcome"], r["quota"]["value"], r["quota"]["found"]) for r in rows)


ROWS = [
    # A changed value, a new key; request_percentage, set by hand, is unlisted.
    {"cluster": "local", "entity_user": "orders-app",
     "quotas": {"producer_byte_rate": 2 * MIB, "consumer_byte_rate": 4 * MIB}},
    {"cluster": "local", "entity_user": "<default>", "quotas": {"producer_byte_rate": MIB}},
    {"cluster": "local", "entity_client_id": "reporting",
     "quotas": {"request_percentage": 50.0}},
    {"cluster": "local", "entity_user": "orders-app", "entity_client_id": "batch",
     "quotas": {"consumer_byte_rate": 8 * MIB}, "owner": "orders"},
    {"cluster": "local", "entity_ip": "127.0.0.1", "quotas": {"connection_creation_rate": 20.0}},
    # connection_creation_rate does not fit a user: that key is rejected, the other made.
    {"cluster": "local", "entity_user": "misfit",
     "quotas": {"producer_byte_rate": 1000.0, "connection_creation_rate": 5.0}},
    # Over quota_range's max: blocked until the row says force.
    {"cluster": "local", "entity_user": "bulk", "quotas": {"producer_byte_rate": 200 * MIB}},
    # Too large for the broker's LONG: its own refusal, at validateOnly.
    {"cluster": "local", "entity_user": "huge", "quotas": {"consumer_byte_rate": 1e19}},
]
LEGACY = E(user="legacy")


def test_client_quotas_are_planned_validated_applied_verified_and_audited(
        spark: Any, clean_quotas: str, tmp_path: Path) -> None:
    bootstrap = clean_quotas
    _set(bootstrap, {E(user="orders-app"): {"producer_byte_rate": MIB,
                                            "request_percentage": 10.0},
                     LEGACY: {"producer_byte_rate": 1000.0}})
    wh = tmp_path / "wh"
    table = wh / "desired_quotas"
    write_quota_table(spark, table, ROWS)
    conf = quota_conf(tmp_path, bootstrap, wh, [table])

    # plan: each change shown; nothing changes.
    planned = cli("plan", "--conf", str(conf), "--out", str(tmp_path / "plan.json"))
    assert planned.returncode == 1, planned.output[-3000:]
    for line in [
            "Client quotas",
            "  ~ local quota user=orders-app producer_byte_rate 1048576 -> 2097152  validated",
            "  + local quota user=orders-app consumer_byte_rate (not set) -> 4194304  "
            "validated",
            "  ! local quota user=bulk producer_byte_rate (not set) -> 209715200  blocked: "]:
        assert any(out.startswith(line) for out in planned.stdout.splitlines()), (
            line, planned.stdout)
    assert live(bootstrap) == {E(user="orders-app"): {"producer_byte_rate": MIB,
                                                      "request_percentage": 10.0},
                               LEGACY: {"producer_byte_rate": 1000.0}}

    # apply: what the plan validated is made, exactly; the unlisted are left alone.
    done = cli("apply", "--conf", str(conf), "--plan", str(tmp_path / "plan.json"), "--json")
    assert done.returncode == 1, done.output[-3000:]
    doc = done.json()
    wanted = {
        E(user="orders-app"): {"producer_byte_rate": 2 * MIB, "consumer_byte_rate": 4 * MIB,
                               "request_percentage": 10.0},
        E(user=None): {"producer_byte_rate": MIB},
        E(client_id="reporting"): {"request_percentage": 50.0},
        E(user="orders-app", client_id="batch"): {"consumer_byte_rate": 8 * MIB},
        E(ip="127.0.0.1"): {"connection_creation_rate": 20.0},
        E(user="misfit"): {"producer_byte_rate": 1000.0},
        LEGACY: {"producer_byte_rate": 1000.0},
    }
    assert live(bootstrap, wanted) == wanted
    # The two unlisted quotas are left as they are: NOOP, already_present.
    assert doc["quotas"]["counts"] == {"set": 7, "blocked": 1, "rejected": 2,
                                       "already_present": 2}
    assert doc["quotas"]["unmanaged"] == {"local": 2}
    made = [(e, k, "SET", p, o, v, f) for e, k, v, f in (
        ("user=orders-app", "producer_byte_rate", 2.0 * MIB, MIB),
        ("user=orders-app", "consumer_byte_rate", 4.0 * MIB, None),
        ("user=<default>", "producer_byte_rate", 1.0 * MIB, None),
        ("client-id=reporting", "request_percentage", 50.0, None),
        ("user=orders-app client-id=batch", "consumer_byte_rate", 8.0 * MIB, None),
        ("ip=127.0.0.1", "connection_creation_rate", 20.0, None),
        ("user=misfit", "producer_byte_rate", 1000.0, None))
        for p, o in (("plan", "planned"), ("validate", "validated"), ("apply", "set"))]
    verified = [(e, k, "SET", "verify", "set", v, v) for e, k, v, _ in (
        ("user=orders-app", "producer_byte_rate", 2.0 * MIB, 0),
        ("user=orders-app", "consumer_byte_rate", 4.0 * MIB, 0),
        ("user=<default>", "producer_byte_rate", 1.0 * MIB, 0),
        ("client-id=reporting", "request_percentage", 50.0, 0),
        ("user=orders-app client-id=batch", "consumer_byte_rate", 8.0 * MIB, 0),
        ("ip=127.0.0.1", "connection_creation_rate", 20.0, 0),
        ("user=misfit", "producer_byte_rate", 1000.0, 0))]
    assert quota_audit(spark, wh, doc["run_id"]) == sorted([
        *made, *verified,
        ("user=bulk", "producer_byte_rate", "SET", "plan", "blocked", 200.0 * MIB, None),
        ("user=huge", "consumer_byte_rate", "SET", "plan", "planned", 1e19, None),
        ("user=huge", "consumer_byte_rate", "SET", "validate", "rejected", 1e19, None),
        ("user=misfit", "connection_creation_rate", "SET", "plan", "rejected", 5.0, None),
        ("user=legacy", "producer_byte_rate", "NOOP", "plan", "already_present", None,
         1000.0),
        ("user=orders-app", "request_percentage", "NOOP", "plan", "already_present", None,
         10.0),
    ])
    rows = {(r["quota"]["entity_user"], r["quota"]["key"], r["phase"]): r for r in
            spark.read.format("delta").load(str(wh / "topic_audit"))
            .where(f"run_id = '{doc['run_id']}' AND quota IS NOT NULL").collect()}
    assert rows[("huge", "consumer_byte_rate", "validate")]["error_name"] == "INVALID_REQUEST"
    assert "too large" in rows[("huge", "consumer_byte_rate", "validate")]["error_message"]
    assert [(v["policy"], v["message"]) for v in
            rows[("bulk", "producer_byte_rate", "plan")]["policy_violations"]] == [
        ("quota_range", rows[("bulk", "producer_byte_rate", "plan")]["policy_violations"][0]
         ["message"])]
    assert "force: true" in rows[("bulk", "producer_byte_rate", "plan")]["policy_violations"][
        0]["message"]

    # A second apply changes nothing.
    again = cli("apply", "--conf", str(conf), "--json")
    assert again.returncode == 1, again.output[-3000:]
    assert again.json()["quotas"]["counts"] == {"already_present": 9, "blocked": 1,
                                                "rejected": 2}
    assert live(bootstrap) == wanted

    # force lifts quota_range; an absent row is removed only with --allow-quota-removals.
    write_quota_table(spark, table, [
        *(r for r in ROWS if r.get("entity_user") not in ("bulk", "huge", "misfit")
          and r.get("entity_client_id") != "batch"),
        {**ROWS[6], "force": True},
        {**ROWS[3], "state": "absent", "quotas": None}])
    held = cli("apply", "--conf", str(conf), "--json")
    assert held.returncode == 0, held.output[-3000:]
    assert (held.json()["quotas"]["counts"], held.json()["quotas"]["removals_not_allowed"]) == (
        {"already_present": 8, "set": 1, "validated": 1}, 1)
    wanted[E(user="bulk")] = {"producer_byte_rate": 200 * MIB}
    assert live(bootstrap, wanted) == wanted
    removed = cli("apply", "--conf", str(conf), "--allow-quota-removals", "--json")
    assert removed.returncode == 0, removed.output[-3000:]
    assert removed.json()["quotas"]["counts"] == {"already_present": 9, "removed": 1}
    del wanted[E(user="orders-app", client_id="batch")]
    assert live(bootstrap, wanted) == wanted

    # Unlisted quotas go only with quotas.remove_unlisted and the flag.
    removing = quota_conf(tmp_path, bootstrap, wh, [table], {"remove_unlisted": True},
                          name="removing.yaml")
    kept = cli("apply", "--conf", str(removing), "--json")
    assert kept.returncode == 0, kept.output[-3000:]
    assert (kept.json()["quotas"]["counts"], kept.json()["quotas"]["removals_not_allowed"]) == (
        {"already_absent": 1, "already_present": 6, "validated": 3}, 3)
    assert live(bootstrap) == wanted
    gone = cli("apply", "--conf", str(removing), "--allow-quota-removals", "--json")
    assert gone.returncode == 0, gone.output[-3000:]
    assert gone.json()["quotas"]["counts"] == {"already_absent": 1, "already_present": 6,
                                               "removed": 3}
    del wanted[LEGACY]
    del wanted[E(user="misfit")]
    wanted[E(user="orders-app")].pop("request_percentage")
    assert live(bootstrap, wanted) == wanted

    # report: the run's quota rows, and the unmanaged quotas (none left).
    shown = cli("report", "--conf", str(conf), "--run-id", gone.json()["run_id"])
    assert shown.returncode == 0, shown.output[-3000:]
    assert ("  local quota user=legacy producer_byte_rate REMOVE: plan planned -> validate "
            "validated -> apply removed -> verify removed") in shown.stdout.splitlines()
    # The last snapshot is the view that run changed Kafka on; a plan records the new one.
    replanned = cli("plan", "--conf", str(conf), "--json")
    assert replanned.returncode == 0, replanned.output[-3000:]
    unmanaged = cli("report", "--conf", str(conf), "--unmanaged-quotas", "--json")
    assert unmanaged.json()["unmanaged_quotas"] == []


def test_live_quotas_imported_plan_as_noop_and_unmanaged_ones_are_checked(
        spark: Any, clean_quotas: str, connect_server: Any, tmp_path: Path) -> None:
    bootstrap = clean_quotas

    def thin(*args: str) -> Completed:
        """The CLI as a thin client of the lane's Spark Connect server."""
        return run_cli(list(args), remote=connect_server.address)

    existing = {E(user="svc-a"): {"producer_byte_rate": 3.0 * MIB, "consumer_byte_rate": MIB},
                E(user=None, client_id=None): {"request_percentage": 25.0},
                E(ip="127.0.0.2"): {"connection_creation_rate": 7.0}}
    _set(bootstrap, existing)
    wh = tmp_path / "wh"
    write_manifest_table(spark, wh / "desired_topics", [])
    source = tmp_path / "quotas.yaml"
    source.write_text(yaml.safe_dump([{"cluster": "local", "entity_user": "svc-a",
                                       "quotas": {"producer_byte_rate": 3 * MIB}}]))
    loaded = run_cli(["--source", str(source), "--table", str(wh / "named"), "--kind",
                      "quotas", "--json"], job="jobs/load_manifest.py",
                     remote=connect_server.address)
    assert loaded.returncode == 0, loaded.output[-3000:]
    assert loaded.json()["rows"] == 1
    conf = quota_conf(tmp_path, bootstrap, wh, [wh / "named"])

    # check: the quotas no manifest lists, as info findings.
    checked = thin("check", "--conf", str(conf), "--json")
    assert checked.returncode == 0, checked.output[-3000:]
    assert sorted((v["rule"], v["severity"], v["detail"]) for v in
                  checked.json()["violations"] if v["rule"] == "unmanaged_quota") == [
        ("unmanaged_quota", "info", f"quota {e} {k} {v}: named by no quota manifest row "
                                    "(import --quotas adopts it)")
        for e, k, v in sorted([("ip=127.0.0.2", "connection_creation_rate", "7.0"),
                               ("user=<default> client-id=<default>", "request_percentage",
                                "25.0"),
                               ("user=svc-a", "consumer_byte_rate", "1048576.0")])]

    # import: the entities no manifest names, as rows a plan finds all NOOP.
    imported = thin("import", "--conf", str(conf), "--quotas", "--table",
                    str(wh / "imported"), "--owner", "platform", "--json")
    assert imported.returncode == 0, imported.output[-3000:]
    assert [(c["cluster"], c["rows_written"], c["quotas_written"], c["left_out_managed"])
            for c in imported.json()["clusters"]] == [("local", 2, 2, 2)]
    written = sorted(json.dumps(r.asDict(recursive=True), sort_keys=True) for r in
                     spark.read.format("delta").load(str(wh / "imported")).collect())
    assert [json.loads(r) for r in written] == sorted([
        {"cluster": "local", "entity_user": None, "entity_client_id": None,
         "entity_ip": "127.0.0.2", "quotas": {"connection_creation_rate": 7.0},
         "state": "present", "owner": "platform", "force": None},
        {"cluster": "local", "entity_user": "<default>", "entity_client_id": "<default>",
         "entity_ip": None, "quotas": {"request_percentage": 25.0}, "state": "present",
         "owner": "platform", "force": None}], key=lambda r: json.dumps(r, sort_keys=True))
    adopted = quota_conf(tmp_path, bootstrap, wh, [wh / "imported"], name="adopted.yaml")
    plan = thin("plan", "--conf", str(adopted), "--json")
    assert plan.returncode == 0, plan.output[-3000:]
    assert plan.json()["quotas"]["counts"] == {"already_present": 4}
    assert live(bootstrap) == existing


def test_quotas_are_planned_again_under_the_lock_only_when_their_view_changed(
        spark: Any, clean_quotas: str, connect_server: Any, tmp_path: Path) -> None:
    """Under an apply's lock the quotas are read again (as every entity kind's are: ACL
    bindings and SCRAM credentials share the step). Before the run takes its lock, one
    quota its first plan sets is set by hand to what the manifest wants: the plan made
    under the lock sees it already present and sends only the other. An apply with a new
    value, nothing changed before its lock, keeps its first plan."""
    bootstrap = clean_quotas
    wh = tmp_path / "wh"
    table = wh / "desired_quotas"
    rows = [{"cluster": "local", "entity_user": f"relock-{u}",
             "quotas": {"producer_byte_rate": n * MIB}} for u, n in (("a", 1), ("b", 2))]
    write_quota_table(spark, table, rows)
    conf = quota_conf(tmp_path, bootstrap, wh, [table])
    paused = run_paused(["apply", "--conf", str(conf), "--json"], "pause-before-lock",
                        tmp_path / "go", connect_server.address)
    _set(bootstrap, {E(user="relock-a"): {"producer_byte_rate": MIB}})
    done = paused.go()
    assert done.returncode == 0, done.output[-3000:]
    assert "step quota first plan kept under the lock:" not in done.output
    assert quota_audit(spark, wh, done.json()["run_id"]) == sorted([
        ("user=relock-a", "producer_byte_rate", "NOOP", "plan", "already_present",
         float(MIB), float(MIB)),
        # found: the value before the change, then (verify) the value read back
        *(("user=relock-b", "producer_byte_rate", "SET", phase, outcome, 2.0 * MIB, found)
          for phase, outcome, found in (("plan", "planned", None),
                                        ("validate", "validated", None),
                                        ("apply", "set", None),
                                        ("verify", "set", 2.0 * MIB)))])
    assert live(bootstrap) == {E(user="relock-a"): {"producer_byte_rate": MIB},
                               E(user="relock-b"): {"producer_byte_rate": 2 * MIB}}

    rows[1]["quotas"] = {"producer_byte_rate": 3 * MIB}
    write_quota_table(spark, table, rows)
    kept = run_cli(["apply", "--conf", str(conf), "--json"], remote=connect_server.address)
    assert kept.returncode == 0, kept.output[-3000:]
    assert "step quota first plan kept under the lock:" in kept.output
    assert quota_audit(spark, wh, kept.json()["run_id"]) == sorted([
        ("user=relock-a", "producer_byte_rate", "NOOP", "plan", "already_present",
         float(MIB), float(MIB)),
        *(("user=relock-b", "producer_byte_rate", "SET", phase, outcome, 3.0 * MIB, found)
          for phase, outcome, found in (("plan", "planned", 2.0 * MIB),
                                        ("validate", "validated", 2.0 * MIB),
                                        ("apply", "set", 2.0 * MIB),
                                        ("verify", "set", 3.0 * MIB)))])
    assert live(bootstrap) == {E(user="relock-a"): {"producer_byte_rate": MIB},
                               E(user="relock-b"): {"producer_byte_rate": 3 * MIB}}
