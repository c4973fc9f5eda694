"""Load the YAML conf into typed, frozen objects, reporting every bad key at once."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from provisioning.errors import ConfError, UsageError
from provisioning.policies import check_policy_specs

SECURITY_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_PROTECTED_TOPICS = ("__*", "_schemas", "connect-*")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# `${NAME}` or `${NAME:-default}`, allowed in bootstrap_servers only (ports of local brokers).
_ENV_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}$")
# Keys that would hold a secret itself rather than the name of a variable holding it.
_INLINE_SECRET_KEYS = (
    "password",
    "sasl_password",
    "sasl_plain_password",
    "sasl_username",
    "sasl_plain_username",
    "ssl_password",
    "secret",
)


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
class RunConf:
    # How long a run's lock lives without a heartbeat (a killed driver's lock frees itself).
    lock_ttl_seconds: int = 600


# Delta refuses a shorter VACUUM retention unless its safety check is turned off.
DELTA_SAFE_RETAIN_HOURS = 168
_RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"


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
    run: RunConf = RunConf()
    maintenance: MaintenanceConf = MaintenanceConf()


T = TypeVar("T")


class _Reader:
    """Walks the parsed YAML, remembering every problem with the key it belongs to."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def problem(self, key: str, message: str) -> None:
        self.problems.append(f"{key}: {message}")

    def mapping(self, node: Any, key: str) -> Mapping[str, Any] | None:
        if not isinstance(node, Mapping):
            self.problem(key, f"expected a mapping, got {_type_name(node)}")
            return None
        return node

    def no_unknown(self, node: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> None:
        for name in node:
            if name not in allowed:
                where = f"{key}.{name}" if key else str(name)
                if str(name) in _INLINE_SECRET_KEYS:
                    self.problem(
                        where,
                        "secrets must not be written in the conf; name the environment "
                        "variable that holds it (sasl_username_env / sasl_password_env)",
                    )
                else:
                    self.problem(where, f"unknown key (allowed: {', '.join(allowed)})")

    def value(
        self,
        node: Mapping[str, Any],
        key: str,
        name: str,
        kind: type[T] | tuple[type, ...],
        default: Any = ...,
        check: Callable[[Any], str | None] | None = None,
    ) -> Any:
        where = f"{key}.{name}" if key else name
        if name not in node or node[name] is None:
            if default is ...:
                self.problem(where, "required key is missing")
            return None if default is ... else default
        raw = node[name]
        # bool is an int subclass: `partitions: true` must not pass as 1.
        if isinstance(raw, bool) and kind is not bool:
            self.problem(where, f"expected {_kind_name(kind)}, got a boolean")
            return None if default is ... else default
        if not isinstance(raw, kind):
            self.problem(where, f"expected {_kind_name(kind)}, got {_type_name(raw)}")
            return None if default is ... else default
        if check is not None:
            message = check(raw)
            if message:
                self.problem(where, message)
        return raw


def _type_name(value: Any) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", int: "an integer",
            float: "a number", bool: "a boolean"}.get(type(value), type(value).__name__)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", bool: "a boolean", list: "a list",
             dict: "a mapping", float: "a number"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _one_of(choices: tuple[str, ...]) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if v in choices else f"{v!r} is not one of {', '.join(choices)}"

    return check


def _positive(v: Any) -> str | None:
    return None if v > 0 else f"must be > 0, got {v}"


def _at_least_zero(v: Any) -> str | None:
    return None if v >= 0 else f"must be >= 0, got {v}"


def _env_name(v: Any) -> str | None:
    if _ENV_NAME.match(v):
        return None
    return (
        "must be the NAME of an environment variable (letters, digits, _), "
        "not the secret itself"
    )


def _readable_file(v: Any) -> str | None:
    path = Path(v)
    if not path.is_file():
        return f"no such file: {v} (relative paths are taken from the directory the job runs in)"
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        return f"cannot read {v}: {exc.strerror or exc}"
    return None


