"""The policies a conf may name, by name, with the factory that builds each one.

The names and their parameter checks are `provisioning.conf.policies.PARAMETER_CHECKS`
(read when the conf loads); the two lists are kept equal by a unit test.
"""

from __future__ import annotations

from provisioning.transforms.policies import create, delete
from provisioning.transforms.policies.base import PolicyFactory
from provisioning.transforms.policies.custom import make_custom

CREATE_POLICIES: dict[str, PolicyFactory] = {
    "topic_name_pattern": create.topic_name_pattern,
    "partitions_range": create.partitions_range,
    "replication_factor_range": create.replication_factor_range,
    "required_configs": create.required_configs,
    "forbidden_configs": create.forbidden_configs,
    "min_insync_below_rf": create.min_insync_below_rf,
    "partition_budget": create.partition_budget,
    "owner_partition_quota": create.owner_partition_quota,
    "custom": make_custom("create"),
}

DELETE_POLICIES: dict[str, PolicyFactory] = {
    "protected_patterns": delete.protected_patterns,
    "custom": make_custom("delete"),
}

# Always applied, before the configured ones, in this order.
ALWAYS_ON_CREATE: tuple[tuple[str, PolicyFactory], ...] = create.ALWAYS_ON
ALWAYS_ON_DELETE: tuple[tuple[str, PolicyFactory], ...] = delete.ALWAYS_ON

POLICIES = {"create": CREATE_POLICIES, "delete": DELETE_POLICIES}
ALWAYS_ON = {"create": ALWAYS_ON_CREATE, "delete": ALWAYS_ON_DELETE}
