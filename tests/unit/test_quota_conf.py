"""The quota keys of the conf: tables, the `quotas` section, `policies.quota` and the
unmanaged_quota check rule, every problem named at once."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from provisioning.conf import PolicySpec
from provisioning.conf.policies import block_problems
from provisioning.errors import ConfError
from provisioning.kinds.quotas.conf import SECTION as KIND
from provisioning.kinds.quotas.conf import QuotaRange, QuotasConf, QuotasSection
from tests.helpers import parse_conf

EXAMPLE = "tests.unit.custom_policy_example"
TABLES = {"manifests": ["m"], "audit": "a", "runs": "r", "snapshots": "wh/s"}


def _data(tables: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    return {"clusters": {"local": {"bootstrap_servers": "127.0.0.1:9092"}},
            "tables": {**TABLES, **(tables or {})}, **top}


def _problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfError) as err:
        parse_conf(data, "test.yaml")
    return err.value.problems


def test_the_section_declares_its_keys_tables_policies_and_rule() -> None:
    assert isinstance(KIND, QuotasSection)
    assert KIND.tables_model is not None
    assert (KIND.kind, tuple(KIND.key_models),
            tuple(f.name for f in dataclasses.fields(KIND.tables_model)),
            tuple(KIND.policy_models), KIND.check_rules) == (
        "quotas", ("quotas",), ("quota_manifests", "quota_snapshots"), ("quota",),
        ("unmanaged_quota",))
    assert {k: sorted(v) for k, v in KIND.policy_models.items()} == {
        "quota": ["custom", "quota_range"]}
    assert KIND.default() == QuotasConf()


def test_without_the_keys_no_quota_is_managed_and_the_defaults_hold() -> None:
    assert parse_conf(_data(), "t").section(QuotasConf) == QuotasConf(
        remove_unlisted=False, max_changes_per_cluster=200, batch_size=200, manifests=None,
        snapshots="wh/s_quotas", policies=())


def test_quota_tables_take_a_name_or_a_list_and_an_explicit_snapshot_table() -> None:
    one = parse_conf(_data({"quota_manifests": "wh/quotas"}), "t").section(QuotasConf)
    many = parse_conf(_data({"quota_manifests": ["wh/quotas", "cat.db.quotas"],
                             "quota_snapshots": "wh/live_quotas"}), "t").section(QuotasConf)
    assert (one.manifests, one.snapshots) == (("wh/quotas",), "wh/s_quotas")
    assert (many.manifests, many.snapshots) == (("wh/quotas", "cat.db.quotas"),
                                                "wh/live_quotas")


def test_the_quotas_section_is_read_typed() -> None:
    conf = parse_conf(_data(quotas={"remove_unlisted": True, "max_changes_per_cluster": 0,
                                    "batch_size": 50}), "t")
    assert conf.section(QuotasConf) == QuotasConf(
        remove_unlisted=True, max_changes_per_cluster=0, batch_size=50,
        snapshots="wh/s_quotas")


def test_every_bad_quota_key_is_reported_at_once() -> None:
    data = _data({"quota_manifests": [], "quota_snapshots": 3}, quotas={
        "remove_unlisted": "yes", "max_changes_per_cluster": -1, "batch_size": 0,
        "entities": 1})
    problems = _problems(data)
    assert problems == [
        "tables.quota_manifests: expected a table path or name, or a non-empty list of them",
        "tables.quota_snapshots: expected a string, got an integer",
        "quotas.entities: unknown key (allowed: remove_unlisted, max_changes_per_cluster, "
        "batch_size)",
        "quotas.remove_unlisted: expected a boolean, got a string",
        "quotas.max_changes_per_cluster: must be >= 0, got -1",
        "quotas.batch_size: must be > 0, got 0",
    ]


def test_quota_policies_load_in_conf_order() -> None:
    quota = [{"name": "quota_range", "key": "producer_byte_rate", "max": 104857600},
             {"name": "custom", "callable": f"{EXAMPLE}:refuse_word", "word": "tmp"},
             {"name": "quota_range", "key": "request_percentage", "min": 0.5, "max": 200}]
    conf = parse_conf(_data(policies={"quota": quota}), "t")
    assert conf.section(QuotasConf).policies == (
        PolicySpec("quota_range", {"key": "producer_byte_rate", "max": 104857600},
                   "policies.quota[0]"),
        PolicySpec("custom", {"callable": f"{EXAMPLE}:refuse_word", "word": "tmp"},
                   "policies.quota[1]"),
        PolicySpec("quota_range", {"key": "request_percentage", "min": 0.5, "max": 200},
                   "policies.quota[2]"),
    )


def test_every_bad_quota_policy_block_is_named() -> None:
    quota = [{"name": "quota_range", "min": 1},
             {"name": "quota_range", "key": "PRODUCER_BYTE_RATE", "max": 0, "step": 2},
             {"name": "quota_range", "key": "consumer_byte_rate"},
             {"name": "quota_range", "key": "consumer_byte_rate", "min": 10, "max": 5},
             {"name": "quota_range", "key": "request_percentage", "min": True,
              "max": float("inf")},
             {"name": "range", "key": "x"},
             {"name": "custom"}]
    assert _problems(_data(policies={"quota": quota})) == [
        "policies.quota[0].key: required parameter is missing",
        "policies.quota[1].step: unknown parameter (allowed: key, min, max)",
        "policies.quota[1].key: 'PRODUCER_BYTE_RATE' is not a quota key (known: "
        "producer_byte_rate, consumer_byte_rate, request_percentage, "
        "controller_mutation_rate, connection_creation_rate)",
        "policies.quota[1].max: must be a finite number > 0 (a quota is never 0), got 0",
        "policies.quota[2].min: set at least one of min, max",
        "policies.quota[3].min: must be <= max (10 > 5)",
        "policies.quota[4].min: expected a number, got a boolean",
        "policies.quota[4].max: must be a finite number > 0 (a quota is never 0), got inf",
        "policies.quota[5].name: unknown quota policy 'range' (known: custom, quota_range)",
        "policies.quota[6].callable: required parameter is missing",
    ]


def test_a_range_with_one_bound_or_fractional_bounds_is_fine() -> None:
    assert block_problems(QuotaRange, {"key": "controller_mutation_rate", "min": 0.5}) == []
    assert block_problems(QuotaRange, {"key": "connection_creation_rate", "max": 100}) == []
    assert block_problems(QuotaRange, {"key": "request_percentage", "min": 50, "max": 50.0}
                          ) == []


def test_the_unmanaged_quota_rule_takes_a_severity() -> None:
    conf = parse_conf(_data(checks={"severity": {"unmanaged_quota": "info"}}), "t")
    assert conf.checks.severity == {"unmanaged_quota": "info"}