def _bootstrap(v: Any) -> str | None:
    parts = [p.strip() for p in v.split(",")]
    bad = [p for p in parts if not re.match(r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+):\d{1,5}$", p)]
    return f"expected host:port[,host:port...], bad entries: {bad}" if bad or not v else None


_CLUSTER_KEYS = (
    "bootstrap_servers",
    "security_protocol",
    "sasl_mechanism",
    "sasl_username_env",
    "sasl_password_env",
    "ssl_cafile",
    "cluster_id",
    "client_id",
)


def _interpolate(r: _Reader, where: str, value: Any, environ: Mapping[str, str]) -> Any:
    if not isinstance(value, str):
        return value
    m = _ENV_REF.match(value.strip())
    if not m:
        return value
    var, default = m.group(1), m.group(2)
    if environ.get(var):
        return environ[var]
    if default is None:
        r.problem(where, f"environment variable {var} is not set and there is no default")
    return default


def _read_cluster(r: _Reader, name: str, node: Any,
                  environ: Mapping[str, str]) -> ClusterConf | None:
    key = f"clusters.{name}"
    body = r.mapping(node, key)
    if body is None:
        return None
    r.no_unknown(body, key, _CLUSTER_KEYS)
    if "bootstrap_servers" in body:
        body = {**body, "bootstrap_servers": _interpolate(
            r, f"{key}.bootstrap_servers", body["bootstrap_servers"], environ)}
    protocol = r.value(body, key, "security_protocol", str, "PLAINTEXT",
                       _one_of(SECURITY_PROTOCOLS))
    mechanism = r.value(body, key, "sasl_mechanism", str, None, _one_of(SASL_MECHANISMS))
    user_env = r.value(body, key, "sasl_username_env", str, None, _env_name)
    pass_env = r.value(body, key, "sasl_password_env", str, None, _env_name)
    if protocol and protocol.startswith("SASL"):
        for k, v in (("sasl_mechanism", mechanism), ("sasl_username_env", user_env),
                     ("sasl_password_env", pass_env)):
            if v is None and k not in body:
                r.problem(f"{key}.{k}", f"required when security_protocol is {protocol}")
    elif protocol in SECURITY_PROTOCOLS:
        # Credentials named for a cluster that never sends them are a mistake, not a no-op.
        for k in ("sasl_mechanism", "sasl_username_env", "sasl_password_env"):
            if body.get(k) is not None:
                r.problem(f"{key}.{k}", "only used when security_protocol is SASL_PLAINTEXT "
                                        f"or SASL_SSL, not {protocol}")
    cafile = r.value(body, key, "ssl_cafile", str, None, _readable_file)
    if cafile is not None and protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
        r.problem(f"{key}.ssl_cafile", "only used when security_protocol is SSL or SASL_SSL, "
                                       f"not {protocol}")
    cluster = ClusterConf(
        name=name,
        bootstrap_servers=r.value(body, key, "bootstrap_servers", str, check=_bootstrap) or "",
        security_protocol=protocol or "PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_username_env=user_env,
        sasl_password_env=pass_env,
        ssl_cafile=cafile,
        cluster_id=r.value(body, key, "cluster_id", str, None),
        client_id=r.value(body, key, "client_id", str, "topic-provisioning"),
    )
    return cluster


def _table_list(r: _Reader, node: Mapping[str, Any], key: str, name: str) -> tuple[str, ...]:
    raw = node.get(name)
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list) and raw and all(isinstance(x, str) and x for x in raw):
        return tuple(raw)
    r.problem(f"{key}.{name}", "expected a table path or name, or a non-empty list of them")
    return ()


def _read_policies(r: _Reader, node: Any, key: str) -> tuple[PolicySpec, ...]:
    if node is None:
        return ()
    if not isinstance(node, list):
        r.problem(key, f"expected a list of policies, got {_type_name(node)}")
        return ()
    specs = []
    for i, item in enumerate(node):
        where = f"{key}[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            r.problem(where, "expected a mapping with a `name` and the policy's parameters")
            continue
        params = {k: v for k, v in item.items() if k != "name"}
        specs.append(PolicySpec(name=item["name"], params=params, key=where))
    return tuple(specs)


def _string_list(r: _Reader, node: Mapping[str, Any], key: str, name: str,
                 default: tuple[str, ...]) -> tuple[str, ...]:
    if name not in node or node[name] is None:
        return default
    raw = node[name]
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        r.problem(f"{key}.{name}", "expected a list of strings")
        return default
    return tuple(raw)


