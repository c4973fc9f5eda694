"""ACL policies: the always-on guards (and `force`), topic_absent, the per-cluster cap,
owner_scope, principal_pattern, custom, and their order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from provisioning.conf import PolicySpec
from provisioning.errors import PolicyError
from provisioning.kinds.acls.conf import ACL_POLICY_MODELS
from provisioning.kinds.acls.model import MODEL
from provisioning.kinds.acls.policies import (
    ACL_POLICIES,
    AclPolicyContext,
    cluster_principals,
    custom,
    no_all_operation,
    owner_scope,
    principal_pattern,
    topic_absent,
    wildcard_principal,
)
from tests.builders import acl_plan_df, desired_df, snapshot_df, violation

# The policy chain and the per-cluster cap, on the entity base.
with_acl_policies = MODEL.judged
max_changes_per_cluster = MODEL.cap_policy

EXAMPLE = "tests.unit.custom_acl_policy_example"
FORCE = "or set `force: true` on its ACL manifest row"
# Topic manifest rows: orders.* are team a's, billing is team b's, old is being deleted.
TOPICS = [
    {"cluster": "local", "topic": "orders.in", "owner": "a"},
    {"cluster": "local", "topic": "orders.out", "owner": "a"},
    {"cluster": "local", "topic": "orders-legacy", "owner": "b"},
    {"cluster": "local", "topic": "billing", "owner": "b"},
    {"cluster": "local", "topic": "old", "owner": "a", "state": "absent"},
    {"cluster": "other", "topic": "gone", "owner": "a", "state": "absent"},
]
# Live topics: one nobody's manifest names.
LIVE = [{"cluster": "local", "topic": "orders.in"}, {"cluster": "local", "topic": "ords.x"}]


def context(spark: SparkSession, principals: Sequence[str] = (), cap: int = 200
            ) -> AclPolicyContext:
    return AclPolicyContext(topics=desired_df(spark, TOPICS), live_topics=snapshot_df(spark, LIVE),
                            cluster_principals=tuple(principals), max_changes_per_cluster=cap)


def row(operation: str = "READ", action: str = "GRANT", *violations: dict[str, str],
        **cols: Any) -> dict[str, Any]:
    """A plan row of User:app on topic orders.in of cluster local, from a manifest row."""
    return {"cluster": "local", "principal": "User:app", "resource_type": "TOPIC",
            "resource_name": "orders.in", "operation": operation, "action": action,
            "state": "absent" if action == "REVOKE" else "present", "source_table": "a",
            "source_version": 1, "live": action != "GRANT", **cols,
            "policy_violations": list(violations)}


def judged(spark: SparkSession, rows: list[dict[str, Any]], policy: Any) -> DataFrame:
    return acl_plan_df(spark, rows).transform(policy)


def assert_plan(actual: DataFrame, spark: SparkSession, rows: list[dict[str, Any]]) -> None:
    assert_df_equality(actual, acl_plan_df(spark, rows), ignore_row_order=True)


def text(operation: str = "READ", principal: str = "User:app", name: str = "orders.in",
         kind: str = "TOPIC", pattern: str = "LITERAL", permission: str = "ALLOW") -> str:
    return f"binding {permission} {principal} {operation} {kind} {name} ({pattern}) host *"


# --- always on ------------------------------------------------------------------------------


def test_a_wildcard_principal_gets_only_describe_unless_forced(spark: SparkSession) -> None:
    rows = [row("READ", principal="User:*"), row("DESCRIBE", principal="User:*"),
            row("WRITE", principal="User:*", force=True),
            row("WRITE", "REVOKE", principal="User:*"), row("READ")]
    refused = violation("wildcard_principal", (
        f"{text(principal='User:*')}: User:* is every principal of cluster local, and only "
        f"DESCRIBE may be granted to all of them; name the principals that need READ, {FORCE}"))
    assert_plan(judged(spark, rows, wildcard_principal({}, context(spark))), spark,
                [row("READ", "GRANT", refused, principal="User:*"), *rows[1:]])


def test_deny_to_a_wildcard_principal_is_judged_too(spark: SparkSession) -> None:
    rows = [row("WRITE", principal="User:*", permission="DENY")]
    refused = violation("wildcard_principal", (
        f"{text('WRITE', principal='User:*', permission='DENY')}: User:* is every principal "
        f"of cluster local, and only DESCRIBE may be granted to all of them; name the "
        f"principals that need WRITE, {FORCE}"))
    assert_plan(judged(spark, rows, wildcard_principal({}, context(spark))), spark,
                [row("WRITE", "GRANT", refused, principal="User:*", permission="DENY")])


def test_no_all_operation_unless_forced(spark: SparkSession) -> None:
    rows = [row("ALL"), row("ALL", force=True), row("ALL", "REVOKE"), row("READ")]
    refused = violation("no_all_operation", (
        f"{text('ALL')}: ALL is every operation on the resource, present and future; list "
        f"the operations needed, {FORCE}"))
    assert_plan(judged(spark, rows, no_all_operation({}, context(spark))), spark,
                [row("ALL", "GRANT", refused), *rows[1:]])


def test_cluster_bindings_only_for_listed_principals_unless_forced(spark: SparkSession) -> None:
    cluster = {"resource_type": "CLUSTER", "resource_name": "kafka-cluster"}
    rows = [row("ALTER", principal="User:admin", **cluster),
            row("IDEMPOTENT_WRITE", **cluster),
            row("IDEMPOTENT_WRITE", principal="User:x", force=True, **cluster),
            row("ALTER", "REVOKE", **cluster)]
    refused = violation("cluster_principals", (
        f"{text('IDEMPOTENT_WRITE', name='kafka-cluster', kind='CLUSTER')}: CLUSTER bindings "
        f"go only to the principals listed in acls.cluster_principals (User:admin, "
        f"User:ops); add User:app there, {FORCE}"))
    assert_plan(judged(spark, rows, cluster_principals(
        {}, context(spark, ["User:admin", "User:ops"]))), spark,
        [rows[0], row("IDEMPOTENT_WRITE", "GRANT", refused, **cluster), *rows[2:]])


def test_without_cluster_principals_no_cluster_grant_passes_unforced(
        spark: SparkSession) -> None:
    cluster = {"resource_type": "CLUSTER", "resource_name": "kafka-cluster"}
    refused = violation("cluster_principals", (
        f"{text('DESCRIBE', name='kafka-cluster', kind='CLUSTER')}: CLUSTER bindings go only "
        f"to the principals listed in acls.cluster_principals (none listed); add User:app "
        f"there, {FORCE}"))
    assert_plan(judged(spark, [row("DESCRIBE", **cluster)],
                       cluster_principals({}, context(spark))), spark,
                [row("DESCRIBE", "GRANT", refused, **cluster)])


def test_a_grant_on_a_topic_being_deleted_is_blocked_even_forced(spark: SparkSession) -> None:
    rows = [row("READ", resource_name="old", force=True),
            row("READ", resource_name="old", pattern_type="PREFIXED"),
            row("READ", resource_name="old", resource_type="GROUP"),
            row("READ", "REVOKE", resource_name="old"),
            row("READ", resource_name="gone"),
            row("READ", resource_name="orders.in")]
    refused = violation("topic_absent", (
        f"{text(name='old')}: topic old is `state: absent` in the topic manifests, so the job "
        "deletes it, and a grant on its name would pass to any topic recreated under it; drop "
        "this ACL row or the topic's absent row"))
    assert_plan(judged(spark, rows, topic_absent({}, context(spark))), spark,
                [row("READ", "GRANT", refused, resource_name="old", force=True), *rows[1:]])


# --- the cap ----------------------------------------------------------------------------------


def test_over_the_cap_no_change_of_the_cluster_is_made_even_forced(spark: SparkSession) -> None:
    earlier = violation("no_all_operation", "refused earlier")
    rows = [row("READ", force=True), row("WRITE", "REVOKE"), row("CREATE"),
            row("ALL", "GRANT", earlier), row("DESCRIBE", "NOOP"),
            row("READ", row_errors=["operations: bad"]),
            row("READ", cluster="other"), row("WRITE", cluster="other")]

    def capped(n: int) -> dict[str, str]:
        return violation("max_acl_changes_per_cluster", (
            f"{n} ACL changes planned on cluster local exceed the per-run cap of 2; no grant "
            "or revoke is made on this cluster (split the change or raise "
            "acls.max_changes_per_cluster)"))

    assert_plan(judged(spark, rows, max_changes_per_cluster({}, context(spark, cap=2))), spark, [
        row("READ", "GRANT", capped(3), force=True), row("WRITE", "REVOKE", capped(3)),
        row("CREATE", "GRANT", capped(3)), *rows[3:]])


# --- owner_scope ------------------------------------------------------------------------------


def _scope(message: str, name: str = "orders.in", pattern: str = "LITERAL",
           operation: str = "READ") -> dict[str, str]:
    return violation("owner_scope", f"{text(operation, name=name, pattern=pattern)}: {message}")


def test_owner_scope_literal_names_must_be_topics_of_the_row_owner(spark: SparkSession) -> None:
    rows = [row("READ", owner="a"), row("WRITE", "REVOKE", owner="a"),
            row("READ", resource_name="billing", owner="a", force=True),
            row("READ", resource_name="ords.x", owner="a"),
            row("READ", resource_name="*", owner="a")]
    assert_plan(judged(spark, rows, owner_scope({}, context(spark))), spark, [
        *rows[:2],
        row("READ", "GRANT", _scope(
            "topic billing on cluster local is not a topic of owner a (no topic manifest row "
            "of that owner alone names it); only a topic's owner grants or revokes access to "
            "it: ask its team to add this row", name="billing"),
            resource_name="billing", owner="a", force=True),
        row("READ", "GRANT", _scope(
            "topic ords.x on cluster local is not a topic of owner a (no topic manifest row "
            "of that owner alone names it); only a topic's owner grants or revokes access to "
            "it: ask its team to add this row", name="ords.x"),
            resource_name="ords.x", owner="a"),
        row("READ", "GRANT", _scope(
            "topic * on cluster local is not a topic of owner a (no topic manifest row of "
            "that owner alone names it); only a topic's owner grants or revokes access to it: "
            "ask its team to add this row", name="*"), resource_name="*", owner="a"),
    ])


def test_owner_scope_prefixes_must_cover_the_owners_topics_and_no_other(
        spark: SparkSession) -> None:
    prefixed = {"pattern_type": "PREFIXED"}
    rows = [row("READ", resource_name="orders.", owner="a", **prefixed),
            row("READ", resource_name="orders", owner="a", **prefixed),
            row("READ", resource_name="or", owner="a", **prefixed),
            row("READ", resource_name="pay", owner="a", **prefixed)]
    assert_plan(judged(spark, rows, owner_scope({}, context(spark))), spark, [
        rows[0],
        row("READ", "GRANT", _scope(
            "prefix orders also covers topic(s) orders-legacy on cluster local, which are not "
            "owner a's; narrow the prefix to that owner's topics", "orders", "PREFIXED"),
            resource_name="orders", owner="a", **prefixed),
        row("READ", "GRANT", _scope(
            "prefix or also covers topic(s) orders-legacy, ords.x on cluster local, which are "
            "not owner a's; narrow the prefix to that owner's topics", "or", "PREFIXED"),
            resource_name="or", owner="a", **prefixed),
        row("READ", "GRANT", _scope(
            "prefix pay covers no topic of owner a on cluster local; a prefix grant must cover "
            "the owner's own topics", "pay", "PREFIXED"),
            resource_name="pay", owner="a", **prefixed),
    ])


def test_owner_scope_needs_an_owner_and_skips_exempt_owners_and_unsourced_rows(
        spark: SparkSession) -> None:
    rows = [row("READ"), row("READ", resource_name="billing", owner="platform"),
            row("READ", "REVOKE", resource_name="billing", source_table=None,
                source_version=None),
            row("READ", resource_type="GROUP", resource_name="g", owner="a")]
    assert_plan(judged(spark, rows, owner_scope({"exempt_owners": ["platform"]},
                                                context(spark))), spark, [
        row("READ", "GRANT", _scope(
            "owner_scope needs the ACL row's owner to tell whose topics it may open, and the "
            "row has none; set `owner` to the team that owns the topic(s)")),
        *rows[1:]])


def test_owner_scope_refuses_bad_parameters(spark: SparkSession) -> None:
    with pytest.raises(PolicyError, match="exempt_owners: expected a non-empty list"):
        owner_scope({"exempt_owners": "platform"}, context(spark))


# --- principal_pattern, custom ----------------------------------------------------------------


def test_principal_pattern_by_owner_then_default(spark: SparkSession) -> None:
    rows = [row("READ", principal="User:pay-app", owner="payments"),
            row("READ", principal="User:orders-app", owner="payments"),
            row("READ", principal="User:Orders", owner="a"),
            row("READ", principal="User:Orders", owner="a", action="NOOP", live=True)]
    policy = principal_pattern({"default": "User:[a-z-]+", "by_owner": {"payments": "User:pay-.+"}},
                               context(spark))
    assert_plan(judged(spark, rows, policy), spark, [
        rows[0],
        row("READ", "GRANT", violation("principal_pattern", (
            f"{text(principal='User:orders-app')}: principal User:orders-app does not match "
            "User:pay-.+, the pattern policy principal_pattern sets for owner payments; name a "
            "principal that does, or change the policy")),
            principal="User:orders-app", owner="payments"),
        row("READ", "GRANT", violation("principal_pattern", (
            f"{text(principal='User:Orders')}: principal User:Orders does not match "
            "User:[a-z-]+, the pattern policy principal_pattern sets for every owner; name a "
            "principal that does, or change the policy")),
            principal="User:Orders", owner="a"),
        rows[3]])


def test_a_custom_acl_policy_runs_and_its_columns_are_checked(spark: SparkSession) -> None:
    rows = [row("READ", host="10.0.0.1"), row("READ")]
    policy = custom({"callable": f"{EXAMPLE}:no_hosts", "host": "*"}, context(spark))
    assert_plan(judged(spark, rows, policy), spark, [
        row("READ", "GRANT", violation("no_hosts", "host 10.0.0.1 is not *"), host="10.0.0.1"),
        rows[1]])
    broken = custom({"callable": f"{EXAMPLE}:drops_note"}, context(spark))
    with pytest.raises(PolicyError) as err:
        judged(spark, rows, broken)
    assert str(err.value) == (
        f"the DataFrame custom acl policy '{EXAMPLE}:drops_note' returned does not have "
        "exactly the ACL_PLAN columns (names, order, types): missing columns: note")


# --- the whole chain --------------------------------------------------------------------------


def test_every_configurable_acl_policy_is_registered_with_its_parameter_check() -> None:
    assert sorted(ACL_POLICIES) == sorted(ACL_POLICY_MODELS) == [
        "custom", "owner_scope", "principal_pattern"]


def test_policies_run_always_on_then_configured_then_the_cap_over_the_survivors(
        spark: SparkSession) -> None:
    rows = [row("ALL", owner="a"), row("READ", resource_name="billing", owner="a"),
            row("READ", owner="a"), row("WRITE", owner="a")]
    specs = [PolicySpec("owner_scope", {}, "acls.owner_scope")]
    out = with_acl_policies(acl_plan_df(spark, rows), specs, context(spark, cap=1))
    all_refused = violation("no_all_operation", (
        f"{text('ALL')}: ALL is every operation on the resource, present and future; list "
        f"the operations needed, {FORCE}"))
    out_of_scope = _scope(
        "topic billing on cluster local is not a topic of owner a (no topic manifest row of "
        "that owner alone names it); only a topic's owner grants or revokes access to it: ask "
        "its team to add this row", name="billing")
    capped = violation("max_acl_changes_per_cluster", (
        "2 ACL changes planned on cluster local exceed the per-run cap of 1; no grant or "
        "revoke is made on this cluster (split the change or raise "
        "acls.max_changes_per_cluster)"))
    assert_plan(out, spark, [
        row("ALL", "GRANT", all_refused, owner="a"),
        row("READ", "GRANT", out_of_scope, resource_name="billing", owner="a"),
        row("READ", "GRANT", capped, owner="a"), row("WRITE", "GRANT", capped, owner="a")])


def test_an_unknown_or_badly_configured_policy_is_named(spark: SparkSession) -> None:
    plan = acl_plan_df(spark, [row()])
    with pytest.raises(PolicyError, match=r"^policies.acl\[0\].name: unknown acl policy 'x'$"):
        with_acl_policies(plan, [PolicySpec("x", {}, "policies.acl[0]")], context(spark))
    with pytest.raises(PolicyError) as err:
        with_acl_policies(plan, [PolicySpec("principal_pattern", {}, "policies.acl[0]")],
                          context(spark))
    assert str(err.value) == ("policies.acl[0] (principal_pattern): acl policy "
                              "principal_pattern: default: set at least one of default, "
                              "by_owner")


def test_the_plan_given_must_have_the_acl_plan_columns(spark: SparkSession) -> None:
    with pytest.raises(PolicyError, match="missing columns: note"):
        with_acl_policies(acl_plan_df(spark, [row()]).drop("note"), [], context(spark))
