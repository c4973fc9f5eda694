"""Quota policies: quota_range (and `force`), custom, the per-cluster cap, and the chain
(configured in order, the cap last, rejected rows never judged)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning.conf import PolicySpec
from provisioning.errors import PolicyError
from provisioning.kinds.quotas.conf import SECTION as KIND
from provisioning.kinds.quotas.model import MODEL
from provisioning.kinds.quotas.policies import (
    QUOTA_POLICIES,
    QuotaPolicyContext,
    custom,
    is_change,
    quota_range,
)
from provisioning.transforms.policies.base import with_violation
from tests.builders import violation
from tests.quota_builders import quota_plan_df

# The policy chain and the per-cluster cap, on the entity base.
with_quota_policies = MODEL.judged
max_quota_changes_per_cluster = MODEL.cap_policy
HERE = "tests.unit.test_quota_policies"
FORCE = "or set `force: true` on its quota manifest row"


# Custom policies the tests name in conf: one honours the contract, one breaks it.
def no_changes_for(plan: DataFrame, context: QuotaPolicyContext, params: Mapping[str, Any]
                   ) -> DataFrame:
    """Refuse every change of the user `params["user"]`."""
    user = str(params["user"])
    return with_violation(plan, "no_changes_for", is_change() & (F.col("entity_user") == user),
                          F.format_string("user %s is frozen", F.col("entity_user")))


def drops_note(plan: DataFrame, context: QuotaPolicyContext, params: Mapping[str, Any]
               ) -> DataFrame:
    """Breaks the contract: loses a column."""
    return plan.drop("note")


def row(key: str = "producer_byte_rate", action: str = "SET", value: float | None = 1e6,
        *violations: dict[str, str], **cols: Any) -> dict[str, Any]:
    """A plan row of user app on cluster local, from a manifest row."""
    return {"cluster": "local", "entity_user": "app", "key": key, "action": action,
            "state": "absent" if action == "REMOVE" else "present",
            "value": None if action == "REMOVE" else value, "source_table": "q",
            "source_version": 1, **cols, "policy_violations": list(violations)}


def judged(spark: SparkSession, rows: list[dict[str, Any]], policy: Any) -> DataFrame:
    return quota_plan_df(spark, rows).transform(policy)


def assert_plan(actual: DataFrame, spark: SparkSession, rows: list[dict[str, Any]]) -> None:
    assert_df_equality(actual, quota_plan_df(spark, rows), ignore_row_order=True)


def capped(n: int, cap: int, cluster: str = "local") -> dict[str, str]:
    return violation("max_quota_changes_per_cluster", (
        f"{n} quota changes planned on cluster {cluster} exceed the per-run cap of {cap}; no "
        "quota is set or removed on this cluster (split the change or raise "
        "quotas.max_changes_per_cluster)"))


BYTE_RANGE = {"key": "producer_byte_rate", "min": 1024, "max": 1048576}


def _outside(value: str, word: str, bound: str, which: str, who: str = "user=app"
             ) -> dict[str, str]:
    return violation("quota_range", (
        f"quota {who} producer_byte_rate: {value} is {word} {bound}, the {which} policy "
        f"quota_range sets for producer_byte_rate; ask for a value within the range, {FORCE}"))


# --- quota_range --------------------------------------------------------------------------


def test_a_set_outside_the_range_is_blocked(spark: SparkSession) -> None:
    rows = [row(value=10.0), row(value=2e6, entity_user=None, entity_ip="10.0.0.1"),
            row(value=1024.0), row(value=1048576.0)]
    assert_plan(judged(spark, rows, quota_range(BYTE_RANGE, QuotaPolicyContext())), spark, [
        row("producer_byte_rate", "SET", 10.0, _outside("10", "below", "1024", "min")),
        row("producer_byte_rate", "SET", 2e6, _outside("2000000", "above", "1048576", "max",
                                                       "ip=10.0.0.1"),
            entity_user=None, entity_ip="10.0.0.1"),
        *rows[2:]])


def test_quota_range_judges_only_sets_of_its_key_unless_forced(spark: SparkSession) -> None:
    rows = [row(value=10.0, force=True), row("consumer_byte_rate", value=10.0),
            row(action="REMOVE", live_value=10.0), row(action="NOOP", value=10.0,
                                                       live_value=10.0)]
    assert_plan(judged(spark, rows, quota_range(BYTE_RANGE, QuotaPolicyContext())), spark,
                rows)


def test_a_range_with_one_bound_judges_that_bound_only(spark: SparkSession) -> None:
    rows = [row("request_percentage", value=0.5), row("request_percentage", value=900.0)]
    policy = quota_range({"key": "request_percentage", "min": 0.75}, QuotaPolicyContext())
    assert_plan(judged(spark, rows, policy), spark, [
        row("request_percentage", "SET", 0.5, violation("quota_range", (
            "quota user=app request_percentage: 0.5 is below 0.75, the min policy "
            "quota_range sets for request_percentage; ask for a value within the range, "
            f"{FORCE}"))),
        rows[1]])


def test_quota_range_refuses_bad_parameters() -> None:
    with pytest.raises(PolicyError) as err:
        quota_range({"key": "producer_byte_rate", "min": 10, "max": 5}, QuotaPolicyContext())
    assert str(err.value) == "quota policy quota_range: min: must be <= max (10 > 5)"


# --- the cap --------------------------------------------------------------------------------


def test_over_the_cap_no_change_of_the_cluster_is_made_even_forced(spark: SparkSession) -> None:
    earlier = violation("quota_range", "refused earlier")
    rows = [row(force=True), row("consumer_byte_rate", "REMOVE", live_value=1.0),
            row("request_percentage", value=5.0),
            row("controller_mutation_rate", "SET", 1.0, earlier),
            row("producer_byte_rate", "NOOP", entity_user="b"),
            row(entity_user="bad", row_errors=["quotas.x: bad"]),
            row(cluster="other"), row("consumer_byte_rate", cluster="other")]
    policy = max_quota_changes_per_cluster({}, QuotaPolicyContext(max_changes_per_cluster=2))
    assert_plan(judged(spark, rows, policy), spark, [
        row("producer_byte_rate", "SET", 1e6, capped(3, 2), force=True),
        row("consumer_byte_rate", "REMOVE", None, capped(3, 2), live_value=1.0),
        row("request_percentage", "SET", 5.0, capped(3, 2)),
        *rows[3:]])


def test_a_cap_of_zero_blocks_every_change(spark: SparkSession) -> None:
    rows = [row(), row("consumer_byte_rate", "NOOP", live_value=1e6)]
    policy = max_quota_changes_per_cluster({}, QuotaPolicyContext(max_changes_per_cluster=0))
    assert_plan(judged(spark, rows, policy), spark, [
        row("producer_byte_rate", "SET", 1e6, capped(1, 0)), rows[1]])


# --- custom ---------------------------------------------------------------------------------


def test_a_custom_quota_policy_runs(spark: SparkSession) -> None:
    rows = [row(entity_user="frozen"), row(), row(entity_user="frozen", action="NOOP")]
    policy = custom({"callable": f"{HERE}:no_changes_for", "user": "frozen"},
                    QuotaPolicyContext())
    assert_plan(judged(spark, rows, policy), spark, [
        row("producer_byte_rate", "SET", 1e6,
            violation("no_changes_for", "user frozen is frozen"), entity_user="frozen"),
        *rows[1:]])


def test_a_custom_quota_policy_must_return_the_quota_plan_columns(spark: SparkSession) -> None:
    broken = custom({"callable": f"{HERE}:drops_note"}, QuotaPolicyContext())
    with pytest.raises(PolicyError) as err:
        judged(spark, [row()], broken)
    assert str(err.value) == (
        f"the DataFrame custom quota policy '{HERE}:drops_note' returned does not have "
        "exactly the QUOTA_PLAN columns (names, order, types): missing columns: note")


def test_a_custom_quota_policy_must_name_a_callable() -> None:
    with pytest.raises(PolicyError) as err:
        custom({"callable": f"{HERE}:nothing_here"}, QuotaPolicyContext())
    assert str(err.value) == (
        f"custom quota policy: callable: module '{HERE}' has no attribute 'nothing_here'")


# --- the whole chain --------------------------------------------------------------------------


def test_every_configurable_quota_policy_is_registered_with_its_parameter_check() -> None:
    assert sorted(QUOTA_POLICIES) == sorted(KIND.policy_models["quota"]) == [
        "custom", "quota_range"]


def test_policies_run_in_conf_order_then_the_cap_over_the_valid_survivors(
        spark: SparkSession) -> None:
    rows = [row(value=10.0), row(entity_user="frozen"), row("consumer_byte_rate"),
            row("request_percentage", value=5.0),
            row(value=1.0, entity_user="bad", row_errors=["quotas.x: bad"])]
    specs = [PolicySpec("quota_range", BYTE_RANGE, "policies.quota[0]"),
             PolicySpec("custom", {"callable": f"{HERE}:no_changes_for", "user": "frozen"},
                        "policies.quota[1]")]
    out = with_quota_policies(quota_plan_df(spark, rows), specs,
                              QuotaPolicyContext(max_changes_per_cluster=1))
    assert_plan(out, spark, [
        row("producer_byte_rate", "SET", 10.0, _outside("10", "below", "1024", "min")),
        row("producer_byte_rate", "SET", 1e6, violation("no_changes_for", "user frozen is frozen"),
            entity_user="frozen"),
        row("consumer_byte_rate", "SET", 1e6, capped(2, 1)),
        row("request_percentage", "SET", 5.0, capped(2, 1)),
        rows[4]])


def test_an_unknown_or_badly_configured_policy_is_named(spark: SparkSession) -> None:
    plan = quota_plan_df(spark, [row()])
    with pytest.raises(PolicyError, match=r"^policies.quota\[0\].name: unknown quota policy "
                                          r"'x'$"):
        with_quota_policies(plan, [PolicySpec("x", {}, "policies.quota[0]")],
                            QuotaPolicyContext())
    with pytest.raises(PolicyError) as err:
        with_quota_policies(plan, [PolicySpec("quota_range", {"key": "producer_byte_rate"},
                                              "policies.quota[0]")], QuotaPolicyContext())
    assert str(err.value) == ("policies.quota[0] (quota_range): quota policy quota_range: "
                              "min: set at least one of min, max")


def test_the_plan_given_must_have_the_quota_plan_columns(spark: SparkSession) -> None:
    with pytest.raises(PolicyError, match="missing columns: note"):
        with_quota_policies(quota_plan_df(spark, [row()]).drop("note"), [],
                            QuotaPolicyContext())
