"""The policies a conf may name, by name, with the factory that builds each one.

The names and their parameter checks are the topics' conf section's
(`provisioning.kinds.topics.conf`, read when the conf loads); the two lists are kept equal by a
unit test.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioning.kinds.topics.policies import alter, create, delete
from provisioning.transforms.policies.base import PolicyContext, PolicyFactory, Transform
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



def _after_alter(name: str) -> PolicyFactory:
    """The create policy `name`, judging each ALTER row as its topic will be after it."""
    def make(params: Mapping[str, Any], context: PolicyContext) -> Transform:
        return alter.judged_after_alter(CREATE_POLICIES[name](params, context),
                                        alter.AFTER_ALTER[name])

    return make


ALTER_POLICIES: dict[str, PolicyFactory] = {
    **{name: _after_alter(name) for name in alter.AFTER_ALTER},
    "custom": make_custom("alter"),
}

# Always applied, before the configured ones, in this order.
ALWAYS_ON_CREATE: tuple[tuple[str, PolicyFactory], ...] = create.ALWAYS_ON
ALWAYS_ON_DELETE: tuple[tuple[str, PolicyFactory], ...] = delete.ALWAYS_ON
ALWAYS_ON_ALTER: tuple[tuple[str, PolicyFactory], ...] = alter.ALWAYS_ON

POLICIES = {"create": CREATE_POLICIES, "delete": DELETE_POLICIES, "alter": ALTER_POLICIES}
ALWAYS_ON = {"create": ALWAYS_ON_CREATE, "delete": ALWAYS_ON_DELETE, "alter": ALWAYS_ON_ALTER}
