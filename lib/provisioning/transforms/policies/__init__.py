"""The policy chain every kind's plan is judged by: small named DataFrame transforms that
append violations (`base.with_violation`), run in order by `with_policies`: a kind's
always-on policies, then the configured ones in conf order (named in the kind's registry),
then the ones that judge what the others let through. A row is allowed when its
`policy_violations` stays empty.
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
from schemas import PLAN

__all__ = [
    "Cut",
    "PolicyContext",
    "PolicyError",
    "with_policies",
]


# Given by the caller to cut a DataFrame's plan short between policies (a lazy checkpoint):
# Spark Connect sends a plan as nested protobuf, which its client refuses past 100 levels,
# and a policy adds ~10 levels to the plan (its expressions alone are ~40 deep).
Cut = Callable[[DataFrame], DataFrame]
POLICIES_PER_CUT = 4


def with_policies(plan: DataFrame, specs: Sequence[PolicySpec], context: Any,
                  kind: str, registry: Mapping[str, PolicyFactory],
                  always_on: Sequence[tuple[str, PolicyFactory]], cut: Cut | None = None,
                  only: Collection[str] | None = None,
                  last: Sequence[tuple[str, PolicyFactory]] = (),
                  schema: StructType = PLAN, table: str = "PLAN",
                  who: str | None = None) -> DataFrame:
    """Append the violations of `kind`'s always-on policies (`always_on`), then of the
    configured ones (`specs`, named in `registry`), then of the always-on ones that judge
    what the others let through (`last`).

    cut: applied to the rows after every POLICIES_PER_CUT policies but the last ones.
    only: the always-on policies to run, by name (None: all of them).
    schema, table, who: the plan's columns, its name, and how a message names the rows
      given (another kind's plan).
    """
    check_plan_schema(plan, who or f"the plan given to the {kind} policies", schema, table)
    fixed = always_on
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
