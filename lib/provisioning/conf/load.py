"""Load the YAML conf into typed, frozen objects, reporting every bad key at once."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from provisioning import kinds
from provisioning.conf.model import (
    CHECK_SEVERITY_LEVELS,
    DELTA_SAFE_RETAIN_HOURS,
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    ChecksConf,
    ClusterConf,
    Conf,
    Credentials,
    KafkaConf,
    MaintenanceConf,
    PolicySpec,
    RunConf,
    Secret,
    SparkConf,
    TablesConf,
)
from provisioning.conf.policies import check_policy_specs
from provisioning.conf.reader import (
    Reader,
    at_least_zero,
    bootstrap,
    env_name,
    one_of,
    positive,
    readable_file,
    table_list,
    type_name,
)
from provisioning.conf.section import Given, Section
from provisioning.errors import ConfError, UsageError
from provisioning.session import redact_remote

# `${NAME}` or `${NAME:-default}`, allowed in bootstrap_servers only (ports of local brokers).
_ENV_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}$")
_RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"


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


def _interpolate(r: Reader, where: str, value: Any, environ: Mapping[str, str]) -> Any:
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


def _read_cluster(r: Reader, name: str, node: Any,
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
                       one_of(SECURITY_PROTOCOLS))
    mechanism = r.value(body, key, "sasl_mechanism", str, None, one_of(SASL_MECHANISMS))
    user_env = r.value(body, key, "sasl_username_env", str, None, env_name)
    pass_env = r.value(body, key, "sasl_password_env", str, None, env_name)
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
    cafile = r.value(body, key, "ssl_cafile", str, None, readable_file)
    if cafile is not None and protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
        r.problem(f"{key}.ssl_cafile", "only used when security_protocol is SSL or SASL_SSL, "
                                       f"not {protocol}")
    cluster = ClusterConf(
        name=name,
        bootstrap_servers=r.value(body, key, "bootstrap_servers", str, check=bootstrap) or "",
        security_protocol=protocol or "PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_username_env=user_env,
        sasl_password_env=pass_env,
        ssl_cafile=cafile,
        cluster_id=r.value(body, key, "cluster_id", str, None),
        client_id=r.value(body, key, "client_id", str, "topic-provisioning"),
    )
    return cluster


def _read_policies(r: Reader, node: Any, key: str) -> tuple[PolicySpec, ...]:
    if node is None:
        return ()
    if not isinstance(node, list):
        r.problem(key, f"expected a list of policies, got {type_name(node)}")
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


# The keys every run shares; each kind's section declares its own (conf.section).
_SHARED_KEYS = ("clusters", "tables", "kafka", "spark", "policies", "run", "maintenance",
                "checks")
_SHARED_TABLE_KEYS = ("manifests", "audit", "runs", "snapshots", "locks", "violations",
                      "inventory", "disks")


def sections() -> tuple[Section, ...]:
    """Every registered kind's conf section (`kinds.parts("conf")`)."""
    return kinds.parts("conf", Section)  # type: ignore[type-abstract]


def parse_conf(data: Any, source: str, digest: str = "",
               environ: Mapping[str, str] | None = None) -> Conf:
    """Build a Conf from parsed YAML; raise ConfError listing every problem."""
    r = Reader()
    top = r.mapping(data, "(top level)")
    if top is None:
        raise ConfError(source, r.problems)
    parts = sections()
    r.no_unknown(top, "", (*_SHARED_KEYS, *(k for s in parts for k in s.keys)))
    clusters = _read_clusters(r, top.get("clusters"), environ or {})
    tables, table_node = _read_tables(r, top.get("tables"),
                                      tuple(k for s in parts for k in s.table_keys))
    kafka = _read_kafka(r, r.section(top, "kafka"))
    spark = _read_spark(r, r.section(top, "spark"))
    policies = _read_policy_sections(r, r.section(top, "policies"), parts)
    values = {s.kind: s.read(r, Given(top, table_node, policies, tables)) for s in parts}
    run = _read_run(r, r.section(top, "run"))
    maintenance = _read_maintenance(r, top.get("maintenance"), spark)
    checks = _read_checks(r, r.section(top, "checks"),
                          tuple(rule for s in parts for rule in s.check_rules))
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
        checks=checks,
        sections=values,
    )


