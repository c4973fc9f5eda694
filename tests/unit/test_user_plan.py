"""SCRAM credentials as pure transforms: manifest rows validated as data (what the broker
would refuse, since AlterUserScramCredentials has no validateOnly), the plan (UPSERT for a
missing credential, other iterations or a new password_version against the one last
applied; DELETE; NOOP), unlisted and unmanaged credentials, import rows, and the policies."""

from __future__ import annotations

from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from provisioning.conf import PolicySpec
from provisioning.errors import PolicyError
from provisioning.kinds.users.model import MODEL
from provisioning.kinds.users.plan import (
    UNLISTED_GUARDED,
    UNLISTED_KEPT,
    UNLISTED_REMOVED,
    plan_users,
    unmanaged_users,
    user_manifest_rows,
    with_user_row_errors,
)
from provisioning.kinds.users.policies import UserPolicyContext
from provisioning.kinds.users.schema import USER_DESIRED, USER_LIVE, USER_MANIFEST, USER_PLAN
from tests.builders import rows_df

SHA512, SHA256 = "SCRAM-SHA-512", "SCRAM-SHA-256"
APP = {"cluster": "local", "user": "orders-app", "mechanism": SHA512}
NO_SOURCE = ("password: no password source; set password_env or password_file (the job "
             "reads the password there; never put it in the table)")


def desired(spark: SparkSession, *rows: dict[str, Any]) -> DataFrame:
    """USER_DESIRED rows of APP (unless told) reading PW, source u@1, validated."""
    return rows_df(spark, USER_DESIRED, [{**APP, "password_env": "PW", **r} for r in rows],
                   {"source_table": "u", "source_version": 1, "row_errors": []}
                   ).transform(with_user_row_errors(("local",)))


def live(spark: SparkSession, *rows: dict[str, Any]) -> DataFrame:
    return rows_df(spark, USER_LIVE, [{**APP, "iterations": 8192, **r} for r in rows])


def errors(df: DataFrame) -> list[tuple[Any, ...]]:
    return sorted(((r["user"], r["mechanism"], tuple(r["row_errors"])) for r in df.collect()),
                  key=str)


def test_what_the_broker_would_refuse_is_refused_as_data_naming_the_column(
        spark: SparkSession) -> None:
    rows = desired(
        spark, {},
        {"user": "a b", "mechanism": "SCRAM-SHA-1"},
        {"user": "*", "iterations": 2048},
        {"user": "big", "iterations": 20000, "password_file": "/x"},
        {"user": "nosource", "password_env": None},
        {"user": "gone", "password_env": None, "state": "absent"},
        {"user": None, "mechanism": None, "cluster": "elsewhere", "state": "maybe"})
    assert errors(rows) == sorted([
        ("orders-app", SHA512, ()),
        ("a b", "SCRAM-SHA-1", (
            "user: 'a b' is not a user name the job sets (1 to 255 characters, no "
            "whitespace, control character, `,` or `=`, not `*`)",
            "mechanism: 'SCRAM-SHA-1' is not SCRAM-SHA-256 or SCRAM-SHA-512")),
        ("*", SHA512, (
            "user: '*' is not a user name the job sets (1 to 255 characters, no "
            "whitespace, control character, `,` or `=`, not `*`)",
            "iterations: 2048 is outside what the broker takes (4096 to 16384)")),
        ("big", SHA512, (
            "iterations: 20000 is outside what the broker takes (4096 to 16384)",
            "password: both password_env and password_file are set; keep one")),
        ("nosource", SHA512, (NO_SOURCE,)),
        ("gone", SHA512, ()),
        (None, None, (
            "cluster: 'elsewhere' is not defined in the conf (known: local)",
            "state: 'maybe' must be present or absent", "user: is missing",
            "mechanism: is missing (SCRAM-SHA-256 or SCRAM-SHA-512)")),
    ], key=str)
    assert sorted(r["iterations"] for r in rows.collect()) == [2048, 8192, 8192, 8192, 8192,
                                                              8192, 20000]


def test_two_rows_naming_one_credential_are_both_refused(spark: SparkSession) -> None:
    rows = desired(spark, {}, {"source_table": "v"}, {"mechanism": SHA256})
    assert errors(rows) == sorted([
        ("orders-app", SHA256, ()),
        ("orders-app", SHA512, ("duplicate: credential orders-app SCRAM-SHA-512 on cluster "
                                "local is also named by v@1; no copy is applied (one row per "
                                "user and mechanism)",)),
        ("orders-app", SHA512, ("duplicate: credential orders-app SCRAM-SHA-512 on cluster "
                                "local is also named by u@1; no copy is applied (one row per "
                                "user and mechanism)",)),
    ], key=str)


