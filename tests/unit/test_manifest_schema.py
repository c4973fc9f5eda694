"""The manifest files' JSON Schema (schemas/manifest.schema.json): made from each kind's row
model, kept current, the models' columns those of the kinds' manifest tables, and as
strict as `load_manifest` on the manifests we have."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from provisioning.conf.manifests import manifest_schema
from provisioning.conf.schema import render
from provisioning.errors import UsageError
from provisioning.kinds.acls.cli import CLI as ACLS
from provisioning.kinds.acls.conf import AclManifestRow
from provisioning.kinds.acls.schema import ACL_MANIFEST
from provisioning.kinds.quotas.cli import CLI as QUOTAS
from provisioning.kinds.quotas.conf import QuotaManifestRow
from provisioning.kinds.quotas.schema import QUOTA_MANIFEST
from provisioning.kinds.topics.cli import load_manifest_file
from provisioning.kinds.topics.conf import TopicManifestRow
from provisioning.kinds.users.conf import UserManifestRow
from provisioning.kinds.users.schema import USER_MANIFEST
from schemas import MANIFEST, column_names
from tests.helpers import SECTIONS

REPO = Path(__file__).resolve().parents[2]
SCHEMA_FILE = REPO / "schemas" / "manifest.schema.json"
BAD_ROWS = REPO / "tests" / "data" / "bad_manifest_rows.yaml"


def load_acl_manifest_file(path: str | Path) -> list[tuple[Any, ...]]:
    return list(ACLS.manifest_rows(Path(path))[0])


def load_quota_manifest_file(path: str | Path) -> list[tuple[Any, ...]]:
    return list(QUOTAS.manifest_rows(Path(path))[0])


LOADERS = {"topics": load_manifest_file, "acls": load_acl_manifest_file,
           "quotas": load_quota_manifest_file}


def _schema_errors(data: Any) -> list[str]:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return sorted(f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
                  for e in cls(schema).iter_errors(data))


def test_the_schema_file_is_what_the_models_make() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render(manifest_schema(SECTIONS)), (
        "schemas/manifest.schema.json is stale: run `make conf-schema` and commit it")


def test_each_row_model_has_the_columns_of_its_manifest_table() -> None:
    def fields(model: type) -> list[str]:
        return list(manifest_schema(SECTIONS)["$defs"][model.__name__]["properties"])

    assert (fields(TopicManifestRow), fields(AclManifestRow), fields(QuotaManifestRow),
            fields(UserManifestRow)) == (
        column_names(MANIFEST), column_names(ACL_MANIFEST), column_names(QUOTA_MANIFEST),
        column_names(USER_MANIFEST))
    assert [k["title"] for k in manifest_schema(SECTIONS)["anyOf"]] == [
        "topics manifest", "acls manifest", "quotas manifest", "users manifest",
        "groups manifest", "offset-resets manifest"]


def test_every_column_is_described() -> None:
    defs = manifest_schema(SECTIONS)["$defs"]
    assert [(model, column) for model, d in defs.items()
            for column, prop in d["properties"].items() if not prop.get("description")] == []


def _good_manifests() -> list[tuple[str, str, str]]:
    """(name, kind, YAML) of the manifests in the repo and those the tests load."""
    found = [(str(p.relative_to(REPO)), "topics", p.read_text(encoding="utf-8"))
             for p in sorted((REPO / "conf").glob("**/*.yaml"))
             if isinstance(yaml.safe_load(p.read_text(encoding="utf-8")), list)]
    rows = yaml.safe_load(BAD_ROWS.read_text(encoding="utf-8"))
    return [*found,
            # The rows the job refuses as data (bad names, bounds, duplicates) are
            # well-shaped rows: load_manifest writes them.
            ("bad_manifest_rows.yaml rows", "topics", yaml.safe_dump([r["row"] for r in rows])),
            ("catalog tables", "topics",
             "- {cluster: local, topic: cat.one, partitions: 2, replication_factor: 1, "
             "configs: {'retention.ms': '60000', cleanup.policy: delete}, owner: cat-team}\n"),
            ("a JSON assignment", "topics", json.dumps(
                [{"cluster": "local", "topic": "t", "replica_assignment": {"0": [1, 2]},
                  "configs": {"retention.ms": 604800000, "compression.type": None},
                  "state": "absent", "force": True}])),
            ("quotas", "quotas", yaml.safe_dump([
                {"cluster": "local", "entity_user": "svc-a",
                 "quotas": {"producer_byte_rate": 3145728}},
                {"cluster": "local", "entity_user": "<default>", "entity_client_id": "app",
                 "quotas": {"request_percentage": 25.0}, "state": "absent"}])),
            ("acls", "acls", yaml.safe_dump([
                {"cluster": "local", "principal": "User:orders", "resource_type": "TOPIC",
                 "resource_name": "orders.", "pattern_type": "PREFIXED",
                 "operations": ["READ", "DESCRIBE"], "owner": "checkout"},
                {"cluster": "local", "principal": "User:audit", "resource_type": "GROUP",
                 "resource_name": "audit", "operations": "READ", "force": False}]))]


@pytest.mark.parametrize(("name", "kind", "text"), _good_manifests(),
                         ids=[n for n, _, _ in _good_manifests()])
def test_the_schema_accepts_every_manifest_load_manifest_accepts(
        name: str, kind: str, text: str, tmp_path: Path) -> None:
    path = tmp_path / ("m.json" if text.startswith("[") else "m.yaml")
    path.write_text(text, encoding="utf-8")
    assert LOADERS[kind](path) != []
    assert _schema_errors(yaml.safe_load(text)) == []


@pytest.mark.parametrize("text", [
    "- {cluster: a, topic: t1, partitions: six}\n",
    "- {cluster: a, topic: t2, partitons: 3}\n",
    "- {cluster: a, topic: t2, force: maybe}\n",
    "- not-a-mapping\n",
    "- {cluster: a, topic: t, configs: [retention.ms]}\n",
    "- {cluster: a, topic: t, replica_assignment: {0: 1}}\n",
    "- {cluster: a, entity_user: u, quotas: {producer_byte_rate: fast}}\n",
    "- {cluster: a, principal: 'User:x', operations: [1, 2]}\n",
    "{cluster: a, topic: t}\n",
])
def test_the_schema_refuses_every_manifest_load_manifest_refuses(
        text: str, tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(text, encoding="utf-8")
    for load in LOADERS.values():
        with pytest.raises(UsageError):
            load(path)
    assert _schema_errors(yaml.safe_load(text)) != []


def test_the_kinds_shape_problems_are_named_by_row_and_column(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "- {cluster: a, entity_user: u, quotas: {producer_byte_rate: x, request_percentage: 5}}\n"
        "- {cluster: a, entity_ip: 10.0.0.1, quotas: 3, force: 1}\n")
    with pytest.raises(UsageError) as err:
        load_quota_manifest_file(path)
    assert str(err.value).splitlines()[1:] == [
        "  - row 0 (entity_user=u).quotas.producer_byte_rate: expected a number, got 'x'",
        "  - row 1 (entity_ip=10.0.0.1).quotas: expected a mapping of quota key -> number",
        "  - row 1 (entity_ip=10.0.0.1).force: expected true or false",
    ]
    path.write_text("- {cluster: a, principal: 'User:x', operations: {READ: 1}, grant: x}\n")
    with pytest.raises(UsageError) as err:
        load_acl_manifest_file(path)
    assert str(err.value).splitlines()[1:] == [
        "  - row 0 ('User:x').grant: unknown column (columns: cluster, force, host, "
        "operations, owner, pattern_type, permission, principal, resource_name, "
        "resource_type, state)",
        "  - row 0 ('User:x').operations: expected a list of operation names",
    ]


def test_the_kinds_rows_are_typed_in_column_order(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("- {cluster: local, entity_client_id: 7, quotas: {request_percentage: 25}}\n")
    assert load_quota_manifest_file(path) == [
        ("local", None, "7", None, {"request_percentage": 25.0}, None, None, None)]
    path.write_text("- {cluster: local, principal: 'User:x', operations: READ, force: true}\n")
    assert load_acl_manifest_file(path) == [
        ("local", "User:x", None, None, None, None, ["READ"], None, None, None, True)]


def test_every_example_manifest_names_the_schema_for_editors() -> None:
    examples = [p for p in sorted((REPO / "conf").glob("**/*.yaml"))
                if isinstance(yaml.safe_load(p.read_text(encoding="utf-8")), list)]
    assert examples
    for path in examples:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        schema = os.path.relpath(SCHEMA_FILE, path.parent)
        assert first == f"# yaml-language-server: $schema={schema}", path