def parse_conf(data: Any, source: str, digest: str = "",
               environ: Mapping[str, str] | None = None) -> Conf:
    """Build a Conf from parsed YAML; raise ConfError listing every problem."""
    r = _Reader()
    environ = environ or {}
    top = r.mapping(data, "(top level)")
    if top is None:
        raise ConfError(source, r.problems)
    r.no_unknown(top, "", ("clusters", "tables", "kafka", "spark", "deletes", "policies", "run",
                           "maintenance"))

    clusters: dict[str, ClusterConf] = {}
    raw_clusters = top.get("clusters")
    if raw_clusters is None:
        r.problem("clusters", "required key is missing")
    elif not isinstance(raw_clusters, Mapping) or not raw_clusters:
        r.problem("clusters", "expected a mapping of cluster name -> connection settings")
    else:
        for name, body in raw_clusters.items():
            if not isinstance(name, str) or not re.match(r"^[A-Za-z0-9_.-]+$", name):
                r.problem(f"clusters.{name}", "cluster names use letters, digits, '.', '_', '-'")
                continue
            cluster = _read_cluster(r, name, body, environ)
            if cluster is not None:
                clusters[name] = cluster

    tables = TablesConf(manifests=(), audit="", runs="", snapshots="")
    raw_tables = top.get("tables")
    if raw_tables is None:
        r.problem("tables", "required key is missing")
    else:
        body = r.mapping(raw_tables, "tables")
        if body is not None:
            r.no_unknown(body, "tables", ("manifests", "audit", "runs", "snapshots", "locks"))
            runs = r.value(body, "tables", "runs", str) or ""
            tables = TablesConf(
                manifests=_table_list(r, body, "tables", "manifests"),
                audit=r.value(body, "tables", "audit", str) or "",
                runs=runs,
                snapshots=r.value(body, "tables", "snapshots", str) or "",
                locks=r.value(body, "tables", "locks", str, f"{runs}_locks"),
            )

    kafka = KafkaConf()
    if top.get("kafka") is not None:
        body = r.mapping(top["kafka"], "kafka")
        if body is not None:
            names = tuple(KafkaConf.__dataclass_fields__)
            r.no_unknown(body, "kafka", names)
            values = {}
            for name in names:
                # A KIP-4 timeout of 0 means "start the operation, do not wait for it".
                zero_ok = name in ("throttle_retries", "operation_timeout_ms")
                check = _at_least_zero if zero_ok else _positive
                values[name] = r.value(body, "kafka", name, int, getattr(kafka, name), check)
            for name, cap in (("max_partitions_per_request", 10000),
                              ("max_records_per_request", 10000)):
                if isinstance(values[name], int) and values[name] > cap:
                    r.problem(f"kafka.{name}", f"the broker rejects more than {cap} per request")
            kafka = KafkaConf(**values)

    spark = SparkConf()
    if top.get("spark") is not None:
        body = r.mapping(top["spark"], "spark")
        if body is not None:
            r.no_unknown(body, "spark", ("app_name", "settings"))
            settings = body.get("settings") or {}
            if not isinstance(settings, Mapping):
                r.problem("spark.settings", "expected a mapping of Spark property -> value")
                settings = {}
            spark = SparkConf(
                app_name=r.value(body, "spark", "app_name", str, spark.app_name),
                settings={str(k): _spark_value(v) for k, v in settings.items()},
            )

    deletes = DeletesConf()
    if top.get("deletes") is not None:
        body = r.mapping(top["deletes"], "deletes")
        if body is not None:
            r.no_unknown(body, "deletes", ("max_per_cluster", "protected", "deny_list", "prune"))
            deletes = DeletesConf(
                max_per_cluster=r.value(body, "deletes", "max_per_cluster", int,
                                        deletes.max_per_cluster, _at_least_zero),
                # The built-in protections always stay; conf can only add to them.
                protected=tuple(dict.fromkeys(
                    DEFAULT_PROTECTED_TOPICS
                    + _string_list(r, body, "deletes", "protected", ()))),
                deny_list=_string_list(r, body, "deletes", "deny_list", ()),
                prune=r.value(body, "deletes", "prune", bool, False),
            )

    create_policies: tuple[PolicySpec, ...] = ()
    delete_policies: tuple[PolicySpec, ...] = ()
    if top.get("policies") is not None:
        body = r.mapping(top["policies"], "policies")
        if body is not None:
            r.no_unknown(body, "policies", ("create", "delete"))
            create_policies = _read_policies(r, body.get("create"), "policies.create")
            delete_policies = _read_policies(r, body.get("delete"), "policies.delete")

    for problem in check_policy_specs(create_policies, "create"):
        r.problems.append(problem)
    for problem in check_policy_specs(delete_policies, "delete"):
        r.problems.append(problem)

    run = RunConf()
    if top.get("run") is not None:
        body = r.mapping(top["run"], "run")
        if body is not None:
            r.no_unknown(body, "run", ("lock_ttl_seconds",))
            run = RunConf(lock_ttl_seconds=r.value(body, "run", "lock_ttl_seconds", int,
                                                   run.lock_ttl_seconds, _positive))

    maintenance = _read_maintenance(r, top.get("maintenance"), spark)

    if r.problems:
        raise ConfError(source, r.problems)
    return Conf(
        run=run,
        maintenance=maintenance,
        source=source,
        digest=digest,
        clusters=clusters,
        tables=tables,
        kafka=kafka,
        spark=spark,
        deletes=deletes,
        create_policies=create_policies,
        delete_policies=delete_policies,
    )


