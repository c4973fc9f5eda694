"""SCRAM credentials (KIP-554) as pure DataFrame transforms, and their model on the entity
base (`MODEL`, `transforms.entity`):

- `plan`: user manifest rows validated as data (the broker has no validateOnly for them),
  joined with the live credentials into USER_PLAN rows (UPSERT, DELETE, NOOP); the live
  credentials no row names; `import --users`'s manifest rows;
- `policies`: protected_users and user_iterations_min (always on), `policies.user`, and the
  base's cap.

A credential's audit row holds its user and mechanism, the iterations asked for and found
(live at plan, validate and apply; read back at verify) and the password_version asked for,
in `credential`: never a password, a salt or a salted password.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.kinds.users import names as user_names
from provisioning.kinds.users import schema as tables
from provisioning.kinds.users.plan import (
    credential_text,
    plan_users,
    unmanaged_users,
    user_manifest_rows,
    with_user_row_errors,
)
from provisioning.kinds.users.policies import ALWAYS_ON, USER_POLICIES
from provisioning.transforms.entity import EntityModel
from provisioning.transforms.policies.base import Transform


def user_struct(named: str, asked: str, found: Column) -> Column:
    """The audit's `credential` struct: the credential of the row aliased `named` (`""`,
    `"r."`), what the row aliased `asked` asked for (`""`, `"p."`), what was `found`."""
    return F.struct(F.col(f"{named}user").alias("user"),
                    F.col(f"{named}mechanism").alias("mechanism"),
                    F.col(f"{asked}iterations").alias("iterations"), found.alias("found"),
                    F.col(f"{asked}password_version").alias("password_version"))


class UserModel(EntityModel):
    nouns = user_names.NOUNS
    manifest, desired, live = tables.USER_MANIFEST, tables.USER_DESIRED, tables.USER_LIVE
    snapshot, plan_schema, result = tables.USER_SNAPSHOT, tables.USER_PLAN, tables.USER_RESULT
    manifest_keys, key, marker = ("cluster", "user", "mechanism"), tables.USER_KEY, "mechanism"
    adds, removes = user_names.UPSERT, user_names.DELETE
    added, removed = user_names.UPSERTED, user_names.DELETED
    audit_column, identity = tables.AUDIT_COLUMN, ("user", "mechanism")
    text = staticmethod(credential_text)
    entity_list, text_column = None, "credential"
    listing_order = ("cluster", "user", "mechanism")
    policies, always_on = USER_POLICIES, ALWAYS_ON
    cap_refuses = "no credential is set or removed"

    def validation(self, known_clusters: tuple[str, ...]) -> Transform:
        return with_user_row_errors(known_clusters)

    def plan(self, desired: DataFrame, live: DataFrame, remove_unlisted: bool) -> DataFrame:
        return plan_users(desired, live, remove_unlisted)

    def unmanaged(self, live: DataFrame, desired: DataFrame) -> DataFrame:
        return unmanaged_users(live, desired)

    def manifest_rows(self, live: DataFrame, owner: str | None) -> DataFrame:
        return user_manifest_rows(live, owner)

    def plan_struct(self) -> Column:
        return user_struct("", "", F.col("live_iterations"))

    def result_struct(self) -> Column:
        # validate and apply answers carry no iterations: what the plan read live was found.
        return user_struct("r.", "p.", F.when(F.col("r.phase") == names.VERIFY,
                                        F.col("r.result_iterations"))
                           .otherwise(F.col("p.live_iterations")))


MODEL = UserModel()
