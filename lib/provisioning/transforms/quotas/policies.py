"""Quota policies: small named transforms over QUOTA_PLAN rows that append POLICY_VIOLATION
structs (`with_violation`), as the topic policies do over PLAN rows. A refused row is
`blocked`; a row is allowed when its `policy_violations` stays empty.

Configurable (conf `policies.quota: [{name: ..., <params>}]`), in conf order:

- quota_range: key (a quota key), min, max (numbers > 0, at least one). A SET of that key
  to a value outside [min, max] is refused, unless the row says `force: true`.
- custom: callable ("package.module:function"), any other params passed through. Called as
  `fn(plan, context, params) -> DataFrame` with QUOTA_PLAN rows and the QuotaPolicyContext;
  it returns the same rows with exactly the QUOTA_PLAN columns, having appended violations
  with `with_violation` to SET / REMOVE rows; no Spark action.

Always on, and last: max_quota_changes_per_cluster (`quotas.max_changes_per_cluster`): over
the cap, none of the cluster's sets and removes is made (never lifted); it counts only the
changes every other policy let through, so a refused change does not use up the cap.

Policies judge valid rows only: `with_quota_policies` leaves the rows with `row_errors` out
of every policy (a custom one included) and puts them back unjudged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from provisioning.conf import PolicySpec
from provisioning.conf.policies import check_custom, require_valid, resolve_callable
from provisioning.errors import PolicyError
from provisioning.names.quotas import REMOVE, SET_ACTION
from provisioning.transforms.policies import POLICIES_PER_CUT, Cut
from provisioning.transforms.policies.base import Transform, check_plan_schema, with_violation
from provisioning.transforms.policies.columns import no_violations_yet
from provisioning.transforms.quotas.plan import entity_text, value_text
from schemas import column_names
from schemas.quotas import QUOTA_PLAN


@dataclass(frozen=True)
class QuotaPolicyContext:
    """What the quota policies may read beside the plan.

    max_changes_per_cluster: `quotas.max_changes_per_cluster`.
    """

    max_changes_per_cluster: int = 200


QuotaPolicyFactory = Callable[[Mapping[str, Any], QuotaPolicyContext], Transform]

_FORCE_HINT = "or set `force: true` on its quota manifest row"


def is_set() -> Column:
    return F.col("action") == F.lit(SET_ACTION)


def is_change() -> Column:
    return F.col("action").isin(SET_ACTION, REMOVE)


def _valid() -> Column:
    return F.coalesce(F.size("row_errors") == 0, F.lit(True))


def _forced() -> Column:
    return F.coalesce(F.col("force"), F.lit(False))


def as_quota_plan(df: DataFrame) -> DataFrame:
    """A policy's closing select: the QUOTA_PLAN columns, in order."""
    return df.select(*column_names(QUOTA_PLAN))


def _message(text: str, *args: Column) -> Column:
    """"quota <entity> <key>: <text>" with `args` formatted into `text`."""
    return F.format_string(f"quota %s %s: {text}", entity_text(), F.col("key"), *args)


def _number(value: float) -> str:
    """A bound as `value_text` spells a value: 1048576, 0.5."""
    return str(int(value)) if float(value).is_integer() else str(float(value))


# --- configurable ------------------------------------------------------------------------


def quota_range(params: Mapping[str, Any], context: QuotaPolicyContext) -> Transform:
    """The values a SET of one key may ask for: within [min, max] (either may be left out).
    A range keeps a typo (a byte rate of 10 where 10 MB/s was meant, or one a thousand times
    too large) from reaching the clients; `force` lifts it for the row that means it."""
    require_valid("quota", "quota_range", params)
    key = str(params["key"])
    low: float | None = None if params.get("min") is None else float(params["min"])
    high: float | None = None if params.get("max") is None else float(params["max"])

    def transform(df: DataFrame) -> DataFrame:
        judged = is_set() & (F.col("key") == F.lit(key)) & ~_forced()
        value = F.col("value")
        for bound, word, outside in (
                (low, "below", value < F.lit(low)), (high, "above", value > F.lit(high))):
            if bound is None:
                continue
            message = _message(
                f"%s is {word} {_number(bound)}, the {'min' if word == 'below' else 'max'} "
                f"policy quota_range sets for {key}; ask for a value within the range, "
                f"{_FORCE_HINT}", value_text(value))
            df = with_violation(df, "quota_range", judged & outside, message)
        return as_quota_plan(df)

    return transform


