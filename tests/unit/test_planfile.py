"""Saved plans: what they hold, how they are compared, and files that cannot be trusted."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

from provisioning.errors import UsageError
from provisioning.kinds.topics.section import plan_changes
from provisioning.registry import KINDS
from provisioning.views.kind import extensions_of
from provisioning.views.planfile import (
    PlanDocument,
    diff_plans,
    load_plan,
    plan_meta,
    save_plan,
    sections,
)
from tests.builders import plan_df, violation
from tests.helpers import VIEWS


def change(topic: str, action: str = "CREATE", **cols: Any) -> dict[str, Any]:
    return {"cluster": "local", "topic": topic, "action": action, "partitions": None,
            "replication_factor": None, "replica_assignment": None, "configs": None,
            "owner": None, "force": None, "drift": [], "violations": [], "row_errors": [],
            "live_topic_id": None, "live_error": None, "source_table": "m",
            "source_version": 4, **cols}


def doc(*changes: dict[str, Any], conf: str = "c1", clusters: tuple[str, ...] = ("local",),
        topics: str | None = None) -> PlanDocument:
    return PlanDocument.build(sections(VIEWS), conf, clusters, topics, {"topics": list(changes)})


def test_plan_changes_keep_everything_but_clean_noops(spark: SparkSession) -> None:
    v = violation("partitions_range", "too many")
    plan = plan_df(spark, [{"drift": [], **row} for row in [
        {"cluster": "local", "topic": "new", "action": "CREATE", "partitions": 3,
         "configs": {"a": "b"}, "row_errors": [], "source_table": "m", "source_version": 4},
        {"cluster": "local", "topic": "same", "action": "NOOP", "row_errors": [],
         "live_topic_id": "id-same", "source_table": "m", "source_version": 4},
        {"cluster": "local", "topic": "hidden", "action": "NOOP", "row_errors": [],
         "live_error": "TOPIC_AUTHORIZATION_FAILED", "source_table": "m",
         "source_version": 4},
        {"cluster": "local", "topic": "big", "action": "CREATE", "row_errors": [],
         "policy_violations": [v], "source_table": "m", "source_version": 4},
        {"cluster": None, "topic": "lost", "action": None, "row_errors": ["cluster: missing"],
         "source_table": "m", "source_version": 4},
        {"cluster": "local", "topic": "old", "action": "DELETE", "state": "absent",
         "force": True, "row_errors": [], "live_topic_id": "id-old", "source_table": "m",
         "source_version": 4},
    ]])
    expected = spark.createDataFrame(
        [("local", "new", "CREATE", 3, None, None, {"a": "b"}, None, None, [], [], [], None,
          None, "m", 4, None),
         ("local", "hidden", "NOOP", None, None, None, None, None, None, [], [], [], None,
          "TOPIC_AUTHORIZATION_FAILED", "m", 4, None),
         ("local", "big", "CREATE", None, None, None, None, None, None, [], [v], [], None,
          None, "m", 4, None),
         (None, "lost", None, None, None, None, None, None, None, [], [], ["cluster: missing"],
          None, None, "m", 4, None),
         ("local", "old", "DELETE", None, None, None, None, None, True, [], [], [], "id-old",
          None, "m", 4, None)],
        plan_changes(plan, extensions_of(VIEWS, "topics")).schema)
    assert_df_equality(plan_changes(plan, extensions_of(VIEWS, "topics")), expected,
                       ignore_row_order=True)


def test_the_digest_depends_on_content_only_and_not_on_order() -> None:
    a = change("a", partitions=3, configs={"y": "2", "x": "1"}, replica_assignment=None)
    b = change("b", action="DELETE", live_topic_id="id-b")
    assert doc(a, b).digest == doc(b, a).digest
    assert doc(a, b).digest != doc(a, {**b, "live_topic_id": "id-other"}).digest
    assert doc(a).canonical() == {
        "conf_digest": "c1", "scope": {"clusters": ["local"], "topics": None},
        "changes": [change("a", partitions=3, configs={"x": "1", "y": "2"})],
        "needs": [{"kind": "topics", "action": "CREATE", "flags": [], "changes": 1}]}


def test_save_then_load_gives_the_same_document(tmp_path: Path) -> None:
    saved = doc(change("a", replica_assignment={1: [2], 0: [1]}, configs={"k": "v"}),
                change("b", action="DELETE", live_topic_id="id-b", force=True),
                topics="a*")
    path = tmp_path / "plans" / "p.json"
    meta = plan_meta("r1", "plan", "conf.yaml", {"validated": 1}, 0,
                     dt.datetime(2026, 11, 22, 3, 0, tzinfo=dt.UTC))
    save_plan(path, saved, meta)
    loaded = load_plan(path, sections(VIEWS))
    assert loaded.document == saved
    assert loaded.document.entries["topics"][0]["replica_assignment"] == {"0": [1], "1": [2]}
    assert dict(loaded.meta) == {"run_id": "r1", "command": "plan", "conf": "conf.yaml",
                                 "created_at": "2026-11-22T03:00:00+00:00",
                                 "counts": {"validated": 1}, "exit_code": 0}
    assert json.loads(path.read_text())["digest"] == saved.digest


def test_a_hand_edited_plan_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    save_plan(path, doc(change("a", partitions=3)), {})
    data = json.loads(path.read_text())
    data["plan"]["changes"][0]["partitions"] = 30
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError) as err:
        load_plan(path, sections(VIEWS))
    assert str(err.value) == (f"the plan file {path} was modified after it was saved (its "
                              "digest does not match its content); run plan --out again")


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "is not JSON: Expecting property name enclosed in double quotes: "
                  "line 1 column 2 (char 1)"),
    ('{"format": "other/9"}', "is not a saved plan of format topic-provisioning-plan/1 "
                              "(format: 'other/9')"),
    ('{"format": "topic-provisioning-plan/1", "plan": {"scope": {}}}',
     "is malformed: missing or bad 'changes'"),
    ('{"format": "topic-provisioning-plan/1", "plan": {"conf_digest": "c", "scope": '
     '{"clusters": [], "topics": null}, "changes": [{"cluster": "x"}]}}',
     "lacks changes[0].topic, changes[0].action, changes[0].partitions, "
     "changes[0].replication_factor, changes[0].replica_assignment"),
])
def test_files_that_are_not_saved_plans_are_refused(tmp_path: Path, content: str,
                                                    message: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.raises(UsageError) as err:
        load_plan(path, sections(VIEWS))
    assert str(err.value) == f"the plan file {path} {message}"
    with pytest.raises(UsageError) as missing:
        load_plan(tmp_path / "nope.json", sections(VIEWS))
    assert str(missing.value) == (f"cannot read the plan file {tmp_path / 'nope.json'}: "
                                  "No such file or directory")


def test_equal_plans_have_no_difference() -> None:
    a = change("a", partitions=3)
    assert diff_plans(doc(a), doc(dict(a))).empty


def test_differences_name_each_topic_and_field() -> None:
    saved = doc(change("keep"), change("gone"), change("moved", partitions=3),
                change("dup", partitions=1), conf="aaaaaaaaaaaaaaaa")
    fresh = doc(change("keep"), change("new", action="DELETE", live_topic_id="id-new"),
                change("moved", partitions=4, source_version=5,
                       violations=[{"policy": "p", "message": "no"}]),
                change("dup", partitions=1), change("dup", partitions=2),
                conf="bbbbbbbbbbbbbbbb", topics="m*")
    diff = diff_plans(saved, fresh)
    assert diff.lines() == [
        "conf changed: digest aaaaaaaaaaaa -> bbbbbbbbbbbb",
        'scope changed: {"clusters":["local"],"topics":null} -> '
        '{"clusters":["local"],"topics":"m*"}',
        "+ local/new DELETE: in the fresh plan, not in the saved one",
        "- local/gone CREATE: in the saved plan, not in the fresh one",
        "~ local/dup: 1 manifest row(s) saved, 2 in the fresh plan",
        '~ local/moved: partitions: 3 -> 4; violations: [] -> [{"message":"no","policy":"p"}]; '
        "source_version: 4 -> 5",
        "1 added, 1 removed, 2 changed",
    ]
    assert diff.as_dict() == {
        "conf_digest": {"saved": "aaaaaaaaaaaaaaaa", "fresh": "bbbbbbbbbbbbbbbb"},
        "scope": {"saved": {"clusters": ["local"], "topics": None},
                  "fresh": {"clusters": ["local"], "topics": "m*"}},
        "added": [{"cluster": "local", "topic": "new", "action": "DELETE"}],
        "removed": [{"cluster": "local", "topic": "gone", "action": "CREATE"}],
        "changed": [
            {"cluster": "local", "topic": "dup",
             "differences": ["1 manifest row(s) saved, 2 in the fresh plan"]},
            {"cluster": "local", "topic": "moved", "differences": [
                "partitions: 3 -> 4",
                'violations: [] -> [{"message":"no","policy":"p"}]',
                "source_version: 4 -> 5"]},
        ],
    }


def test_long_differences_are_cut_with_a_count() -> None:
    fresh = doc(*[change(f"t{i:02d}") for i in range(5)])
    assert diff_plans(doc(), fresh).lines(limit=2) == [
        "+ local/t00 CREATE: in the fresh plan, not in the saved one",
        "+ local/t01 CREATE: in the fresh plan, not in the saved one",
        "... and 3 more topic(s)",
        "5 added, 0 removed, 0 changed",
    ]


def binding(action: str, **cols: Any) -> dict[str, Any]:
    return {"cluster": "local", "principal": "User:app", "host": "*",
            "resource_type": "TOPIC", "resource_name": "orders", "pattern_type": "LITERAL",
            "operation": "READ", "permission": "ALLOW", "action": action, "state": "present",
            "violations": [], "row_errors": [], **cols}


def quota(action: str, **cols: Any) -> dict[str, Any]:
    return {"cluster": "local", "entity_user": None, "entity_client_id": "app",
            "entity_ip": None, "key": "producer_byte_rate", "action": action,
            "state": "present", "value": 1024.0, "live_value": None, "violations": [],
            "row_errors": [], **cols}


def credential(action: str, **cols: Any) -> dict[str, Any]:
    return {"cluster": "local", "user": "app", "mechanism": "SCRAM-SHA-512",
            "action": action, "state": "present", "iterations": 8192,
            "live_iterations": 8192, "password_version": "v2", "applied_version": "v1",
            "password_env": "KAFKA_USER_PASSWORD_APP", "password_file": None,
            "violations": [], "row_errors": [], **cols}


def move(action: str = "REASSIGN") -> dict[str, Any]:
    return change("moved", action=action, live_topic_id="id-m", reassignment=[
        {"partition": 0, "before": [1], "after": [2], "in_flight": False}])


def test_the_needs_section_says_what_each_kinds_changes_take_of_an_apply() -> None:
    blocked = [{"policy": "p", "message": "m"}]
    document = PlanDocument.build(sections(VIEWS), "c1", ["local"], None, {
        "topics": [change("a"), change("b"), change("gone", action="DELETE"),
                   change("grown", action="ALTER"), change("odd", action="DRIFT"),
                   change("big", violations=blocked), change("bad", row_errors=["x"]),
                   move(), {**move("ALTER"), "topic": "grown-and-moved"}],
        "acls": [binding("GRANT"), binding("REVOKE", operation="WRITE"),
                 binding("NOOP", operation="DESCRIBE", violations=blocked)],
        "quotas": [quota("SET"), quota("REMOVE", key="consumer_byte_rate")],
        "users": [credential("UPSERT"), credential("DELETE", user="old"),
                  credential("UPSERT", user="bad", row_errors=["password: no source"])],
    })
    assert document.canonical()["needs"] == [
        {"kind": "topics", "action": "ALTER", "flags": ["--allow-alter"], "changes": 2},
        {"kind": "topics", "action": "CREATE", "flags": [], "changes": 2},
        {"kind": "topics", "action": "DELETE", "flags": ["--allow-deletes"], "changes": 1},
        {"kind": "acls", "action": "GRANT", "flags": [], "changes": 1},
        {"kind": "acls", "action": "REVOKE", "flags": ["--allow-acl-removals"],
         "changes": 1},
        {"kind": "reassign", "action": "REASSIGN",
         "flags": ["--allow-alter", "--allow-reassign"], "changes": 1},
        {"kind": "reassign", "action": "REASSIGN", "flags": ["--allow-reassign"],
         "changes": 1},
        {"kind": "quotas", "action": "REMOVE", "flags": ["--allow-quota-removals"],
         "changes": 1},
        {"kind": "quotas", "action": "SET", "flags": [], "changes": 1},
        {"kind": "users", "action": "DELETE", "flags": ["--allow-user-removals"],
         "changes": 1},
        {"kind": "users", "action": "UPSERT", "flags": [], "changes": 1},
    ]


def test_a_plan_of_nothing_to_apply_still_has_its_needs_section() -> None:
    assert doc(change("odd", action="DRIFT")).canonical()["needs"] == []


def test_every_apply_flag_of_the_command_line_is_a_setting_of_the_airflow_dag() -> None:
    dag = (Path(__file__).resolve().parents[2] / "jobs" / "airflow"
           / "provision_topics_dag.py").read_text()
    options = [f.option for k in KINDS for f in k.cli.apply_flags]
    assert options == ["--allow-deletes", "--allow-alter", "--allow-acl-removals",
                       "--allow-reassign", "--allow-quota-removals", "--allow-user-removals",
                       "--allow-group-removals", "--allow-offset-resets"]
    missing = [o for o in options if "- PROVISIONING_ALLOW_" + o[len("--allow-"):].upper()
               .replace("-", "_") + f": {o} " not in dag]
    assert missing == []


def test_a_needs_section_edited_alone_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    save_plan(path, doc(change("gone", action="DELETE")), {})
    data = json.loads(path.read_text())
    assert data["plan"]["needs"] == [
        {"kind": "topics", "action": "DELETE", "flags": ["--allow-deletes"], "changes": 1}]
    data["plan"]["needs"][0]["flags"] = []
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError) as err:
        load_plan(path, sections(VIEWS))
    assert str(err.value) == (f"the plan file {path} was modified after it was saved (its "
                              "digest does not match its content); run plan --out again")