def _read_maintenance(r: _Reader, node: Any, spark: SparkConf) -> MaintenanceConf:
    default = MaintenanceConf()
    if node is None:
        return default
    body = r.mapping(node, "maintenance")
    if body is None:
        return default
    r.no_unknown(body, "maintenance", ("vacuum_retain_hours", "snapshot_retention_days"))
    hours = r.value(body, "maintenance", "vacuum_retain_hours", int,
                    default.vacuum_retain_hours, _at_least_zero)
    if (isinstance(hours, int) and hours < DELTA_SAFE_RETAIN_HOURS
            and spark.settings.get(_RETENTION_CHECK) != "false"):
        r.problem("maintenance.vacuum_retain_hours",
                  f"{hours} is below Delta's safety margin of {DELTA_SAFE_RETAIN_HOURS} hours, "
                  f"which Delta refuses unless spark.settings has {_RETENTION_CHECK}: false "
                  "(keep it longer than the longest run)")
    days = r.value(body, "maintenance", "snapshot_retention_days", int, None, _positive)
    return MaintenanceConf(vacuum_retain_hours=hours, snapshot_retention_days=days)


def _spark_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def load_conf(path: str | Path, environ: Mapping[str, str] | None = None) -> Conf:
    """Read and validate the YAML conf at `path`; `environ` feeds `${VAR}` references."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfError(str(p), [f"cannot read the file: {exc.strerror or exc}"]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfError(str(p), [f"not valid YAML: {exc}"]) from None
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return parse_conf(data, str(p), digest, environ)


@dataclass(frozen=True)
class Credentials:
    username: Secret
    password: Secret


def resolve_credentials(conf: Conf, environ: Mapping[str, str]) -> dict[str, Credentials]:
    """Read each SASL cluster's credentials from the named environment variables."""
    problems = []
    found: dict[str, Credentials] = {}
    for cluster in conf.clusters.values():
        if not cluster.security_protocol.startswith("SASL"):
            continue
        values = {}
        for key in ("sasl_username_env", "sasl_password_env"):
            var = getattr(cluster, key)
            if var is None or not environ.get(var):
                problems.append(
                    f"clusters.{cluster.name}.{key}: environment variable {var!r} is not set"
                )
            else:
                values[key] = Secret(environ[var])
        if len(values) == 2:
            found[cluster.name] = Credentials(values["sasl_username_env"],
                                              values["sasl_password_env"])
    if problems:
        raise ConfError(conf.source, problems)
    return found


def select_clusters(conf: Conf, names: Iterator[str] | tuple[str, ...]) -> list[ClusterConf]:
    """The clusters named on the command line (all of them when none is named)."""
    wanted = list(names)
    if not wanted:
        return list(conf.clusters.values())
    unknown = [n for n in wanted if n not in conf.clusters]
    if unknown:
        raise UsageError(
            f"unknown cluster(s) {', '.join(unknown)}; the conf defines "
            f"{', '.join(sorted(conf.clusters))}"
        )
    return [conf.clusters[n] for n in dict.fromkeys(wanted)]
