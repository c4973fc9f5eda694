"""The client quotas' tables (KIP-546): the manifest, the live quotas and their snapshot, the
plan and the admin results.

An entity is spelled in three columns, one per entity type (`entity_user`,
`entity_client_id`, `entity_ip`): null means the type is not part of the entity, the value
`<default>` the type's default entity (`kafka-configs.sh --entity-default`). Kafka's
combinations: user, client-id, user + client-id, ip.
"""

from __future__ import annotations

from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    MapType,
    StringType,
    StructField,
)

from schemas.tables import (
    ANSWER_COLUMNS,
    PLAN_SOURCE,
    desired,
    fields,
    snapshot_of,
)

__all__ = ["AUDIT_COLUMN", "ENTITY_COLUMNS", "QUOTA_DESIRED", "QUOTA_KEY", "QUOTA_LIVE",
           "QUOTA_MANIFEST", "QUOTA_PLAN", "QUOTA_RESULT", "QUOTA_SNAPSHOT", "QUOTA_STRUCT"]

# One client quota as the audit table holds it (its `quota` column): its entity (one column per
# entity type; `<default>` the type's default entity), its key, the value asked for and the
# value found (live at plan, read back at verify).
QUOTA_STRUCT = fields(
    ("entity_user", StringType()),
    ("entity_client_id", StringType()),
    ("entity_ip", StringType()),
    ("key", StringType()),
    ("value", DoubleType()),
    ("found", DoubleType()),
)


ENTITY_COLUMNS = ("entity_user", "entity_client_id", "entity_ip")
_ENTITY = tuple((c, StringType()) for c in ENTITY_COLUMNS)
# What names one quota of a cluster: its entity and its key.
QUOTA_KEY = ("cluster", *ENTITY_COLUMNS, "key")

# What a quota manifest table holds: one entity per row, the quotas it asks for.
QUOTA_MANIFEST = fields(
    ("cluster", StringType()),
    *_ENTITY,
    # quota key -> value: producer_byte_rate, consumer_byte_rate, request_percentage,
    # controller_mutation_rate (user and client-id entities), connection_creation_rate
    # (ip entities). An `absent` row removes the keys it lists, or every key when it lists
    # none.
    ("quotas", MapType(StringType(), DoubleType(), True)),
    ("state", StringType()),
    ("owner", StringType()),
    ("force", BooleanType()),
)

# Manifest rows after reading: where each came from, and what is wrong with the entity.
QUOTA_DESIRED = desired(QUOTA_MANIFEST)

# One live quota of one cluster (DescribeClientQuotas).
QUOTA_LIVE = fields(("cluster", StringType()), *_ENTITY, ("key", StringType()),
                     ("value", DoubleType()))

# The live quotas of each run's clusters (`tables.quota_snapshots`), with one marker row per
# cluster (entity and key null) so a cluster whose quotas are all gone still has a newest
# snapshot of its own.
QUOTA_SNAPSHOT = snapshot_of(QUOTA_LIVE)

# One row per (cluster, entity, key) the run considers: desired joined with live.
QUOTA_PLAN = fields(
    ("cluster", StringType()),
    *_ENTITY,
    ("key", StringType()),
    # SET, REMOVE or NOOP (kinds.quotas.names).
    ("action", StringType()),
    ("state", StringType()),
    # The value asked for (null for a removal), the live one (null: not set).
    ("value", DoubleType()),
    ("live_value", DoubleType()),
    ("owner", StringType()),
    ("force", BooleanType()),
    # What is wrong with the row's entity or this key (rejected, never sent).
    *PLAN_SOURCE,
    # Why a row is as it is when no manifest row asked for it (an unlisted quota removed).
    ("note", StringType()),
)

# What one admin request said about one quota (validate, apply and verify phases): the
# entity's answer, for each of its keys.
QUOTA_RESULT = fields(
    ("cluster", StringType()),
    *_ENTITY,
    ("key", StringType()),
    *ANSWER_COLUMNS,
    # The value read back (verify; null: the key is not set).
    ("result_value", DoubleType()),
)

# The audit's column of quota rows (`schemas.with_kind_columns`): the quota (topic null).
AUDIT_COLUMN = StructField("quota", QUOTA_STRUCT, True)
