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

Always on, and last: max_quota_changes_per_cluster (`quotas.max_changes_per_cluster`), the
entity base's cap (`transforms.entity`): over the cap, none of the cluster's sets and removes
is made (never lifted); it counts only the changes every other policy let through, so a
refused change does not use up the cap.

Policies judge valid rows only: the chain (`transforms.entity.EntityModel.judged`) leaves the
rows with `row_errors` out of every policy (a custom one included) and puts them back
unjudged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.conf.policies import require_valid
from provisioning.kinds.quotas.conf import QUOTA_POLICY_MODELS
from provisioning.kinds.quotas.names import NOUNS, REMOVE, SET_ACTION
from provisioning.kinds.quotas.plan import entity_text, value_text
from provisioning.kinds.quotas.schema import QUOTA_PLAN
from provisioning.transforms.entity import EntityPolicyContext, Factory, Subject, force_hint
from provisioning.transforms.policies.base import Transform, with_violation
from provisioning.transforms.policies.columns import forced
from provisioning.transforms.policies.custom import make_custom
from schemas import column_names


@dataclass(frozen=True, kw_only=True)
class QuotaPolicyContext(EntityPolicyContext):
    """What the quota policies may read beside the plan: the cap's (`EntityPolicyContext`)."""


_FORCE_HINT = force_hint(NOUNS)
# How the policies name a plan row's entity, and the plan's columns they keep.
SUBJECT = Subject("quota", lambda: F.format_string("%s %s", entity_text(), F.col("key")),
                  QUOTA_PLAN)


def is_set() -> Column:
    return F.col("action") == F.lit(SET_ACTION)


def is_change() -> Column:
    return F.col("action").isin(SET_ACTION, REMOVE)


def _number(value: float) -> str:
    """A bound as `value_text` spells a value: 1048576, 0.5."""
    return str(int(value)) if float(value).is_integer() else str(float(value))


# --- configurable ------------------------------------------------------------------------


def quota_range(params: Mapping[str, Any], context: QuotaPolicyContext) -> Transform:
    """The values a SET of one key may ask for: within [min, max] (either may be left out).
    A range keeps a typo (a byte rate of 10 where 10 MB/s was meant, or one a thousand times
    too large) from reaching the clients; `force` lifts it for the row that means it."""
    require_valid(QUOTA_POLICY_MODELS, "quota", "quota_range", params)
    key = str(params["key"])
    low: float | None = None if params.get("min") is None else float(params["min"])
    high: float | None = None if params.get("max") is None else float(params["max"])

    def transform(df: DataFrame) -> DataFrame:
        judged = is_set() & (F.col("key") == F.lit(key)) & ~forced()
        value = F.col("value")
        for bound, word, outside in (
                (low, "below", value < F.lit(low)), (high, "above", value > F.lit(high))):
            if bound is None:
                continue
            message = SUBJECT.message(
                f"%s is {word} {_number(bound)}, the {'min' if word == 'below' else 'max'} "
                f"policy quota_range sets for {key}; ask for a value within the range, "
                f"{_FORCE_HINT}", value_text(value))
            df = with_violation(df, "quota_range", judged & outside, message)
        return df.select(*column_names(QUOTA_PLAN))

    return transform


# A team's own quota policy, named in conf (see the module docstring for its contract).
custom = make_custom("quota", QUOTA_PLAN, "QUOTA_PLAN")


# The policies `policies.quota` may name (their parameter checks:
# provisioning.kinds.quotas.conf.QUOTA_POLICY_MODELS, kept equal by a unit test).
QUOTA_POLICIES: dict[str, Factory] = {
    "quota_range": quota_range,
    "custom": custom,
}
# Always on before the configured ones: none yet (a quota has no always-wrong value the
# validation does not refuse already).
ALWAYS_ON: tuple[tuple[str, Factory], ...] = ()