def _read_clusters(r: Reader, node: Any, environ: Mapping[str, str]
                   ) -> dict[str, ClusterConf]:
    clusters: dict[str, ClusterConf] = {}
    if node is None:
        r.problem("clusters", "required key is missing")
    elif not isinstance(node, Mapping) or not node:
        r.problem("clusters", "expected a mapping of cluster name -> connection settings")
    else:
        for name, body in node.items():
            if not isinstance(name, str) or not re.match(r"^[A-Za-z0-9_.-]+$", name):
                r.problem(f"clusters.{name}", "cluster names use letters, digits, '.', '_', '-'")
                continue
            cluster = _read_cluster(r, name, body, environ)
            if cluster is not None:
                clusters[name] = cluster
    return clusters


def _read_tables(r: Reader, node: Any, kind_keys: tuple[str, ...]
                 ) -> tuple[TablesConf, Mapping[str, Any]]:
    """The shared tables, and the `tables` mapping as written (the kinds read their keys)."""
    empty = TablesConf(manifests=(), audit="", runs="", snapshots="")
    if node is None:
        r.problem("tables", "required key is missing")
        return empty, {}
    body = r.mapping(node, "tables")
    if body is None:
        return empty, {}
    r.no_unknown(body, "tables", (*_SHARED_TABLE_KEYS, *kind_keys))
    runs = r.value(body, "tables", "runs", str) or ""
    manifests = table_list(r, body, "tables", "manifests")
    audit = r.value(body, "tables", "audit", str) or ""
    snapshots = r.value(body, "tables", "snapshots", str) or ""
    return TablesConf(
        manifests=manifests,
        audit=audit,
        runs=runs,
        snapshots=snapshots,
        locks=r.value(body, "tables", "locks", str, f"{runs}_locks"),
        violations=r.value(body, "tables", "violations", str, f"{runs}_violations"),
        inventory=r.value(body, "tables", "inventory", str, f"{runs}_inventory"),
        disks=r.value(body, "tables", "disks", str, f"{runs}_disks"),
    ), body


def _read_kafka(r: Reader, body: Mapping[str, Any] | None) -> KafkaConf:
    kafka = KafkaConf()
    if body is None:
        return kafka
    names = tuple(KafkaConf.__dataclass_fields__)
    r.no_unknown(body, "kafka", names)
    values = {}
    for name in names:
        # A KIP-4 timeout of 0 means "start the operation, do not wait for it".
        zero_ok = name in ("throttle_retries", "operation_timeout_ms")
        check = at_least_zero if zero_ok else positive
        values[name] = r.value(body, "kafka", name, int, getattr(kafka, name), check)
    for name, cap in (("max_partitions_per_request", 10000),
                      ("max_records_per_request", 10000)):
        if isinstance(values[name], int) and values[name] > cap:
            r.problem(f"kafka.{name}", f"the broker rejects more than {cap} per request")
    return KafkaConf(**values)


def _read_spark(r: Reader, body: Mapping[str, Any] | None) -> SparkConf:
    spark = SparkConf()
    if body is None:
        return spark
    r.no_unknown(body, "spark", ("app_name", "settings", "remote"))
    settings = body.get("settings") or {}
    if not isinstance(settings, Mapping):
        r.problem("spark.settings", "expected a mapping of Spark property -> value")
        settings = {}
    remote = r.value(body, "spark", "remote", str, None)
    if remote is not None and not remote.startswith("sc://"):
        r.problem("spark.remote", f"expected a Spark Connect address sc://HOST:PORT, got "
                  f"{redact_remote(remote)!r}")
        remote = None
    return SparkConf(
        app_name=r.value(body, "spark", "app_name", str, spark.app_name),
        settings={str(k): _spark_value(v) for k, v in settings.items()},
        remote=remote,
    )


