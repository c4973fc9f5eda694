"""What no single key's model can say: the rules across keys, the `${VAR}` references,
and the conf assembled from what was read.

Each rule reads the file as written (after `prepare`), so it still holds when a key it
looks at was refused on its own: every problem of a file is reported at once.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from provisioning.conf.connection import cluster_rules
from provisioning.conf.model import (
    DELTA_SAFE_RETAIN_HOURS,
    ChecksConf,
    Conf,
    KafkaConf,
    MaintenanceConf,
    PolicySpec,
    RunConf,
    SparkConf,
    TablesConf,
)
from provisioning.conf.policies import catalogue, cross_problems
from provisioning.conf.section import Given, Section

__all__ = ["assemble", "cluster_rules", "maintenance_rules", "policy_specs", "prepare",
           "severity_rules"]

# `${NAME}` or `${NAME:-default}`, allowed in bootstrap_servers only (ports of local brokers).
_ENV_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}$")
_RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"


def prepare(top: Mapping[str, Any], environ: Mapping[str, str], problems: list[str]
            ) -> dict[str, Any]:
    """The file as its model reads it: each cluster given its name, `${VAR}` replaced."""
    out = dict(top)
    clusters = top.get("clusters")
    if isinstance(clusters, Mapping):
        out["clusters"] = {}
        for name, body in clusters.items():
            if isinstance(body, Mapping):
                body = dict(body)
                if "name" in body:
                    problems.append(f"clusters.{name}.name: the cluster's name is its key")
                body["name"] = name
                if "bootstrap_servers" in body:
                    body["bootstrap_servers"] = _interpolate(
                        f"clusters.{name}.bootstrap_servers", body["bootstrap_servers"],
                        environ, problems)
            out["clusters"][name] = body
    return out


def _interpolate(where: str, value: Any, environ: Mapping[str, str], problems: list[str]
                 ) -> Any:
    m = _ENV_REF.match(value.strip()) if isinstance(value, str) else None
    if not m:
        return value
    var, default = m.group(1), m.group(2)
    if environ.get(var):
        return environ[var]
    if default is None:
        problems.append(f"{where}: environment variable {var} is not set and there is no "
                        "default")
    return default


def maintenance_rules(top: Mapping[str, Any]) -> list[str]:
    """A VACUUM retention under Delta's margin only with Delta's check turned off."""
    maintenance, spark = top.get("maintenance"), top.get("spark")
    hours = maintenance.get("vacuum_retain_hours") if isinstance(maintenance, Mapping) else None
    settings = spark.get("settings") if isinstance(spark, Mapping) else None
    check = settings.get(_RETENTION_CHECK) if isinstance(settings, Mapping) else None
    if (not isinstance(hours, int) or isinstance(hours, bool) or hours < 0
            or hours >= DELTA_SAFE_RETAIN_HOURS or check is False or check == "false"):
        return []
    return [f"maintenance.vacuum_retain_hours: {hours} is below Delta's safety margin of "
            f"{DELTA_SAFE_RETAIN_HOURS} hours, which Delta refuses unless spark.settings has "
            f"{_RETENTION_CHECK}: false (keep it longer than the longest run)"]


def severity_rules(top: Mapping[str, Any], rules: tuple[str, ...]) -> list[str]:
    """`checks.severity` names only the rules some kind's `check` judges."""
    checks = top.get("checks")
    severity = checks.get("severity") if isinstance(checks, Mapping) else None
    return [f"checks.severity.{rule}: unknown rule (known: {', '.join(rules)})"
            for rule in (severity if isinstance(severity, Mapping) else ())
            if rule not in rules]


def policy_specs(top: Mapping[str, Any], parts: tuple[Section, ...], problems: list[str]
                 ) -> dict[str, tuple[PolicySpec, ...]]:
    """`policies.<key>` of every section, in conf order, with the problems across each
    block's parameters (`conf.policies.cross_problems`; its model reports the rest)."""
    node = top.get("policies")
    specs: dict[str, tuple[PolicySpec, ...]] = {}
    for key in (k for s in parts for k in s.policy_models):
        items = node.get(key) if isinstance(node, Mapping) else None
        specs[key] = tuple(
            PolicySpec(name=item["name"], params={k: v for k, v in item.items() if k != "name"},
                       key=f"policies.{key}[{i}]")
            for i, item in enumerate(items if isinstance(items, list) else ())
            if isinstance(item, Mapping) and isinstance(item.get("name"), str))
        models = catalogue(key, parts)
        problems.extend(f"{spec.key}.{param}: {message}" for spec in specs[key]
                        if spec.name in models
                        for param, message in cross_problems(models[spec.name], spec.params))
    return specs


def assemble(source: str, digest: str, values: Mapping[str, Any], parts: tuple[Section, ...],
             policies: Mapping[str, tuple[PolicySpec, ...]], problems: list[str]) -> Conf:
    """The Conf of what was read (the defaults of what was not: then `problems` says why);
    each section builds its value and adds its own cross-key problems."""
    read_tables = values.get("tables")
    shared = TablesConf(runs="", manifests=(), audit="", snapshots="")
    if read_tables is not None:
        shared = TablesConf(**{f.name: getattr(read_tables, f.name)
                               for f in dataclasses.fields(TablesConf)})
        runs = shared.runs
        derived: dict[str, Any] = {name: getattr(shared, name) or f"{runs}_{name}"
                                   for name in ("locks", "violations", "inventory", "disks")}
        shared = dataclasses.replace(shared, **derived)
    built = {}
    for part in parts:
        tables: Any = None
        if part.tables_model is not None:
            tables = part.tables_model(**{
                f.name: getattr(read_tables, f.name)
                for f in dataclasses.fields(part.tables_model)}) if read_tables is not None \
                else part.tables_model()
        given = Given({k: values[k] for k in part.key_models if k in values}, tables,
                      policies, shared)
        built[part.kind] = part.build(given)
        problems.extend(given.problems)
    return Conf(
        source=source,
        digest=digest,
        clusters=values.get("clusters", {}),
        tables=shared,
        kafka=values.get("kafka", KafkaConf()),
        spark=values.get("spark", SparkConf()),
        run=values.get("run", RunConf()),
        maintenance=values.get("maintenance", MaintenanceConf()),
        checks=values.get("checks", ChecksConf()),
        sections=built,
    )