def plan_row(**cols: Any) -> dict[str, Any]:
    return {**APP, "state": "present", "password_env": "PW", "source_table": "u",
            "source_version": 1, **cols}


def plan_df(spark: SparkSession, *rows: dict[str, Any]) -> DataFrame:
    return rows_df(spark, USER_PLAN, list(rows), {"row_errors": [], "policy_violations": []})


def test_the_plan_upserts_what_is_missing_rotated_or_of_other_iterations(
        spark: SparkSession) -> None:
    wanted = desired(
        spark,
        {"password_version": "v1"},                                # live, v1 applied: NOOP
        {"user": "rotated", "password_version": "v2"},             # v1 applied: UPSERT
        {"user": "slower", "iterations": 16384, "password_version": "v1"},
        {"user": "new", "mechanism": SHA256},                      # missing: UPSERT
        {"user": "byhand"},                                        # live, none applied: NOOP
        {"user": "leaving", "state": "absent", "password_env": None},
        {"user": "left", "state": "absent", "password_env": None})
    found = live(spark, {"applied_version": "v1"}, {"user": "rotated", "applied_version": "v1"},
                 {"user": "slower", "applied_version": "v1"}, {"user": "byhand"},
                 {"user": "leaving"}, {"user": "other", "iterations": 4096})
    expected = plan_df(
        spark,
        plan_row(action="NOOP", iterations=8192, live_iterations=8192, password_version="v1",
                 applied_version="v1"),
        plan_row(user="rotated", action="UPSERT", iterations=8192, live_iterations=8192,
                 password_version="v2", applied_version="v1",
                 note="password_version v1 -> v2 (the password is set again)"),
        plan_row(user="slower", action="UPSERT", iterations=16384, live_iterations=8192,
                 password_version="v1", applied_version="v1", note="iterations 8192 -> 16384"),
        plan_row(user="new", mechanism=SHA256, action="UPSERT", iterations=8192,
                 note="new credential"),
        plan_row(user="byhand", action="NOOP", iterations=8192, live_iterations=8192),
        plan_row(user="leaving", action="DELETE", state="absent", password_env=None,
                 live_iterations=8192),
        plan_row(user="left", action="NOOP", state="absent", password_env=None),
        {**APP, "user": "other", "action": "NOOP", "state": "present",
         "live_iterations": 4096, "note": UNLISTED_KEPT})
    assert_df_equality(plan_users(wanted, found, False), expected, ignore_row_order=True,
                       ignore_nullable=True)


def test_unlisted_credentials_are_removed_only_by_remove_unlisted_never_a_rejected_rows(
        spark: SparkSession) -> None:
    wanted = desired(spark, {"user": "typo", "mechanism": SHA256, "iterations": 1})
    found = live(spark, {"user": "stale"}, {"user": "typo"})
    plan = plan_users(wanted, found, True).where("source_table IS NULL")
    assert sorted((r["user"], r["action"], r["state"], r["note"]) for r in plan.collect()) == [
        ("stale", "DELETE", "absent", UNLISTED_REMOVED),
        ("typo", "NOOP", "present", UNLISTED_GUARDED)]


def test_unmanaged_and_import_rows_name_no_password_source(spark: SparkSession) -> None:
    wanted = desired(spark, {}, {"user": "broken", "mechanism": "MD5"})
    found = live(spark, {"applied_version": "v3"}, {"user": "loose", "mechanism": SHA256,
                                                    "applied_version": "v3"},
                 {"user": "broken"}, {"cluster": "local", "user": None, "mechanism": None,
                                      "iterations": None})
    loose = unmanaged_users(found, wanted)
    assert sorted((r["user"], r["mechanism"]) for r in loose.collect()) == [
        ("broken", SHA512), ("loose", SHA256)]
    rows = user_manifest_rows(loose, "platform")
    assert_df_equality(rows, rows_df(spark, USER_MANIFEST, [
        {**APP, "user": "broken", "iterations": 8192, "state": "present", "owner": "platform"},
        {**APP, "user": "loose", "mechanism": SHA256, "iterations": 8192,
         "password_version": "v3", "state": "present", "owner": "platform"}]),
        ignore_nullable=True)
    # A plan over the imported rows rejects each, saying what it lacks.
    replanned = rows_df(spark, USER_DESIRED, [r.asDict() for r in rows.collect()],
                        {"source_table": "i", "source_version": 0, "row_errors": []}
                        ).transform(with_user_row_errors(("local",)))
    assert errors(replanned) == sorted([("broken", SHA512, (NO_SOURCE,)),
                                        ("loose", SHA256, (NO_SOURCE,))], key=str)


