"""The vocabulary of client quotas (KIP-546): their entity types and how the tables spell the
default entity, the quota keys and which entity each fits, the plan actions and outcomes."""

from __future__ import annotations

from provisioning.names import Nouns

# How the job names client quotas (`names.Nouns`): phases `quota plan`, conf `quotas`,
# `tables.quota_manifests`, `policies.quota`.
NOUNS = Nouns(name="quotas", prefix="quota", noun="quota", one="quota", many="quotas",
              title="client quotas")

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
# Kafka's entity types, in the order an entity is spelled (kafka-configs.sh's order).
ENTITY_TYPES = (USER, CLIENT_ID, IP)
# How the product's tables name the default entity of a type (None in the protocol).
DEFAULT = "<default>"

# The quota keys a Kafka 4.3 broker knows (org.apache.kafka.server.config.QuotaConfig):
# the first four on user and client-id entities, the last on ip entities only.
USER_CLIENT_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage",
                    "controller_mutation_rate")
IP_KEYS = ("connection_creation_rate",)

# Outcomes of a quota result. `set` and `removed` are this kind's own; the others are the
# vocabulary every kind shares.
SET = "set"
REMOVED = "removed"

# Plan actions: SET (wanted, and missing or another value), REMOVE (the row is `absent`, or
# an unlisted quota with `quotas.remove_unlisted`), NOOP.
SET_ACTION = "SET"
REMOVE = "REMOVE"
# The keys a manifest may give, and the rule an ip entity adds: it takes nothing else.
KEYS = (*USER_CLIENT_KEYS, *IP_KEYS)
# The check rule of a live quota no quota manifest names.
UNMANAGED_QUOTA = "unmanaged_quota"


def protocol_name(table: str) -> str | None:
    """An entity name as the tables spell it -> as the protocol does (`<default>` -> None).

    A user or client literally named `<default>` is a distinct entity to a KRaft broker,
    which this spelling cannot name: it always means the default."""
    return None if table == DEFAULT else table


def table_name(protocol: str | None) -> str:
    """Inverse of `protocol_name` (None -> `<default>`)."""
    return DEFAULT if protocol is None else protocol
