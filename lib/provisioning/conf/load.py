"""Load the YAML conf into typed, frozen objects, reporting every bad key at once."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from provisioning.conf.model import ClusterConf, Conf
from provisioning.conf.secrets import resolve_credentials
from provisioning.conf.section import Section
from provisioning.errors import ConfError, UsageError

__all__ = ["load_conf", "parse_conf", "resolve_credentials", "select_clusters"]

Sections = tuple[Section, ...]


def parse_conf(data: Any, source: str, parts: Sections, digest: str = "",
               environ: Mapping[str, str] | None = None) -> Conf:
    """Build a Conf from parsed YAML; raise ConfError listing every problem.

    parts: the registered kinds' conf sections, in registry order.
    """
    # Imported here: the conf's data classes travel to the Spark workers, whose Python (a
    # Spark Connect server's) need not have pydantic.
    from provisioning.conf import rules, validate
    from provisioning.conf.policies import type_name

    if not isinstance(data, Mapping):
        raise ConfError(source, [f"(top level): expected a mapping, got {type_name(data)}"])
    problems: list[str] = []
    top = rules.prepare(data, environ or {}, problems)
    values, found = validate.read_file(top, parts)
    found += [(validate.loc_of(p), p.split(": ", 1)[1]) for p in (
        *problems, *rules.cluster_rules(top), *rules.maintenance_rules(top),
        *rules.severity_rules(top, tuple(r for s in parts for r in s.check_rules)))]
    more: list[str] = []
    specs = rules.policy_specs(top, parts, more)
    conf = rules.assemble(source, digest, values, parts, specs, more)
    found += [(validate.loc_of(p), p.split(": ", 1)[1]) for p in more]
    if found:
        raise ConfError(source, [f"{validate.key_name(loc)}: {message}"
                                 for loc, message in validate.order(found, top, parts)])
    return conf


def load_conf(path: str | Path, parts: Sections, environ: Mapping[str, str] | None = None
              ) -> Conf:
    """Read and validate the YAML conf at `path` with the kinds' sections `parts`;
    `environ` feeds `${VAR}` references."""
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
    return parse_conf(data, str(p), parts, digest, environ)



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