def judged(spark: SparkSession, specs: tuple[PolicySpec, ...] = (), **context: Any
           ) -> list[tuple[Any, ...]]:
    plan = plan_df(
        spark,
        plan_row(action="UPSERT", iterations=8192),
        plan_row(user="weak", action="UPSERT", iterations=4096),
        plan_row(user="weak-forced", action="UPSERT", iterations=4096, force=True),
        plan_row(user="sha256", mechanism=SHA256, action="UPSERT", iterations=8192),
        plan_row(user="job", action="UPSERT", iterations=8192),
        plan_row(user="admin-1", action="DELETE", state="absent"),
        plan_row(user="admin-2", action="NOOP", iterations=8192))
    out = MODEL.judged(plan, specs, UserPolicyContext(**context))
    return sorted((r["user"], tuple(v["policy"] for v in r["policy_violations"]))
                  for r in out.collect())


def test_policies_protect_the_jobs_own_and_admin_users_and_judge_iterations_and_mechanism(
        spark: SparkSession) -> None:
    specs = (PolicySpec(name="user_mechanism", params={"allowed": [SHA512]},
                        key="policies.user[0]"),)
    assert judged(spark, specs, own_users={"local": "job"}, protected_users=("admin-*",)
                  ) == [
        ("admin-1", ("protected_users",)), ("admin-2", ()),
        ("job", ("protected_users",)), ("orders-app", ()),
        ("sha256", ("user_mechanism",)), ("weak", ("user_iterations_min",)),
        ("weak-forced", ("user_iterations_min",))]
    # A lower floor lets 4096 through; the cap refuses a cluster's changes over it.
    cap = ("max_user_changes_per_cluster",)
    assert judged(spark, iterations_min=4096, max_changes_per_cluster=3) == [
        ("admin-1", cap), ("admin-2", ()), ("job", cap), ("orders-app", cap),
        ("sha256", cap), ("weak", cap), ("weak-forced", cap)]
    with pytest.raises(PolicyError, match="user_mechanism: allowed: MD5 is not"):
        judged(spark, (PolicySpec(name="user_mechanism", params={"allowed": ["MD5"]},
                                  key="policies.user[0]"),))


def test_security_policies_are_not_lifted_by_a_rows_force(spark: SparkSession) -> None:
    """A team's manifest row cannot weaken the credentials the platform allows: `force`
    lifts neither the iterations floor nor the allowed mechanisms."""
    plan = plan_df(
        spark,
        plan_row(user="weak-forced", action="UPSERT", iterations=4096, force=True),
        plan_row(user="sha256-forced", mechanism=SHA256, action="UPSERT", iterations=8192,
                 force=True))
    specs = (PolicySpec(name="user_mechanism", params={"allowed": [SHA512]},
                        key="policies.user[0]"),)
    out = MODEL.judged(plan, specs, UserPolicyContext())
    assert sorted((r["user"], tuple((v["policy"], v["message"])
                                    for v in r["policy_violations"]))
                  for r in out.collect()) == [
        ("sha256-forced", (("user_mechanism", (
            "credential sha256-forced SCRAM-SHA-256: policy user_mechanism allows only "
            "SCRAM-SHA-512; ask for one of them (`force` does not lift this policy)")),)),
        ("weak-forced", (("user_iterations_min", (
            "credential weak-forced SCRAM-SHA-512: 4096 iterations are fewer than "
            "users.iterations_min (8192); ask for at least 8192 (`force` does not lift this "
            "policy)")),))]


def test_the_audit_struct_holds_no_password_source(spark: SparkSession) -> None:
    plan = plan_df(spark, plan_row(action="UPSERT", iterations=8192, password_version="v2",
                                   live_iterations=4096, password_file="/secret/path"))
    row = plan.select(MODEL.plan_struct().alias("c")).collect()[0]["c"].asDict()
    assert row == {"user": "orders-app", "mechanism": SHA512, "iterations": 8192,
                   "found": 4096, "password_version": "v2"}
