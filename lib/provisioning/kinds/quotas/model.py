"""Client quotas (KIP-546) as pure DataFrame transforms, one module per concern, and their
model on the entity base (`MODEL`, `transforms.entity`): what the audit rows, the plan
outcome and the policy chain are made from.

- `validation`: quota manifest rows validated as data, per entity (`row_errors`): the
  cluster, the state, the entity's types and names, the ip literal, a present row's quotas;
  and two rows naming the same entity;
- `plan`: each row's keys joined with the live quotas into QUOTA_PLAN rows (SET, REMOVE,
  NOOP), each key judged (known, fits the entity, a value Kafka takes); the live quotas no
  row lists (left alone, or removed with `quotas.remove_unlisted`); `import --quotas`'s
  manifest rows; how an entity reads;
- `policies`: the quota policies over QUOTA_PLAN rows (`policies.quota`; the cap is the
  base's).

A quota's audit row holds its entity, key, the value asked for and the value found (live at
plan, validate and apply; read back at verify) in `quota`.

Nothing here touches a session, the network or the disk; the Kafka side is
`provisioning.kinds.quotas.requests`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.kinds.quotas import names as quota_names
from provisioning.kinds.quotas import schema as tables
from provisioning.kinds.quotas.plan import (
    entity_text,
    plan_quotas,
    quota_manifest_rows,
    unmanaged_quotas,
    unnamed_entities,
)
from provisioning.kinds.quotas.policies import ALWAYS_ON, QUOTA_POLICIES
from provisioning.kinds.quotas.validation import (
    with_duplicate_entity_errors,
    with_quota_row_errors,
)
from provisioning.transforms.entity import EntityModel
from provisioning.transforms.policies.base import Transform

# What tells one quota from another in the audit: the `quota` struct's entity and key.
_IDENTITY = (*tables.ENTITY_COLUMNS, "key")


def quota_struct(prefix: str, value: Column, found: Column) -> Column:
    """The audit's `quota` struct: the entity and key of the row aliased `prefix` (`""`,
    `"r."`), the value asked for and the value found."""
    return F.struct(*[F.col(f"{prefix}{c}").alias(c) for c in _IDENTITY],
                    value.alias("value"), found.alias("found"))


class QuotaModel(EntityModel):
    nouns = quota_names.NOUNS
    manifest, desired, live = tables.QUOTA_MANIFEST, tables.QUOTA_DESIRED, tables.QUOTA_LIVE
    snapshot, plan_schema = tables.QUOTA_SNAPSHOT, tables.QUOTA_PLAN
    result, manifest_keys, key, marker = tables.QUOTA_RESULT, ("cluster",), tables.QUOTA_KEY, "key"
    adds, removes = quota_names.SET_ACTION, quota_names.REMOVE
    added, removed = quota_names.SET, quota_names.REMOVED
    audit_column, identity = tables.AUDIT_COLUMN, _IDENTITY
    text = staticmethod(entity_text)
    entity_list, text_column, listing_order = "quotas", "entity", ("cluster", "entity", "key")
    policies, always_on = QUOTA_POLICIES, ALWAYS_ON
    cap_refuses = "no quota is set or removed"

    def validation(self, known_clusters: tuple[str, ...]) -> Transform:
        checked = with_quota_row_errors(known_clusters)
        return lambda rows: rows.transform(checked).transform(with_duplicate_entity_errors)

    def plan(self, desired: DataFrame, live: DataFrame, remove_unlisted: bool) -> DataFrame:
        return plan_quotas(desired, live, remove_unlisted)

    def unmanaged(self, live: DataFrame, desired: DataFrame) -> DataFrame:
        return unmanaged_quotas(live, desired)

    def importable(self, live: DataFrame, desired: DataFrame) -> DataFrame:
        return unnamed_entities(live, desired)

    def manifest_rows(self, live: DataFrame, owner: str | None) -> DataFrame:
        return quota_manifest_rows(live, owner)

    def plan_struct(self) -> Column:
        return quota_struct("", F.col("value"), F.col("live_value"))

    def result_struct(self) -> Column:
        # validate and apply answers carry no value: what the plan read live was found.
        return quota_struct("r.", F.col("p.value"),
                            F.when(F.col("r.phase") == names.VERIFY, F.col("r.result_value"))
                            .otherwise(F.col("p.live_value")))


MODEL = QuotaModel()
