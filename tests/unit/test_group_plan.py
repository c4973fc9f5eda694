"""Consumer groups as pure transforms: manifest rows validated as data (the state, the group
id, the configs map, duplicates), the plan (ALTER for a listed config that differs, DELETE
for an absent listed group, NOOP), unlisted groups and import rows, the policies
(protected_groups, group_members, the cap), and the outcome of a broker's answer."""

from __future__ import annotations

from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from provisioning import names
from provisioning.kinds.groups.conf import GROUP_POLICY_MODELS
from provisioning.kinds.groups.model import MODEL
from provisioning.kinds.groups.plan import (
    UNLISTED_CONFIGS,
    UNLISTED_GUARDED,
    UNLISTED_KEPT,
    UNLISTED_REMOVED,
    group_manifest_rows,
    plan_groups,
    unmanaged_groups,
    with_group_row_errors,
)
from provisioning.kinds.groups.policies import GROUP_POLICIES, GroupPolicyContext
from provisioning.kinds.groups.requests import outcome
from provisioning.kinds.groups.run import RUN
from provisioning.kinds.groups.schema import GROUP_DESIRED, GROUP_LIVE, GROUP_MANIFEST, GROUP_PLAN
from schemas import column_names
from tests.builders import rows_df

SESSION = "consumer.session.timeout.ms"
HEARTBEAT = "consumer.heartbeat.interval.ms"
ILLEGAL = ("is not a group id the job manages (1 to 255 characters, no control character, "
           "not blank)")


def desired(spark: SparkSession, *rows: dict[str, Any]) -> DataFrame:
    """GROUP_DESIRED rows on cluster local, source g@1, validated."""
    return rows_df(spark, GROUP_DESIRED, [{"cluster": "local", **r} for r in rows],
                   {"source_table": "g", "source_version": 1, "row_errors": []}
                   ).transform(with_group_row_errors(("local",)))


def live(spark: SparkSession, *rows: dict[str, Any]) -> DataFrame:
    return rows_df(spark, GROUP_LIVE, [{"cluster": "local", "type": "classic",
                                        "group_state": "Empty", "members": 0,
                                        "configs": {}, **r} for r in rows])


def errors(df: DataFrame) -> list[tuple[Any, ...]]:
    return sorted(((r["group"], tuple(r["row_errors"])) for r in df.collect()), key=str)


def test_bad_rows_are_refused_by_name_and_the_others_pass(spark: SparkSession) -> None:
    rows = desired(
        spark, {"group": "orders", "configs": {SESSION: "50000"}},
        {"group": "gone", "state": "absent"},
        {"group": "   "}, {"group": "tab\tbed"}, {"group": "x" * 256},
        {"group": "nulls", "configs": {SESSION: None, HEARTBEAT: "6000"}},
        {"group": "blank", "configs": {" ": "1"}},
        {"group": "both", "state": "absent", "configs": {SESSION: "50000"}},
        {"group": None, "cluster": "elsewhere", "state": "maybe"})
    assert errors(rows) == sorted([
        ("orders", ()), ("gone", ()),
        ("   ", (f"group: '   ' {ILLEGAL}",)),
        ("tab\tbed", (f"group: 'tab\tbed' {ILLEGAL}",)),
        ("x" * 256, (f"group: '{'x' * 256}' {ILLEGAL}",)),
        ("nulls", (f"configs: {SESSION} has no value (null); give each config a value, or "
                   "leave it out",)),
        ("blank", ("configs: a config name is empty (' ')",)),
        ("both", ("configs: an absent group sets no configs; leave configs out or make the "
                  "row present",)),
        (None, ("cluster: 'elsewhere' is not defined in the conf (known: local)",
                "state: 'maybe' must be present or absent", "group: is missing"))], key=str)


def test_two_rows_naming_one_group_are_both_refused(spark: SparkSession) -> None:
    rows = desired(spark, {"group": "orders"}, {"group": "orders", "owner": "b"},
                   {"group": "other"})
    twice = ("duplicate: group orders on cluster local is also named by another row of the "
             "same table; no copy is applied (one row per group)")
    assert errors(rows) == sorted([("orders", (twice,)), ("orders", (twice,)),
                                   ("other", ())], key=str)


