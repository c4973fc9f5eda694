"""The SCRAM credentials' tables (KIP-554): the manifest, the live credentials and their
snapshot, the plan and the admin results.

A credential is a user's SCRAM secret for one mechanism (cluster, user, mechanism). No table
holds a password, a salt or a salted password: a manifest row names where the job reads the
password (`password_env` or `password_file`, on the machine that runs it), and
`password_version` stands for it (a new value means "set the password again").
"""

from __future__ import annotations

from pyspark.sql.types import (
    BooleanType,
    IntegerType,
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

# What names one credential of a cluster.
USER_KEY = ("cluster", "user", "mechanism")
_SOURCE = (("password_env", StringType()), ("password_file", StringType()),
           ("password_version", StringType()))

# What a user manifest table holds: one credential per row.
USER_MANIFEST = fields(
    ("cluster", StringType()),
    ("user", StringType()),
    # SCRAM-SHA-256 or SCRAM-SHA-512.
    ("mechanism", StringType()),
    # PBKDF2 iterations (null: 8192; the broker takes 4096 to 16384).
    ("iterations", IntegerType()),
    *_SOURCE,
    ("state", StringType()),
    ("owner", StringType()),
    ("force", BooleanType()),
)

# Manifest rows after reading: where each came from, and what is wrong with it.
USER_DESIRED = desired(USER_MANIFEST)

# One live credential (DescribeUserScramCredentials), with the password_version the audit
# last recorded as applied to it (null: none).
USER_LIVE = fields(("cluster", StringType()), ("user", StringType()),
                    ("mechanism", StringType()), ("iterations", IntegerType()),
                    ("applied_version", StringType()))

# The live credentials of each run's clusters (`tables.user_snapshots`), with one marker row
# per cluster (user and mechanism null).
USER_SNAPSHOT = snapshot_of(USER_LIVE)

# One row per credential the run considers: desired joined with live.
USER_PLAN = fields(
    *[(c, StringType()) for c in USER_KEY],
    # UPSERT, DELETE or NOOP (kinds.users.names).
    ("action", StringType()),
    ("state", StringType()),
    # The iterations asked for (null for a removal), and the live ones (null: no credential).
    ("iterations", IntegerType()),
    ("live_iterations", IntegerType()),
    *_SOURCE,
    ("applied_version", StringType()),
    ("owner", StringType()),
    ("force", BooleanType()),
    *PLAN_SOURCE,
    # Why a row is as it is: what an UPSERT changes, or why an unlisted credential is kept.
    ("note", StringType()),
)

# What one admin step said about one credential (validate, apply, verify).
USER_RESULT = fields(
    *[(c, StringType()) for c in USER_KEY],
    *ANSWER_COLUMNS,
    # The iterations read back (verify; null: no credential).
    ("result_iterations", IntegerType()),
)

# The audit's `credential` column: the user and mechanism, the iterations asked for and
# found, and the password version asked for. Never a password, salt or salted password.
USER_STRUCT = fields(("user", StringType()), ("mechanism", StringType()),
                      ("iterations", IntegerType()), ("found", IntegerType()),
                      ("password_version", StringType()))
AUDIT_COLUMN = StructField("credential", USER_STRUCT, True)
