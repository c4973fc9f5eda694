"""Create, delete and alter policies: small named DataFrame transforms that append
violations.

`with_create_policies` / `with_delete_policies` / `with_alter_policies` run the always-on
checks first (see `create.ALWAYS_ON`, `delete.ALWAYS_ON`, `alter.ALWAYS_ON`), then the
configured policies in conf order. Each policy judges only its action's rows; a row is allowed when
its `policy_violations` stays empty.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from provisioning.conf import PolicySpec
from provisioning.errors import PolicyError
from provisioning.transforms.policies.base import (
    PolicyContext,
    PolicyFactory,
    Transform,
    check_plan_schema,
)
from provisioning.transforms.policies.registry import ALWAYS_ON, POLICIES
from schemas import PLAN

__all__ = [
    "Cut",
    "PolicyContext",
    "PolicyError",
    "with_alter_policies",
    "with_create_policies",
    "with_delete_policies",
    "with_policies",
]


# Given by the caller to cut a DataFrame's plan short between policies (a lazy checkpoint):
# Spark Connect sends a plan as nested protobuf, which its client refuses past 100 levels,
# and a policy adds ~10 levels to the plan (its expressions alone are ~40 deep).
Cut = Callable[[DataFrame], DataFrame]
POLICIES_PER_CUT = 4


def with_create_policies(plan: DataFrame, specs: Sequence[PolicySpec],
                         context: PolicyContext, cut: Cut | None = None,
                         always_on: Collection[str] | None = None) -> DataFrame:
    """Append the violations of the always-on and the configured create policies to PLAN rows.

    specs: the conf's `policies.create`, applied in order after the always-on checks.
    cut: applied to the rows after every POLICIES_PER_CUT policies but the last ones.
    always_on: the always-on checks to run, by name (None: all of them); `check` runs the
      configured policies alone on live topics (provisioning.transforms.check.live).
    """
    return with_policies(plan, specs, context, "create", cut, only=always_on)


def with_delete_policies(plan: DataFrame, specs: Sequence[PolicySpec],
                         context: PolicyContext, cut: Cut | None = None) -> DataFrame:
    """Append the violations of the always-on and the configured delete policies to PLAN rows.

    specs: the conf's `policies.delete`, applied in order after the always-on checks.
    cut: as for `with_create_policies`.
    """
    return with_policies(plan, specs, context, "delete", cut)


def with_alter_policies(plan: DataFrame, specs: Sequence[PolicySpec],
                        context: PolicyContext, cut: Cut | None = None) -> DataFrame:
    """Append the violations of the always-on and the configured alter policies to PLAN rows.

    specs: the conf's `policies.alter`, applied in order after the always-on checks.
    cut: as for `with_create_policies`.
    """
    return with_policies(plan, specs, context, "alter", cut)


def with_policies(plan: DataFrame, specs: Sequence[PolicySpec], context: Any,
                  kind: str, cut: Cut | None = None,
                  always_on: Sequence[tuple[str, PolicyFactory]] | None = None,
                  only: Collection[str] | None = None,
                  registry: Mapping[str, PolicyFactory] | None = None,
                  last: Sequence[tuple[str, PolicyFactory]] = (),
                  schema: StructType = PLAN, table: str = "PLAN",
                  who: str | None = None) -> DataFrame:
    """Append the violations of `kind`'s always-on policies (`always_on`, else the
    registry's), then of the configured ones (`specs`, named in `registry`, else in
    `registry.POLICIES[kind]`), then of the always-on ones that judge what the others let
    through (`last`).

    cut: as for `with_create_policies`.
    only: the always-on policies to run, by name (None: all of them).
    registry: the policies `specs` may name (another kind's own registry).
    schema, table, who: the plan's columns, its name, and how a message names the rows
      given (another kind's plan).
    """
    check_plan_schema(plan, who or f"the plan given to the {kind} policies", schema, table)
    registry = POLICIES[kind] if registry is None else registry
    fixed = ALWAYS_ON.get(kind, ()) if always_on is None else always_on
    # (where it comes from, transform); `where` prefixes any PolicyError it raises.
    steps: list[tuple[str, Transform]] = [
        (f"always-on {kind} policy {name}", make({}, context)) for name, make in fixed
        if only is None or name in only]
    for spec in specs:
        make = registry.get(spec.name)
        if make is None:
            raise PolicyError(f"{spec.key}.name: unknown {kind} policy {spec.name!r}")
        where = f"{spec.key} ({spec.name})"
        try:
            steps.append((where, make(spec.params, context)))
        except PolicyError as exc:
            raise PolicyError(f"{where}: {exc}") from exc
    steps += [(f"always-on {kind} policy {name}", make({}, context)) for name, make in last]
    df = plan
    for done, (where, step) in enumerate(steps, start=1):
        try:
            df = df.transform(step)
        except PolicyError as exc:
            raise PolicyError(f"{where}: {exc}") from exc
        if cut is not None and done % POLICIES_PER_CUT == 0 and done < len(steps):
            df = cut(df)
    return df
