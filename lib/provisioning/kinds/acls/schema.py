"""ACL binding tables: the desired bindings (manifest), the live ones (snapshot), the plan
and the per-binding results.

A binding is Kafka's unit of access (KIP-4's AclBinding): one principal, host, operation
and permission on one resource pattern (resource type, name, pattern type). A manifest row
may name several operations (and the shorthands PRODUCE / CONSUME); every other table holds
one binding per row. Conventions as in `schemas.tables`: every column nullable, enums as
their Kafka names (TOPIC, PREFIXED, READ, ALLOW).
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    StringType,
    StructField,
    TimestampType,
)

from schemas.tables import ANSWER_COLUMNS, PLAN_SOURCE, desired, fields

# One ACL binding beside its cluster (Kafka's AclBinding), as the audit table holds it.
ACL_BINDING_STRUCT = fields(
    ("principal", StringType()),
    ("host", StringType()),
    ("resource_type", StringType()),
    ("resource_name", StringType()),
    ("pattern_type", StringType()),
    ("operation", StringType()),
    ("permission", StringType()),
)

# What one binding is, beside its cluster: Kafka's AclBinding, every part named.
_BINDING_COLUMNS: tuple[tuple[str, object], ...] = tuple(
    (f.name, f.dataType) for f in ACL_BINDING_STRUCT.fields)

# What an ACL manifest table holds: one row per (principal, resource pattern, permission)
# with the operations it allows or denies.
ACL_MANIFEST = fields(
    ("cluster", StringType()),
    ("principal", StringType()),
    ("host", StringType()),
    ("resource_type", StringType()),
    ("resource_name", StringType()),
    ("pattern_type", StringType()),
    ("operations", ArrayType(StringType(), True)),
    ("permission", StringType()),
    ("state", StringType()),
    ("owner", StringType()),
    ("force", BooleanType()),
)

# ACL manifest rows after reading: where each row came from, and what is wrong with it.
ACL_DESIRED = desired(ACL_MANIFEST)

# One live (DescribeAcls) or desired binding of one cluster.
ACL_BINDING = fields(("cluster", StringType()), *_BINDING_COLUMNS)

# The live bindings of a run's clusters (the ACL snapshot table appends these).
ACL_SNAPSHOT = fields(
    ("run_id", StringType()),
    ("cluster", StringType()),
    *_BINDING_COLUMNS,
    ("snapshot_at", TimestampType()),
)

# One row per binding the run considers: the desired bindings (merged) joined with the live.
ACL_PLAN = fields(
    ("cluster", StringType()),
    *_BINDING_COLUMNS,
    # GRANT, REVOKE or NOOP (provisioning.kinds.acls.names).
    ("action", StringType()),
    # present or absent: what the manifest rows want (absent for an unlisted removal).
    ("state", StringType()),
    ("owner", StringType()),
    ("force", BooleanType()),
    # The manifest row the binding comes from (null: no manifest row names it).
    *PLAN_SOURCE,
    # Whether the cluster has the binding now.
    ("live", BooleanType()),
    # Why the row is as it is, when a reader would ask: merged rows that disagreed, an
    # unlisted or a deleted topic's binding revoked.
    ("note", StringType()),
)

# What one admin request said about one binding (validate, apply and verify phases).
ACL_RESULT = fields(
    ("cluster", StringType()),
    *_BINDING_COLUMNS,
    *ANSWER_COLUMNS,
)

# The columns that say which binding a row is about (join keys between the tables above).
BINDING_KEY = ("cluster", *(name for name, _ in _BINDING_COLUMNS))

# The audit's column of ACL rows (`schemas.with_kind_columns`): the binding (topic null).
AUDIT_COLUMN = StructField("acl", ACL_BINDING_STRUCT, True)
