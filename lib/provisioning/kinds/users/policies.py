"""User policies: small named transforms over USER_PLAN rows that append POLICY_VIOLATION
structs (`with_violation`), as the other kinds' policies do. A refused row is `blocked`.

Always on, before the configured ones:

- protected_users: no UPSERT or DELETE of a credential whose user matches a glob of
  `users.protected_users`, or is the user the job itself logs in as on that cluster (never
  lifted: a protected credential is changed by hand, or the conf changes first);
- user_iterations_min: no UPSERT with fewer iterations than `users.iterations_min`
  (default 8192; a security policy: never lifted by the row's `force`).

Configurable (conf `policies.user: [{name: ..., <params>}]`), in conf order:

- user_mechanism: allowed ([mechanisms]). An UPSERT of another mechanism is refused (a
  security policy: never lifted by `force`);
- custom: callable ("package.module:function"), any other params passed through. Called as
  `fn(plan, context, params) -> DataFrame` with USER_PLAN rows and the UserPolicyContext.

Always last: max_user_changes_per_cluster (`users.max_changes_per_cluster`), the entity
base's cap (`transforms.entity`). Policies judge valid rows only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning.conf.policies import require_valid
from provisioning.errors import PolicyError
from provisioning.kinds.users.conf import USER_POLICY_MODELS
from provisioning.kinds.users.names import DEFAULT_ITERATIONS, DELETE, MECHANISMS, UPSERT
from provisioning.kinds.users.plan import credential_text
from provisioning.kinds.users.schema import USER_PLAN
from provisioning.transforms.entity import EntityPolicyContext, Factory, Subject
from provisioning.transforms.policies.base import Transform
from provisioning.transforms.policies.custom import make_custom
from provisioning.transforms.scope import matching_globs


@dataclass(frozen=True, kw_only=True)
class UserPolicyContext(EntityPolicyContext):
    """What the user policies may read beside the plan: the cap's, and

    protected_users: `users.protected_users` (globs).
    own_users: cluster -> the user the job logs in as there (SASL PLAIN or SCRAM).
    iterations_min: `users.iterations_min`.
    """

    protected_users: tuple[str, ...] = ()
    own_users: Mapping[str, str] = field(default_factory=dict)
    iterations_min: int = DEFAULT_ITERATIONS


# How the policies name a plan row's entity, and the plan's columns they keep.
SUBJECT = Subject("credential", credential_text, USER_PLAN)


def protected_users(params: Mapping[str, Any], context: UserPolicyContext) -> Transform:
    """The job's own user and the users of `users.protected_users` are never changed or
    removed by the job: losing them locks the job, or the platform's admins, out."""
    globs = context.protected_users
    own = context.own_users

    def transform(df: DataFrame) -> DataFrame:
        matched = F.array_join(matching_globs(F.col("user"), globs), ", ")
        mine = F.create_map(*[F.lit(x) for pair in own.items() for x in pair]) if own \
            else F.create_map().cast("map<string,string>")
        is_own = F.coalesce(F.try_element_at(mine, F.col("cluster")) == F.col("user"),
                            F.lit(False))
        refused = F.col("action").isin(UPSERT, DELETE) & (is_own | (matched != ""))
        why = F.when(is_own, F.lit("it is the user the job logs in as on this cluster")
                     ).otherwise(F.format_string("users.protected_users protects it (%s)",
                                                 matched))
        message = SUBJECT.message(
            "%s; the job never changes or removes it (change it by hand, or take it out of "
            "users.protected_users first)", why)
        return SUBJECT.violated(df, "protected_users", refused, message)

    return transform


def user_iterations_min(params: Mapping[str, Any], context: UserPolicyContext
                        ) -> Transform:
    """No credential is set with fewer PBKDF2 iterations than `users.iterations_min`."""
    least = context.iterations_min

    def transform(df: DataFrame) -> DataFrame:
        # A security floor: a team's manifest row cannot lift it (`force` does not).
        refused = (F.col("action") == UPSERT) & (F.col("iterations") < least)
        message = SUBJECT.message(
            f"%d iterations are fewer than users.iterations_min ({least}); ask for at least "
            f"{least} (`force` does not lift this policy)", F.col("iterations"))
        return SUBJECT.violated(df, "user_iterations_min", refused, message)

    return transform


def user_mechanism(params: Mapping[str, Any], context: UserPolicyContext) -> Transform:
    """Only the mechanisms `allowed` lists may be set (a platform that retired SHA-256)."""
    require_valid(USER_POLICY_MODELS, "user", "user_mechanism", params)
    allowed = tuple(params["allowed"])
    unknown = [m for m in allowed if m not in MECHANISMS]
    if unknown:
        raise PolicyError(f"user_mechanism: allowed: {', '.join(unknown)} is not "
                          f"{' or '.join(MECHANISMS)}")

    def transform(df: DataFrame) -> DataFrame:
        # A security policy: a team's manifest row cannot lift it (`force` does not).
        refused = (F.col("action") == UPSERT) & ~F.col("mechanism").isin(*allowed)
        message = SUBJECT.message(
            f"policy user_mechanism allows only {', '.join(allowed)}; ask for one of them "
            "(`force` does not lift this policy)")
        return SUBJECT.violated(df, "user_mechanism", refused, message)

    return transform


# A team's own user policy, named in conf (see the module docstring for its contract).
custom = make_custom("user", USER_PLAN, "USER_PLAN")

# The policies `policies.user` may name (their parameter checks:
# provisioning.kinds.users.conf.USER_POLICY_MODELS, kept equal by a unit test).
USER_POLICIES: dict[str, Factory] = {
    "user_mechanism": user_mechanism,
    "custom": custom,
}
ALWAYS_ON: tuple[tuple[str, Factory], ...] = (
    ("protected_users", protected_users),
    ("user_iterations_min", user_iterations_min),
)
