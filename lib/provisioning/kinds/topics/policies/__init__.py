"""The topics' create, delete and alter policies: `with_create_policies` /
`with_delete_policies` / `with_alter_policies` run the always-on checks first (see
`create.ALWAYS_ON`, `delete.ALWAYS_ON`, `alter.ALWAYS_ON`), then the configured policies in
conf order (`registry`), on the shared chain (`transforms.policies.with_policies`). Each
policy judges only its action's rows.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from pyspark.sql import DataFrame

from provisioning.conf import PolicySpec
from provisioning.kinds.topics.policies.registry import ALWAYS_ON, POLICIES
from provisioning.transforms.policies import Cut, with_policies
from provisioning.transforms.policies.base import PolicyContext


def with_create_policies(plan: DataFrame, specs: Sequence[PolicySpec],
                         context: PolicyContext, cut: Cut | None = None,
                         always_on: Collection[str] | None = None) -> DataFrame:
    """Append the violations of the always-on and the configured create policies to PLAN rows.

    specs: the conf's `policies.create`, applied in order after the always-on checks.
    cut: applied to the rows after every POLICIES_PER_CUT policies but the last ones.
    always_on: the always-on checks to run, by name (None: all of them); `check` runs the
      configured policies alone on live topics (provisioning.kinds.topics.rules.live).
    """
    return with_policies(plan, specs, context, "create", POLICIES["create"],
                         ALWAYS_ON["create"], cut, only=always_on)


def with_delete_policies(plan: DataFrame, specs: Sequence[PolicySpec],
                         context: PolicyContext, cut: Cut | None = None) -> DataFrame:
    """Append the violations of the always-on and the configured delete policies to PLAN rows.

    specs: the conf's `policies.delete`, applied in order after the always-on checks.
    cut: as for `with_create_policies`.
    """
    return with_policies(plan, specs, context, "delete", POLICIES["delete"],
                         ALWAYS_ON["delete"], cut)


def with_alter_policies(plan: DataFrame, specs: Sequence[PolicySpec],
                        context: PolicyContext, cut: Cut | None = None) -> DataFrame:
    """Append the violations of the always-on and the configured alter policies to PLAN rows.

    specs: the conf's `policies.alter`, applied in order after the always-on checks.
    cut: as for `with_create_policies`.
    """
    return with_policies(plan, specs, context, "alter", POLICIES["alter"],
                         ALWAYS_ON["alter"], cut)