def plan_of(df: DataFrame) -> list[tuple[Any, ...]]:
    return sorted((r["group"], r["action"], r["state"], r["changed"], r["note"])
                  for r in df.collect())


def test_the_plan_alters_the_listed_configs_that_differ_and_deletes_absent_listed_groups(
        spark: SparkSession) -> None:
    wanted = desired(
        spark, {"group": "new", "configs": {SESSION: "50000"}},
        {"group": "same", "configs": {SESSION: "50000"}},
        {"group": "other", "configs": {SESSION: "50000", HEARTBEAT: "6000"}},
        {"group": "plain"},
        {"group": "old", "state": "absent"},
        {"group": "never", "state": "absent"},
        {"group": "configured-only", "state": "absent"})
    found = live(spark, {"group": "same", "configs": {SESSION: "50000", HEARTBEAT: "7000"}},
                 {"group": "other", "configs": {SESSION: "45000", HEARTBEAT: "6000"}},
                 {"group": "plain", "configs": {HEARTBEAT: "7000"}},
                 {"group": "old"},
                 {"group": "configured-only", "type": None, "group_state": None,
                  "members": None, "configs": {SESSION: "50000"}})
    plan = plan_groups(wanted, found, remove_unlisted=False)
    assert plan.columns == column_names(GROUP_PLAN)
    assert plan_of(plan) == [
        ("configured-only", "NOOP", "absent", None, None),
        ("never", "NOOP", "absent", None, None),
        ("new", "ALTER", "present", {SESSION: "50000"},
         f"{SESSION} (default) -> 50000"),
        ("old", "DELETE", "absent", None, None),
        ("other", "ALTER", "present", {SESSION: "50000"}, f"{SESSION} 45000 -> 50000"),
        ("plain", "NOOP", "present", None, None),
        ("same", "NOOP", "present", None, None)]


def test_unlisted_groups_are_removed_only_by_remove_unlisted_never_a_rejected_rows(
        spark: SparkSession) -> None:
    wanted = desired(spark, {"group": "named"}, {"group": "broken", "state": "gone"})
    found = live(spark, {"group": "named"}, {"group": "broken"}, {"group": "loose"},
                 {"group": "configured", "type": None, "group_state": None,
                  "members": None, "configs": {SESSION: "50000"}})

    def unlisted(remove: bool) -> list[tuple[Any, ...]]:
        return [r for r in plan_of(plan_groups(wanted, found, remove))
                if r[0] in ("loose", "configured") or r[4] == UNLISTED_GUARDED]

    assert unlisted(False) == [("configured", "NOOP", "present", None, UNLISTED_CONFIGS),
                               ("loose", "NOOP", "present", None, UNLISTED_KEPT)]
    assert unlisted(True) == [("configured", "NOOP", "present", None, UNLISTED_CONFIGS),
                              ("loose", "DELETE", "absent", None, UNLISTED_REMOVED)]


def test_import_writes_the_unnamed_live_groups_with_their_own_configs(
        spark: SparkSession) -> None:
    found = live(spark, {"group": "named"}, {"group": "tuned", "configs": {SESSION: "50000"}},
                 {"group": "plain"})
    loose = unmanaged_groups(found, desired(spark, {"group": "named"}))
    assert_df_equality(group_manifest_rows(loose, "platform"), rows_df(spark, GROUP_MANIFEST, [
        {"cluster": "local", "group": "plain", "state": "present", "owner": "platform"},
        {"cluster": "local", "group": "tuned", "state": "present",
         "configs": {SESSION: "50000"}, "owner": "platform"}]), ignore_row_order=True,
        ignore_nullable=True)


def plan_row(group: str, action: str, **cols: Any) -> dict[str, Any]:
    return {"cluster": "local", "group": group, "action": action, "state": "present",
            "type": "classic", "group_state": "Empty", "members": 0, "row_errors": [],
            "policy_violations": [], **cols}


