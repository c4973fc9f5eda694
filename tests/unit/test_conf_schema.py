"""The conf's JSON Schema (conf/provisioning.schema.json): made from the conf's models,
kept current, every key described, and as strict as the loader on the confs we have."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from provisioning.conf.schema import conf_schema, render
from provisioning.errors import ConfError
from tests.helpers import SECTIONS, load_conf, parse_conf, write_conf

REPO = Path(__file__).resolve().parents[2]
SCHEMA_FILE = REPO / "conf" / "provisioning.schema.json"
BAD_CONFS = REPO / "tests" / "data" / "bad_confs"


def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _schema_errors(data: Any) -> list[str]:
    return sorted(f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
                  for e in _validator().iter_errors(data))


def test_the_schema_file_is_what_the_models_make() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render(conf_schema(SECTIONS)), (
        "conf/provisioning.schema.json is stale: run `make conf-schema` and commit it")


def _properties(node: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        for name, prop in node.get("properties", {}).items():
            yield f"{where}.{name}", prop
        for key, value in node.items():
            yield from _properties(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _properties(value, f"{where}[{i}]")


def test_every_key_has_a_type_and_a_description() -> None:
    props = list(_properties(conf_schema(SECTIONS)))
    assert len(props) > 50
    undescribed = [where for where, prop in props if not prop.get("description")]
    untyped = [where for where, prop in props
               if not ({"type", "$ref", "anyOf", "enum"} & set(prop))]
    assert (undescribed, untyped) == ([], [])


def test_the_keys_another_branch_reads_are_in_the_schema_with_their_defaults() -> None:
    defs = conf_schema(SECTIONS)["$defs"]
    checks, deletes = defs["ChecksConf"]["properties"], defs["DeletesConf"]["properties"]
    tables = defs["Tables"]["properties"]
    assert {k: (checks[k]["default"], checks[k]["type"]) for k in
            ("idle_days", "disk_used_ratio", "disk_days")} == {
        "idle_days": (30, "integer"), "disk_used_ratio": (0.85, "number"),
        "disk_days": (14, "integer")}
    assert (checks["disk_used_ratio"]["exclusiveMinimum"], checks["disk_used_ratio"]["maximum"],
            checks["idle_days"]["exclusiveMinimum"]) == (0, 1, 0)
    assert (deletes["in_use_days"]["default"], deletes["in_use_days"]["minimum"]) == (7, 0)
    assert {"inventory", "disks"} <= set(tables)


def _readme_fragments() -> Iterator[tuple[str, dict[str, Any]]]:
    """The conf examples of the README and the docs' pages: YAML mappings whose keys are
    all conf keys."""
    keys = set(conf_schema(SECTIONS)["properties"])
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("**/*.md"))]:
        text = page.read_text(encoding="utf-8")
        for i, block in enumerate(re.findall(r"```yaml\n(.*?)```", text, re.S)):
            data = yaml.safe_load(block)
            if isinstance(data, dict) and set(data) <= keys:
                yield f"{page.relative_to(REPO)} yaml block {i}", data


def _confs_in_the_repo() -> Iterator[tuple[str, Any]]:
    local = yaml.safe_load((REPO / "conf" / "local.yaml").read_text(encoding="utf-8"))
    for path in sorted((REPO / "conf").glob("**/*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "clusters" in data:
            yield str(path.relative_to(REPO)), data
    for name, fragment in _readme_fragments():
        yield name, {**local, **fragment, "tables": {**local["tables"],
                                                     **fragment.get("tables", {})}}
    # The confs the tests write (tests.helpers.write_conf) and the unit tests' own.
    for module in ("test_conf", "test_acl_conf", "test_quota_conf", "test_reassign_conf",
                   "test_check_conf"):
        minimal = getattr(importlib.import_module(f"tests.unit.{module}"), "MINIMAL", None)
        if minimal is not None:
            yield f"tests/unit/{module}.py MINIMAL", minimal


def test_the_docs_have_conf_examples_to_check() -> None:
    assert len(list(_readme_fragments())) >= 4


@pytest.mark.parametrize(("name", "data"), list(_confs_in_the_repo()),
                         ids=[n for n, _ in _confs_in_the_repo()])
def test_the_schema_accepts_every_conf_the_loader_accepts(
        name: str, data: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The README's custom policies name a team's module: here, one that exists.
    for target in re.findall(r"'callable': '([\w.]+):(\w+)'", repr(data)):
        module = types.ModuleType(target[0])
        setattr(module, target[1], lambda *args: None)
        monkeypatch.setitem(sys.modules, target[0], module)
    # The docs' clusters name files of a deployment (mounted secrets, CAs): here, files
    # that exist, so the loader checks everything else.
    for cluster in (data.get("clusters") or {}).values():
        for key, value in list(cluster.items()):
            if key.endswith("file") and isinstance(value, str) and not Path(value).exists():
                stand_in = tmp_path / key
                stand_in.write_text("stand-in\n")
                cluster[key] = str(stand_in)
    # And the folders of user passwords: folders that exist.
    sources = (data.get("users") or {}).get("password_sources") or {}
    for i, folder in enumerate(sources.get("folders") or ()):
        if not Path(folder).is_dir():
            (tmp_path / f"folder{i}").mkdir()
            sources["folders"][i] = str(tmp_path / f"folder{i}")
    parse_conf(data, name, environ={"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092"})
    assert _schema_errors(data) == []


def test_the_schema_accepts_the_confs_the_tests_write(tmp_path: Path) -> None:
    paths = [
        write_conf(tmp_path / "plain.yaml", "127.0.0.1:9092", tmp_path / "wh"),
        write_conf(tmp_path / "sasl.yaml", "127.0.0.1:9093", tmp_path / "wh", cluster="prod",
                   cluster_extra={"security_protocol": "SASL_PLAINTEXT",
                                  "sasl_mechanism": "PLAIN", "sasl_username_env": "U",
                                  "sasl_password_env": "P"},
                   extra={"deletes": {"max_per_cluster": 3, "prune": True},
                          "reassign": {"throttle_bytes_per_second": None},
                          "checks": {"severity": {"unmanaged": False}}}),
    ]
    for path in paths:
        load_conf(path)
        assert _schema_errors(yaml.safe_load(path.read_text())) == [], path.name


@pytest.mark.parametrize("name", sorted(p.name for p in BAD_CONFS.glob("*.yaml")
                                        if p.name != "expected.yaml"))
def test_the_schema_refuses_every_bad_conf_the_loader_refuses(name: str) -> None:
    data = yaml.safe_load((BAD_CONFS / name).read_text(encoding="utf-8"))
    with pytest.raises(ConfError):
        load_conf(BAD_CONFS / name)
    assert _schema_errors(data) != []


def test_every_conf_names_the_schema_for_editors() -> None:
    for path in sorted((REPO / "conf").glob("**/*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "clusters" in data:
            first = path.read_text(encoding="utf-8").splitlines()[0]
            schema = os.path.relpath(SCHEMA_FILE, path.parent)
            assert first == f"# yaml-language-server: $schema={schema}", path


def test_the_conf_and_its_objects_need_no_pydantic() -> None:
    """A stock Spark Connect server's workers have no pydantic, and unpickle the conf's
    objects the admin tasks take."""
    code = """
