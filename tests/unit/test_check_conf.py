"""`check`'s conf: the violations table beside the others, and `checks.severity` read as
typed values with every bad rule or level named at once."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from provisioning.conf import ChecksConf
from provisioning.errors import ConfError
from provisioning.names import CHECK_RULES
from tests.helpers import parse_conf

TABLES = {
    "manifests": ["warehouse/desired_topics"],
    "audit": "warehouse/topic_audit",
    "runs": "warehouse/provision_runs",
    "snapshots": "warehouse/topic_snapshots",
}
MINIMAL: dict[str, Any] = {
    "clusters": {"local": {"bootstrap_servers": "127.0.0.1:9092"}},
    "tables": TABLES,
}


def _problems(data: object) -> list[str]:
    with pytest.raises(ConfError) as err:
        parse_conf(data, "test.yaml")
    return err.value.problems


def test_the_violations_table_defaults_beside_the_runs_table() -> None:
    conf = parse_conf(MINIMAL, "t")
    assert conf.tables.violations == "warehouse/provision_runs_violations"
    assert conf.checks == ChecksConf(severity={})


def test_the_violations_table_may_be_named() -> None:
    data = {**MINIMAL, "tables": {**TABLES, "violations": "catalog.kafka.violations"}}
    assert parse_conf(data, "t").tables.violations == "catalog.kafka.violations"


def test_severities_override_rules_and_turn_them_off() -> None:
    text = """
checks:
  severity:
    unmanaged: off            # YAML 1.1 reads a bare off as false
    under_replicated: error
    drift: "off"
    partitions_range: warning
    custom: info
"""
    conf = parse_conf({**MINIMAL, **yaml.safe_load(text)}, "t")
    assert conf.checks == ChecksConf(severity={
        "unmanaged": "off", "under_replicated": "error", "drift": "off",
        "partitions_range": "warning", "custom": "info"})


def test_every_rule_check_judges_may_be_named() -> None:
    severity = dict.fromkeys(CHECK_RULES, "info")
    conf = parse_conf({**MINIMAL, "checks": {"severity": severity}}, "t")
    assert conf.checks.severity == severity
    assert CHECK_RULES == (
        "offline_partition", "under_replicated", "below_min_isr", "min_insync_within_rf",
        "unmanaged", "drift", "leader_not_preferred", "idle_topic", "empty_topic",
        "disk_usage", "disk_forecast", "topic_name_pattern", "partitions_range",
        "replication_factor_range", "required_configs", "forbidden_configs",
        "min_insync_below_rf", "custom")


def test_every_bad_rule_and_level_is_named_at_once() -> None:
    data = {**MINIMAL, "kafka": {"batch_size": 0}, "checks": {
        "severity": {"offline_partition": "fatal", "partition_budget": "error",
                     "no_such_rule": "off", "drift": 3, "unmanaged": True},
        "treshold": 1}}
    # Every registered kind's rules: topics' then each other kind's own.
    known = ", ".join((*CHECK_RULES, "unmanaged_quota", "unmanaged_user",
                       "acl_without_user", "unmanaged_group", "group_lagging",
                       "stale_group"))
    assert _problems(data) == [
        "kafka.batch_size: must be > 0, got 0",
        "checks.treshold: unknown key (allowed: severity, idle_days, disk_used_ratio, "
        "disk_days, usage)",
        "checks.severity.offline_partition: 'fatal' is not one of error, warning, info, off",
        f"checks.severity.partition_budget: unknown rule (known: {known})",
        f"checks.severity.no_such_rule: unknown rule (known: {known})",
        "checks.severity.drift: an integer is not one of error, warning, info, off",
        "checks.severity.unmanaged: a boolean is not one of error, warning, info, off",
    ]


def test_severity_must_be_a_mapping() -> None:
    assert _problems({**MINIMAL, "checks": {"severity": ["drift"]}}) == [
        "checks.severity: expected a mapping of rule -> error | warning | info | off, "
        "got a list"]
    assert _problems({**MINIMAL, "checks": "strict"}) == [
        "checks: expected a mapping, got a string"]
