"""Policy blocks in the conf: every bad parameter is named with its key, all at once."""

from __future__ import annotations

from typing import Any

import pytest

from provisioning.conf import PolicySpec
from provisioning.errors import ConfError
from provisioning.kinds.topics.conf import TopicsConf
from provisioning.kinds.topics.policies.registry import CREATE_POLICIES, DELETE_POLICIES
from tests.helpers import parse_conf

EXAMPLE = "tests.unit.custom_policy_example"
BASE = {
    "clusters": {"local": {"bootstrap_servers": "127.0.0.1:9092"}},
    "tables": {"manifests": ["m"], "audit": "a", "runs": "r", "snapshots": "s"},
}


def _conf(create: list[Any] | None = None, delete: list[Any] | None = None) -> dict[str, Any]:
    policies: dict[str, Any] = {}
    if create is not None:
        policies["create"] = create
    if delete is not None:
        policies["delete"] = delete
    return {**BASE, "policies": policies}


def _problems(create: list[Any] | None = None, delete: list[Any] | None = None) -> list[str]:
    with pytest.raises(ConfError) as err:
        parse_conf(_conf(create, delete), "test.yaml")
    return err.value.problems


def test_every_configurable_policy_is_registered() -> None:
    assert sorted(CREATE_POLICIES) == [
        "custom", "forbidden_configs", "min_insync_below_rf", "owner_partition_quota",
        "partition_budget", "partitions_range", "replication_factor_range", "required_configs",
        "topic_name_pattern"]
    assert sorted(DELETE_POLICIES) == ["custom", "protected_patterns"]


def test_valid_policy_blocks_load_in_conf_order() -> None:
    create: list[dict[str, Any]] = [
        {"name": "topic_name_pattern", "default": "[a-z.]+", "by_owner": {"pay": "pay\\..+"}},
        {"name": "partitions_range", "min": 1, "max": 64},
        {"name": "replication_factor_range", "min": 3},
        {"name": "required_configs", "configs": {"retention.ms": "\\d+", "cleanup.policy": None}},
        {"name": "forbidden_configs", "configs": ["unclean.leader.election.enable"]},
        {"name": "min_insync_below_rf"},
        {"name": "partition_budget", "max_partitions": 10000},
        {"name": "owner_partition_quota", "quotas": {"pay": 100}, "default": 50},
        {"name": "custom", "callable": f"{EXAMPLE}:refuse_word", "word": "tmp"},
    ]
    delete = [{"name": "protected_patterns", "patterns": ["audit.*"]},
              {"name": "custom", "callable": f"{EXAMPLE}.keep_owner", "owner": "finance"}]

    conf = parse_conf(_conf(create, delete), "test.yaml")

    assert conf.section(TopicsConf).create_policies == tuple(
        PolicySpec(name=item["name"], params={k: v for k, v in item.items() if k != "name"},
                   key=f"policies.create[{i}]")
        for i, item in enumerate(create))
    assert conf.section(TopicsConf).delete_policies == (
        PolicySpec("protected_patterns", {"patterns": ["audit.*"]}, "policies.delete[0]"),
        PolicySpec("custom", {"callable": f"{EXAMPLE}.keep_owner", "owner": "finance"},
                   "policies.delete[1]"),
    )


def test_unknown_parameter_is_named() -> None:
    assert _problems([{"name": "partitions_range", "min": 1, "maximum": 8}]) == [
        "policies.create[0].maximum: unknown parameter (allowed: min, max)"]


def test_min_above_max_is_refused() -> None:
    assert _problems([{"name": "replication_factor_range", "min": 3, "max": 2}]) == [
        "policies.create[0].min: must be <= max (3 > 2)"]


def test_range_needs_a_bound() -> None:
    assert _problems([{"name": "partitions_range"}]) == [
        "policies.create[0].min: set at least one of min, max"]


def test_bounds_must_be_positive_integers() -> None:
    assert _problems([{"name": "partitions_range", "min": 0, "max": True}]) == [
        "policies.create[0].min: must be >= 1, got 0",
        "policies.create[0].max: expected an integer, got a boolean",
    ]


def test_regex_that_does_not_compile_is_refused() -> None:
    assert _problems([{"name": "topic_name_pattern", "default": "([a-z"}]) == [
        "policies.create[0].default: not a valid regular expression '([a-z': unterminated "
        "character set at position 1"]


def test_python_only_regex_syntax_is_refused() -> None:
    assert _problems([{"name": "topic_name_pattern", "default": "(?P<team>[a-z]+)\\..+"}]) == [
        "policies.create[0].default: '(?P<team>[a-z]+)\\..+' uses Python-only (?P...) "
        "named groups; Spark evaluates Java regular expressions: use a plain group"]


def test_bad_owner_regex_is_named_by_owner() -> None:
    assert _problems([{"name": "topic_name_pattern", "by_owner": {"pay": "pay(", "ok": "x"}}]) == [
        "policies.create[0].by_owner.pay: not a valid regular expression 'pay(': missing ), "
        "unterminated subpattern at position 3"]


def test_bad_required_config_pattern_is_named_by_config() -> None:
    problems = _problems([{"name": "required_configs", "configs": {"retention.ms": "*"}}])

    assert problems == [
        "policies.create[0].configs.retention.ms: not a valid regular expression '*': nothing "
        "to repeat at position 0"]


def test_custom_callable_that_cannot_be_imported_is_refused() -> None:
    assert _problems([{"name": "custom", "callable": "no_such_package.policies:check"}]) == [
        "policies.create[0].callable: cannot import module 'no_such_package.policies': "
        "ModuleNotFoundError: No module named 'no_such_package'"]


def test_custom_callable_missing_from_its_module_is_refused() -> None:
    assert _problems(delete=[{"name": "custom", "callable": f"{EXAMPLE}:nope"}]) == [
        f"policies.delete[0].callable: module '{EXAMPLE}' has no attribute 'nope'"]


def test_custom_callable_that_is_not_callable_is_refused() -> None:
    assert _problems([{"name": "custom", "callable": f"{EXAMPLE}:NOT_CALLABLE"}]) == [
        f"policies.create[0].callable: '{EXAMPLE}:NOT_CALLABLE' is not callable (it is an "
        "object of type int)"]


def test_custom_without_callable_is_refused() -> None:
    assert _problems([{"name": "custom", "word": "x"}]) == [
        "policies.create[0].callable: required parameter is missing"]


def test_every_policy_problem_is_reported_at_once() -> None:
    problems = _problems(
        create=[
            {"name": "partition_budget", "max_partitions": "10"},
            {"name": "owner_partition_quota", "quotas": {"pay": -1}},
            {"name": "forbidden_configs", "configs": []},
            {"name": "min_insync_below_rf", "strict": True},
            {"name": "no_such_policy"},
        ],
        delete=[{"name": "protected_patterns"}, {"name": "partitions_range", "min": 1}],
    )

    assert problems == [
        "policies.create[0].max_partitions: expected an integer, got a string",
        "policies.create[1].quotas.pay: must be >= 0, got -1",
        "policies.create[2].configs: expected a non-empty list of non-empty strings",
        "policies.create[3].strict: unknown parameter (allowed: none)",
        "policies.create[4].name: unknown create policy 'no_such_policy' (known: custom, "
        "forbidden_configs, min_insync_below_rf, owner_partition_quota, partition_budget, "
        "partitions_range, replication_factor_range, required_configs, topic_name_pattern)",
        "policies.delete[0].patterns: required parameter is missing",
        "policies.delete[1].name: unknown delete policy 'partitions_range' (known: custom, "
        "protected_patterns)",
    ]