def custom(params: Mapping[str, Any], context: QuotaPolicyContext) -> Transform:
    """A team's own quota policy, named in conf (see the module docstring for its contract)."""
    problems = check_custom(params)
    if problems:
        raise PolicyError(f"custom quota policy: {'; '.join(problems)}")
    target = str(params["callable"])
    fn = resolve_callable(target)
    passed = {k: v for k, v in params.items() if k != "callable"}
    who = f"custom quota policy {target!r}"

    def transform(df: DataFrame) -> DataFrame:
        out = fn(df, context, passed)
        if not isinstance(out, DataFrame):
            raise PolicyError(f"{who} must return a DataFrame, got {type(out).__name__}")
        check_plan_schema(out, f"the DataFrame {who} returned", QUOTA_PLAN, "QUOTA_PLAN")
        return out

    return transform


# --- always on, last ---------------------------------------------------------------------


def max_quota_changes_per_cluster(params: Mapping[str, Any], context: QuotaPolicyContext
                                  ) -> Transform:
    """Over the per-run cap, no quota at all is set or removed on that cluster: a mass change
    of the clients' limits is far more likely a broken manifest than an intent."""
    cap = context.max_changes_per_cluster

    def transform(df: DataFrame) -> DataFrame:
        candidate = is_change() & _valid() & no_violations_yet()
        planned = F.count(F.when(candidate, F.lit(1))).over(Window.partitionBy("cluster"))
        over_cap = candidate & (planned > cap)
        message = F.format_string(
            "%d quota changes planned on cluster %s exceed the per-run cap of %d; no quota is "
            "set or removed on this cluster (split the change or raise "
            "quotas.max_changes_per_cluster)", planned, F.col("cluster"), F.lit(cap))
        return as_quota_plan(with_violation(df, "max_quota_changes_per_cluster", over_cap,
                                            message))

    return transform


# The policies `policies.quota` may name (their parameter checks:
# provisioning.conf.quotas.QUOTA_POLICY_MODELS, kept equal by a unit test).
QUOTA_POLICIES: dict[str, QuotaPolicyFactory] = {
    "quota_range": quota_range,
    "custom": custom,
}
# Always on before the configured ones: none yet (a quota has no always-wrong value the
# validation does not refuse already).
ALWAYS_ON: tuple[tuple[str, QuotaPolicyFactory], ...] = ()
CAP: tuple[str, QuotaPolicyFactory] = ("max_quota_changes_per_cluster",
                                       max_quota_changes_per_cluster)


def with_quota_policies(plan: DataFrame, specs: Sequence[PolicySpec],
                        context: QuotaPolicyContext, cut: Cut | None = None) -> DataFrame:
    """Append the violations of the always-on, the configured (`policies.quota`, in order)
    and the cap policy to the valid QUOTA_PLAN rows; the rows with `row_errors` come back
    as they were.

    cut: applied to the judged rows after every POLICIES_PER_CUT policies but the last ones
      (a plan too deep for Spark Connect, see `transforms.policies.Cut`).
    """
    check_plan_schema(plan, "the plan given to the quota policies", QUOTA_PLAN, "QUOTA_PLAN")
    steps: list[tuple[str, Transform]] = [
        (f"always-on quota policy {name}", make({}, context)) for name, make in ALWAYS_ON]
    for spec in specs:
        make = QUOTA_POLICIES.get(spec.name)
        if make is None:
            raise PolicyError(f"{spec.key}.name: unknown quota policy {spec.name!r}")
        where = f"{spec.key} ({spec.name})"
        try:
            steps.append((where, make(spec.params, context)))
        except PolicyError as exc:
            raise PolicyError(f"{where}: {exc}") from exc
    steps.append((f"always-on quota policy {CAP[0]}", CAP[1]({}, context)))
    df = plan.where(_valid())
    for done, (where, step) in enumerate(steps, start=1):
        try:
            df = df.transform(step)
        except PolicyError as exc:
            raise PolicyError(f"{where}: {exc}") from exc
        if cut is not None and done % POLICIES_PER_CUT == 0 and done < len(steps):
            df = cut(df)
    return as_quota_plan(df).unionByName(as_quota_plan(plan.where(~_valid())))
