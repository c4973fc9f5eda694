"""The vocabulary of ACL bindings: their plan actions and outcomes, and Kafka's names for a
binding's parts (KIP-4's ACL admin requests)."""

from __future__ import annotations

from provisioning.names import Nouns

# How the job names ACL bindings (`names.Nouns`): phases `acl plan`, conf `acls`,
# `tables.acl_manifests`, `policies.acl`.
NOUNS = Nouns(name="acls", prefix="acl", noun="ACL", one="binding", many="bindings",
              title="ACL bindings",
              old_removals=("revokes",))

# -- plan actions: GRANT (wanted, missing), REVOKE (`state: absent`, or unlisted with
# `acls.remove_unlisted`, and present), NOOP ----------------------------------------------
GRANT = "GRANT"
REVOKE = "REVOKE"

# -- outcomes: granted / revoked are the broker's word (CreateAcls, DeleteAcls, read back by
# DescribeAcls); already_absent is a revoke whose binding was gone ---------------------------
GRANTED = "granted"
REVOKED = "revoked"

# A cluster without an authorizer (DescribeAcls' answer): it has no ACL to manage.
SECURITY_DISABLED = "SECURITY_DISABLED"

LITERAL = "LITERAL"
PREFIXED = "PREFIXED"
PATTERN_TYPES = (LITERAL, PREFIXED)
ALLOW = "ALLOW"
DENY = "DENY"
PERMISSIONS = (ALLOW, DENY)
TOPIC_RESOURCE = "TOPIC"
GROUP_RESOURCE = "GROUP"
CLUSTER_RESOURCE = "CLUSTER"
TRANSACTIONAL_ID_RESOURCE = "TRANSACTIONAL_ID"
RESOURCE_TYPES = (TOPIC_RESOURCE, GROUP_RESOURCE, CLUSTER_RESOURCE, TRANSACTIONAL_ID_RESOURCE)
# The one name of the CLUSTER resource.
CLUSTER_RESOURCE_NAME = "kafka-cluster"
# Every host, every resource of a type (LITERAL only).
WILDCARD = "*"
# `Type:name` (User:orders-app, User:CN=app,O=corp): a type without ':' or blanks, a name
# that neither starts nor ends with a blank. A Java regex as well as a Python one.
PRINCIPAL_FORMAT = r"^[^:\s]+:\S(.*\S)?$"
# The operations each resource type takes (Kafka 4.3's AclEntry.supportedOperations, plus
# ALL), and the topic shorthands a manifest row may use, with what they stand for.
OPERATIONS_BY_RESOURCE = {
    TOPIC_RESOURCE: ("READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
                     "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "ALL"),
    GROUP_RESOURCE: ("READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "ALL"),
    CLUSTER_RESOURCE: ("CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
                       "IDEMPOTENT_WRITE", "ALTER", "DESCRIBE", "ALL"),
    TRANSACTIONAL_ID_RESOURCE: ("DESCRIBE", "WRITE", "TWO_PHASE_COMMIT", "ALL"),
}
SHORTHANDS = {"PRODUCE": ("WRITE", "DESCRIBE"), "CONSUME": ("READ", "DESCRIBE")}

