"""Offset reset policies as pure transforms over OFFSET_PLAN rows (protected_groups from
the consumer groups' setting, reset_requires_reason, the per-cluster cap), the registry
against its parameter models, the audit outcome of a broker's answer, and what an apply
sends with and without --allow-offset-resets."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

from provisioning import names
from provisioning.conf import PolicySpec
from provisioning.kinds.offsets.conf import OFFSET_POLICY_MODELS
from provisioning.kinds.offsets.model import MODEL
from provisioning.kinds.offsets.policies import OFFSET_POLICIES, OffsetPolicyContext
from provisioning.kinds.offsets.requests import outcome, settled_action
from provisioning.kinds.offsets.schema import OFFSET_PLAN
from tests.builders import rows_df


def plan(spark: SparkSession, *rows: dict[str, Any]) -> Any:
    return rows_df(spark, OFFSET_PLAN, [
        {"cluster": "local", "topic": "t", "to": "earliest", "target": 0,
         "reason": "replay", **r} for r in rows],
        {"row_errors": [], "policy_violations": []})


ROWS = ({"request_id": "a", "partition": 0, "group": "orders", "action": "RESET"},
        {"request_id": "a", "partition": 1, "group": "orders", "action": "RESET"},
        {"request_id": "k", "partition": 0, "group": "keep-1", "action": "DELETE"},
        {"request_id": "n", "partition": 0, "group": "billing", "action": "RESET",
         "reason": " "},
        {"request_id": "d", "partition": None, "group": "billing", "action": "NOOP",
         "reason": None})


def judged(spark: SparkSession, specs: tuple[PolicySpec, ...] = (), cap: int = 200
           ) -> list[tuple[Any, ...]]:
    context = OffsetPolicyContext(max_changes_per_cluster=cap, protected_groups=("keep-*",))
    got = MODEL.judged(plan(spark, *ROWS), specs, context)
    return sorted((r["request_id"], r["partition"],
                   tuple((v["policy"], v["message"]) for v in r["policy_violations"]))
                  for r in got.collect())


PROTECTED = ("protected_groups", "offset reset request k (group keep-1, topic t, partition "
             "0): groups.protected_groups protects group keep-1 (keep-*); the job never "
             "resets or deletes its offsets")


def test_protected_groups_are_given_no_offsets(spark: SparkSession) -> None:
    assert judged(spark) == [("a", 0, ()), ("a", 1, ()), ("d", None, ()),
                             ("k", 0, (PROTECTED,)), ("n", 0, ())]


def test_reset_requires_reason_refuses_a_change_without_one(spark: SparkSession) -> None:
    spec = PolicySpec("reset_requires_reason", {}, "policies.offset[0]")
    assert judged(spark, (spec,)) == [
        ("a", 0, ()), ("a", 1, ()), ("d", None, ()), ("k", 0, (PROTECTED,)),
        ("n", 0, (("reset_requires_reason", "offset reset request n (group billing, topic "
                   "t, partition 0): it gives no reason (policy reset_requires_reason); add "
                   "one to the request"),))]


def test_the_cap_counts_the_partitions_the_other_policies_let_through(
        spark: SparkSession) -> None:
    capped = {(r, p) for r, p, v in judged(spark, cap=2)
              if any(name == "max_offset_changes_per_cluster" for name, _ in v)}
    assert capped == {("a", 0), ("a", 1), ("n", 0)}
    assert {(r, p) for r, p, v in judged(spark, cap=3) if v} == {("k", 0)}


def test_the_policy_registry_matches_its_parameter_models() -> None:
    assert sorted(OFFSET_POLICIES) == sorted(OFFSET_POLICY_MODELS) == [
        "custom", "reset_requires_reason"]


@pytest.mark.parametrize(("action", "error", "attempts", "expected"), [
    ("RESET", "NONE", 1, "reset"),
    ("DELETE", "NONE", 1, "offsets_deleted"),
    ("DELETE", "GROUP_SUBSCRIBED_TO_TOPIC", 1, names.REJECTED),
    ("RESET", "NON_EMPTY_GROUP", 0, names.REJECTED),
    ("RESET", "KafkaTimeoutError", 1, names.UNKNOWN),
    ("RESET", "KafkaConnectionError", 0, names.FAILED),
])
def test_the_outcome_of_a_brokers_answer(action: str, error: str, attempts: int,
                                         expected: str) -> None:
    assert outcome(action, {"error_name": error, "attempts": attempts}) == expected


def test_a_partition_read_back_is_settled_only_when_it_holds_what_was_asked() -> None:
    assert settled_action("RESET", 3, {0: 3}, 0)
    assert not settled_action("RESET", 3, {0: 5}, 0)
    assert not settled_action("RESET", 3, {}, 0)
    assert settled_action("DELETE", None, {1: 4}, 0)
    assert not settled_action("DELETE", None, {0: 4}, 0)


def test_every_change_needs_the_flag() -> None:
    assert MODEL.flagged == ("RESET", "DELETE")
    assert MODEL.nouns.removals == "offset-resets"
    assert MODEL.nouns.manifests_key == "offset_resets"
