"""The vocabulary of SCRAM credentials (KIP-554): their mechanisms and the iterations a broker
takes, the plan actions and outcomes, and the check rules."""

from __future__ import annotations

from provisioning.names import DELETE as DELETE_ACTION
from provisioning.names import Nouns

# How the job names SCRAM credentials (`names.Nouns`): phases `user plan`, conf `users`,
# `tables.user_manifests`, `policies.user`, `apply --allow-user-removals`.
NOUNS = Nouns(name="users", prefix="user", noun="user", one="credential",
              many="credentials", title="SCRAM credentials")

# The mechanisms, as Kafka names them (its ScramMechanism type codes 1 and 2).
SHA_256 = "SCRAM-SHA-256"
SHA_512 = "SCRAM-SHA-512"
MECHANISMS = (SHA_256, SHA_512)
MECHANISM_CODES = {SHA_256: 1, SHA_512: 2}
# What the broker takes (ScramControlManager: each mechanism's minimum, and its maximum).
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 8192

# Plan actions: UPSERT (missing, another iteration count, or a new password_version), DELETE
# (the row is `absent`, or an unlisted credential with `users.remove_unlisted`), NOOP.
UPSERT = "UPSERT"
DELETE = DELETE_ACTION

# Outcomes of a credential's result: `upserted` and `deleted` are this kind's own words.
UPSERTED = "upserted"
DELETED = "deleted"

# The check rules: a live credential no manifest row names; an ACL binding of a `User:`
# principal that has no credential (off unless `checks.severity` turns it on).
UNMANAGED_USER = "unmanaged_user"
ACL_WITHOUT_USER = "acl_without_user"
