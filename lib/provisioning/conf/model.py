"""The typed, frozen conf: what the job's YAML file says, as data classes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from provisioning.names import OFF, SEVERITIES

SECURITY_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


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
    # `check`'s inventory of live topics and brokers' disks (schemas.INVENTORY, DISKS).
    inventory: str = ""
    disks: str = ""


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


S = TypeVar("S")


@dataclass(frozen=True)
class Conf:
    source: str
    digest: str
    clusters: Mapping[str, ClusterConf]
    tables: TablesConf
    kafka: KafkaConf = KafkaConf()
    spark: SparkConf = SparkConf()
    run: RunConf = RunConf()
    maintenance: MaintenanceConf = MaintenanceConf()
    checks: ChecksConf = ChecksConf()
    # Each registered kind's section (conf.section.Section), by kind name.
    sections: Mapping[str, object] = field(default_factory=dict)

    def section(self, kind: type[S]) -> S:
        """The section of type `kind` (its defaults when the conf was built without it)."""
        for value in self.sections.values():
            if isinstance(value, kind):
                return value
        return kind()


@dataclass(frozen=True)
class Credentials:
    username: Secret
    password: Secret