def judged(spark: SparkSession, max_changes: int = 200, **context: Any
           ) -> list[tuple[Any, ...]]:
    plan = rows_df(spark, GROUP_PLAN, [
        plan_row("orders", "ALTER", changed={SESSION: "50000"}),
        plan_row("keep-1", "ALTER", changed={SESSION: "50000"}),
        plan_row("keep-2", "NOOP"),
        plan_row("stopped", "DELETE", state="absent"),
        plan_row("busy", "DELETE", state="absent", group_state="Stable", members=2),
        plan_row("forced", "DELETE", state="absent", group_state="Stable", members=1,
                 force=True),
        plan_row("kip848", "DELETE", state="absent", type="consumer", group_state="Stable",
                 members=None),
        plan_row("share", "DELETE", state="absent", type="share", group_state="Empty",
                 members=0)])
    out = MODEL.judged(plan, (), GroupPolicyContext(max_changes_per_cluster=max_changes,
                                                    **context))
    return sorted((r["group"], tuple((v["policy"], v["message"]) for v in
                                     r["policy_violations"])) for r in out.collect())


def test_checks_finding_names_each_unnamed_groups_type_and_state(spark: SparkSession) -> None:
    found = live(spark, {"group": "plain"},
                 {"group": "configured", "type": None, "group_state": None, "members": None,
                  "configs": {SESSION: "50000"}})
    assert sorted(r[0] for r in found.select(RUN.finding()).collect()) == [
        "group configured (configs only, no group): named by no group manifest row "
        "(import --groups adopts it)",
        "group plain (type classic, state Empty): named by no group manifest row "
        "(import --groups adopts it)"]


def test_a_group_with_members_is_never_deleted_and_protected_groups_are_never_changed(
        spark: SparkSession) -> None:
    why = ("it has %s member(s) (type %s, state Stable); a group is deleted only when it has "
           "none: stop its consumers first (`force` does not lift this policy)")
    protected = ("groups.protected_groups protects it (keep-*); the job never changes or "
                 "deletes it (change it by hand, or take it out of groups.protected_groups "
                 "first)")
    assert judged(spark, protected_groups=("keep-*",)) == [
        ("busy", (("group_members", "group busy: " + why % (2, "classic")),)),
        ("forced", (("group_members", "group forced: " + why % (1, "classic")),)),
        ("keep-1", (("protected_groups", "group keep-1: " + protected),)),
        ("keep-2", ()),
        ("kip848", (("group_members",
                     "group kip848: " + why % ("an unknown number of", "consumer")),)),
        ("orders", ()), ("share", ()), ("stopped", ())]


def test_the_cap_counts_what_the_other_policies_let_through(spark: SparkSession) -> None:
    found = dict(judged(spark, max_changes=2))
    assert {g for g, v in found.items() if any(p == "max_group_changes_per_cluster"
                                               for p, _ in v)} == {"orders", "keep-1",
                                                                   "stopped", "share"}


def test_the_policy_registry_matches_its_parameter_models() -> None:
    assert sorted(GROUP_POLICIES) == sorted(GROUP_POLICY_MODELS) == ["custom"]


@pytest.mark.parametrize(("removes", "validate_only", "error", "attempts", "expected"), [
    (False, True, "NONE", 1, names.VALIDATED),
    (False, False, "NONE", 1, names.ALTERED),
    (True, False, "NONE", 1, names.DELETED),
    (True, False, "GROUP_ID_NOT_FOUND", 1, names.DELETED),
    (False, False, "GROUP_ID_NOT_FOUND", 1, names.UNKNOWN),
    (False, True, "INVALID_CONFIG", 1, names.REJECTED),
    (True, False, "NON_EMPTY_GROUP", 1, names.REJECTED),
    (False, True, "REQUEST_TIMED_OUT", 1, names.FAILED),
    (False, False, "REQUEST_TIMED_OUT", 1, names.UNKNOWN),
    (False, False, "REQUEST_TIMED_OUT", 0, names.FAILED),
])
def test_the_outcome_of_a_brokers_answer(removes: bool, validate_only: bool, error: str,
                                         attempts: int, expected: str) -> None:
    assert outcome(removes, validate_only, {"error_name": error, "attempts": attempts}) == \
        expected
