"""The typed, frozen conf: what the job's YAML file says, as data classes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from provisioning.names import ALWAYS_PROTECTED, OFF, SEVERITIES

SECURITY_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_PROTECTED_TOPICS = ALWAYS_PROTECTED


class Secret:
    """A credential value that never shows itself in a repr, a log line or a traceback."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


@dataclass(frozen=True)
class ClusterConf:
    name: str
    bootstrap_servers: str
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username_env: str | None = None
    sasl_password_env: str | None = None
    ssl_cafile: str | None = None
    cluster_id: str | None = None
    client_id: str = "topic-provisioning"


@dataclass(frozen=True)
class TablesConf:
    manifests: tuple[str, ...]
    audit: str
    runs: str
    snapshots: str
    locks: str = ""
    # `check`'s violations (schemas.VIOLATIONS).
    violations: str = ""
    # The ACL manifests; None (the key left out): the run manages no ACL at all.
    acl_manifests: tuple[str, ...] | None = None
    # Where the live bindings of each run are recorded (default `<snapshots>_acls`).
    acl_snapshots: str = ""


@dataclass(frozen=True)
class KafkaConf:
    request_timeout_ms: int = 30000
    operation_timeout_ms: int = 30000
    batch_size: int = 1000
    max_partitions_per_request: int = 10000
    max_records_per_request: int = 10000
    throttle_retries: int = 8
    verify_timeout_ms: int = 60000
    # CreateTopics requests one task keeps in flight to one cluster (1 = one at a time).
    max_in_flight_requests: int = 4


@dataclass(frozen=True)
class SparkConf:
    app_name: str = "topic-provisioning"
    settings: Mapping[str, str] = field(default_factory=dict)
    # A Spark Connect server (sc://HOST:PORT) to run on; None: classic Spark (spark-submit).
    remote: str | None = None


@dataclass(frozen=True)
class PolicySpec:
    """One configured policy: its registered name and its parameter block."""

    name: str
    params: Mapping[str, Any]
    key: str  # where it was written, e.g. "policies.create[2]"


@dataclass(frozen=True)
class DeletesConf:
    max_per_cluster: int = 10
    protected: tuple[str, ...] = DEFAULT_PROTECTED_TOPICS
    deny_list: tuple[str, ...] = ()
    prune: bool = False


@dataclass(frozen=True)
class AltersConf:
    # Over this many alters on one cluster in one run, none of that cluster's is made.
    max_per_cluster: int = 50
    # Remove a live override the manifest row does not list (DELETE: back to the default).
    remove_unlisted_configs: bool = False


@dataclass(frozen=True)
class ReassignConf:
    # Over this many partitions to move on one cluster in one run, none of that cluster's
    # moves start.
    max_partitions_per_cluster: int = 500
    # The replication throttle of a move, bytes per second on each broker involved (its
    # leader and follower rates); None: moves are not throttled.
    throttle_bytes_per_second: int | None = 52428800
    # How long `verify` waits for moves to complete; the partitions still moving then are
    # recorded `reassigning` and finished by a later run.
    wait_seconds: int = 300


@dataclass(frozen=True)
class AclsConf:
    # Revoke live bindings no ACL manifest names (planned as REVOKE; made with revokes).
    remove_unlisted: bool = False
    # The only principals a CLUSTER binding may be granted to (unless the row says `force`).
    cluster_principals: tuple[str, ...] = ()
    # Over this many grants and revokes on one cluster in one run, none of that cluster's
    # is made.
    max_changes_per_cluster: int = 200
    # Bindings per CreateAcls / DeleteAcls request.
    batch_size: int = 1000
    # A topic this job deletes takes its LITERAL TOPIC bindings with it.
    revoke_with_deleted_topics: bool = True
    # Turn on the `owner_scope` ACL policy (the same as listing it in `policies.acl`).
    owner_scope: bool = False


@dataclass(frozen=True)
class RunConf:
    # How long a run's lock lives without a heartbeat (a killed driver's lock frees itself).
    lock_ttl_seconds: int = 600
    # How far two machines' clocks may differ: another run takes an expired lease over only
    # this much after its expiry.
    lock_clock_skew_seconds: int = 30


# The levels `checks.severity` may give a rule (names.CHECK_RULES).
CHECK_SEVERITY_LEVELS = (*SEVERITIES, OFF)


@dataclass(frozen=True)
class ChecksConf:
    # rule -> error, warning, info or off: overrides a rule's own severity (or turns the rule
    # off); a rule not named keeps its own.
    severity: Mapping[str, str] = field(default_factory=dict)


# Delta refuses a shorter VACUUM retention unless its safety check is turned off.

DELTA_SAFE_RETAIN_HOURS = 168


@dataclass(frozen=True)
class MaintenanceConf:
    # Files no table version within this many hours needs are removed by `maintain`.
    vacuum_retain_hours: int = DELTA_SAFE_RETAIN_HOURS
    # Snapshot rows older than this are deleted by `maintain` (None: kept forever).
    snapshot_retention_days: int | None = None


@dataclass(frozen=True)
class Conf:
    source: str
    digest: str
    clusters: Mapping[str, ClusterConf]
    tables: TablesConf
    kafka: KafkaConf = KafkaConf()
    spark: SparkConf = SparkConf()
    deletes: DeletesConf = DeletesConf()
    create_policies: tuple[PolicySpec, ...] = ()
    delete_policies: tuple[PolicySpec, ...] = ()
    alters: AltersConf = AltersConf()
    alter_policies: tuple[PolicySpec, ...] = ()
    reassign: ReassignConf = ReassignConf()
    reassign_policies: tuple[PolicySpec, ...] = ()
    run: RunConf = RunConf()
    maintenance: MaintenanceConf = MaintenanceConf()
    checks: ChecksConf = ChecksConf()
    acls: AclsConf = AclsConf()
    # `policies.acl`, in conf order (with `owner_scope` appended when `acls.owner_scope`
    # turns it on).
    acl_policies: tuple[PolicySpec, ...] = ()



@dataclass(frozen=True)
class Credentials:
    username: Secret
    password: Secret