import pickle, sys
sys.modules["pydantic"] = None
from provisioning.conf import ClusterConf, Credentials, KafkaConf, Secret
import provisioning.kinds.topics.conf, provisioning.kinds.acls.conf, provisioning.kinds.quotas.conf
import provisioning.kinds.reassign.conf
objects = (ClusterConf("c", "h:1"), KafkaConf(), Credentials(Secret("u"), Secret("p")))
assert pickle.loads(pickle.dumps(objects)) == objects
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")


_BASE = {"clusters": {"local": {"bootstrap_servers": "127.0.0.1:9092"}},
         "tables": {"manifests": ["m"], "audit": "a", "runs": "r", "snapshots": "s"}}


@pytest.mark.parametrize(("key", "policy"), [
    ("create", {"name": "partitions_range", "min": 1, "maximum": 8}),
    ("create", {"name": "partitions_range"}),
    ("create", {"name": "partitions_range", "min": 0}),
    ("create", {"name": "replication_factor_range", "max": True}),
    ("create", {"name": "partition_budget", "max_partitions": "10"}),
    ("create", {"name": "owner_partition_quota", "quotas": {"pay": -1}}),
    ("create", {"name": "forbidden_configs", "configs": []}),
    ("create", {"name": "required_configs", "configs": {}}),
    ("create", {"name": "min_insync_below_rf", "strict": True}),
    ("create", {"name": "topic_name_pattern", "by_owner": {"t": 3}}),
    ("create", {"name": "no_such_policy"}),
    ("create", {"name": "custom"}),
    ("alter", {"name": "topic_name_pattern", "default": "x"}),
    ("delete", {"name": "protected_patterns"}),
    ("delete", {"name": "protected_patterns", "pattern": ["x"]}),
    ("acl", {"name": "owner_scope", "exempt_owners": "platform"}),
    ("acl", {"name": "principal_pattern"}),
    ("quota", {"name": "quota_range", "min": 1}),
    ("quota", {"name": "quota_range", "key": "PRODUCER_BYTE_RATE", "max": 5}),
    ("quota", {"name": "quota_range", "key": "request_percentage", "max": 0}),
    ("reassign", {"name": "min_insync"}),
])
def test_the_schema_checks_each_policys_parameters(key: str, policy: dict[str, Any]) -> None:
    data = {**_BASE, "policies": {key: [policy]}}
    with pytest.raises(ConfError):
        parse_conf(data, "t.yaml")
    assert _schema_errors(data) != []


