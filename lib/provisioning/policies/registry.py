"""The policies a conf may name, with their parameter checks and factories."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from provisioning.policies import create, delete
from provisioning.policies.base import PolicyFactory
from provisioning.policies.custom import check_custom, make_custom


@dataclass(frozen=True)
class PolicyEntry:
    name: str
    # Returns problems as "param: message"; empty when the parameter block is valid.
    check: Callable[[Mapping[str, Any]], list[str]]
    make: PolicyFactory


def _registry(*entries: PolicyEntry) -> dict[str, PolicyEntry]:
    return {e.name: e for e in entries}


CREATE_POLICIES: dict[str, PolicyEntry] = _registry(
    PolicyEntry("topic_name_pattern", create.check_topic_name_pattern, create.topic_name_pattern),
    PolicyEntry("partitions_range", create.check_range, create.partitions_range),
    PolicyEntry("replication_factor_range", create.check_range, create.replication_factor_range),
    PolicyEntry("required_configs", create.check_required_configs, create.required_configs),
    PolicyEntry("forbidden_configs", create.check_forbidden_configs, create.forbidden_configs),
    PolicyEntry("min_insync_below_rf", create.check_no_params, create.min_insync_below_rf),
    PolicyEntry("partition_budget", create.check_partition_budget, create.partition_budget),
    PolicyEntry("owner_partition_quota", create.check_owner_partition_quota,
                create.owner_partition_quota),
    PolicyEntry("custom", check_custom, make_custom("create")),
)

DELETE_POLICIES: dict[str, PolicyEntry] = _registry(
    PolicyEntry("protected_patterns", delete.check_protected_patterns,
                delete.protected_patterns),
    PolicyEntry("custom", check_custom, make_custom("delete")),
)

# Always applied, before the configured ones, in this order.
ALWAYS_ON_CREATE: tuple[tuple[str, PolicyFactory], ...] = create.ALWAYS_ON
ALWAYS_ON_DELETE: tuple[tuple[str, PolicyFactory], ...] = delete.ALWAYS_ON