def _read_policy_sections(r: Reader, body: Mapping[str, Any] | None,
                          parts: tuple[Section, ...]) -> dict[str, tuple[PolicySpec, ...]]:
    """`policies.<key>` for every key a section declares, parsed and checked."""
    keys = tuple(k for s in parts for k in s.policy_keys)
    specs: dict[str, tuple[PolicySpec, ...]] = dict.fromkeys(keys, ())
    if body is not None:
        r.no_unknown(body, "policies", keys)
        for key in keys:
            specs[key] = _read_policies(r, body.get(key), f"policies.{key}")
    for key in keys:
        r.problems.extend(check_policy_specs(specs[key], key))
    return specs


def _read_run(r: Reader, body: Mapping[str, Any] | None) -> RunConf:
    run = RunConf()
    if body is None:
        return run
    r.no_unknown(body, "run", ("lock_ttl_seconds", "lock_clock_skew_seconds"))
    return RunConf(
        lock_ttl_seconds=r.value(body, "run", "lock_ttl_seconds", int, run.lock_ttl_seconds,
                                 positive),
        lock_clock_skew_seconds=r.value(body, "run", "lock_clock_skew_seconds", int,
                                        run.lock_clock_skew_seconds, at_least_zero))


def _read_maintenance(r: Reader, node: Any, spark: SparkConf) -> MaintenanceConf:
    default = MaintenanceConf()
    if node is None:
        return default
    body = r.mapping(node, "maintenance")
    if body is None:
        return default
    r.no_unknown(body, "maintenance", ("vacuum_retain_hours", "snapshot_retention_days"))
    hours = r.value(body, "maintenance", "vacuum_retain_hours", int,
                    default.vacuum_retain_hours, at_least_zero)
    if (isinstance(hours, int) and hours < DELTA_SAFE_RETAIN_HOURS
            and spark.settings.get(_RETENTION_CHECK) != "false"):
        r.problem("maintenance.vacuum_retain_hours",
                  f"{hours} is below Delta's safety margin of {DELTA_SAFE_RETAIN_HOURS} hours, "
                  f"which Delta refuses unless spark.settings has {_RETENTION_CHECK}: false "
                  "(keep it longer than the longest run)")
    days = r.value(body, "maintenance", "snapshot_retention_days", int, None, positive)
    return MaintenanceConf(vacuum_retain_hours=hours, snapshot_retention_days=days)


def _read_checks(r: Reader, body: Mapping[str, Any] | None, rules: tuple[str, ...]
                 ) -> ChecksConf:
    if body is None:
        return ChecksConf()
    r.no_unknown(body, "checks", ("severity",))
    node = body.get("severity")
    if node is None:
        return ChecksConf()
    if not isinstance(node, Mapping):
        r.problem("checks.severity", f"expected a mapping of rule -> "
                  f"{' | '.join(CHECK_SEVERITY_LEVELS)}, got {type_name(node)}")
        return ChecksConf()
    severity = {}
    for rule, level in node.items():
        where = f"checks.severity.{rule}"
        if rule not in rules:
            r.problem(where, f"unknown rule (known: {', '.join(rules)})")
            continue
        # YAML 1.1 reads a bare `off` as false.
        if level is False:
            level = "off"
        if not isinstance(level, str) or level not in CHECK_SEVERITY_LEVELS:
            shown = repr(level) if isinstance(level, str) else type_name(level)
            r.problem(where, f"{shown} is not one of {', '.join(CHECK_SEVERITY_LEVELS)}")
            continue
        severity[rule] = level
    return ChecksConf(severity=severity)


def _spark_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def load_conf(path: str | Path, environ: Mapping[str, str] | None = None) -> Conf:
    """Read and validate the YAML conf at `path`; `environ` feeds `${VAR}` references."""
    # Imported here: the conf's data classes travel to the Spark workers, whose Python (a
    # Spark Connect server's) need not have PyYAML.
    import yaml

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