def test_the_schema_accepts_every_policy_with_good_parameters() -> None:
    data = {**_BASE, "policies": {
        "create": [
            {"name": "topic_name_pattern", "default": "[a-z.]+", "by_owner": {"pay": "p.+"}},
            {"name": "partitions_range", "min": 1, "max": 64},
            {"name": "replication_factor_range", "min": 3},
            {"name": "required_configs", "configs": {"retention.ms": "\\d+",
                                                    "cleanup.policy": None}},
            {"name": "forbidden_configs", "configs": ["unclean.leader.election.enable"]},
            {"name": "min_insync_below_rf"},
            {"name": "partition_budget", "max_partitions": 10000},
            {"name": "owner_partition_quota", "quotas": {"pay": 100}, "default": 50},
            {"name": "custom", "callable": "tests.unit.custom_policy_example:refuse_word",
             "word": "tmp"}],
        "alter": [{"name": "partitions_range", "max": 64}],
        "delete": [{"name": "protected_patterns", "patterns": ["audit.*"]}],
        "acl": [{"name": "owner_scope", "exempt_owners": ["platform"]},
                {"name": "principal_pattern", "by_owner": {"pay": "User:pay-.+"}}],
        "quota": [{"name": "quota_range", "key": "producer_byte_rate", "min": 0.5,
                   "max": 1e9}]}}
    parse_conf(data, "t.yaml")
    assert _schema_errors(data) == []


def test_a_transform_checks_its_block_with_the_same_model() -> None:
    from provisioning.conf.policies import require_valid
    from provisioning.errors import PolicyError
    from provisioning.kinds.quotas.conf import QUOTA_POLICY_MODELS
    from provisioning.kinds.topics.conf import CREATE_POLICIES

    require_valid(CREATE_POLICIES, "create", "partitions_range", {"min": 1})
    with pytest.raises(PolicyError) as err:
        require_valid(QUOTA_POLICY_MODELS, "quota", "quota_range",
                      {"key": "x", "min": 5, "max": 2, "step": 1})
    assert str(err.value) == (
        "quota policy quota_range: step: unknown parameter (allowed: key, min, max); "
        "key: 'x' is not a quota key (known: producer_byte_rate, consumer_byte_rate, "
        "request_percentage, controller_mutation_rate, connection_creation_rate); "
        "min: must be <= max (5 > 2)")
