"""The docs site's generated reference (docs/gen_ref.py): it lists every command and option,
every conf key of the conf's JSON Schema, every table column and the job's whole vocabulary,
so a new one cannot be left out of the docs."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

REPO = Path(__file__).resolve().parents[2]


def _gen_ref() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_ref", REPO / "docs" / "gen_ref.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_ref"] = module
    spec.loader.exec_module(module)
    return module


gen_ref = _gen_ref()


# -- a small conf model, standing in for the conf's own in these tests -----------------------

class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Cluster(_Frozen):
    """One Kafka cluster."""

    bootstrap_servers: str = Field(description="host:port[,host:port]")
    security_protocol: Literal["PLAINTEXT", "SSL"] = Field(
        "PLAINTEXT", description="How the job talks to the brokers.")


class Deletes(_Frozen):
    """What a run may delete."""

    max_per_cluster: int = Field(10, description="Per-run cap on deletions of one cluster.")
    protected: list[str] = Field(default_factory=list, description="Globs never deleted.")


class Maintenance(_Frozen):
    snapshot_retention_days: int | None = Field(
        None, description="Snapshot rows older than this are deleted (unset: kept).")


class RangePolicy(_Frozen):
    name: Literal["partitions_range"]
    max: int | None = Field(None, description="The most partitions a topic may have.")


class PatternPolicy(_Frozen):
    name: Literal["topic_name_pattern"]
    default: str = Field(description="The regex a topic name must fully match.")


class Conf(_Frozen):
    """The job's conf."""

    clusters: dict[str, Cluster] = Field(description="The clusters, by name.")
    deletes: Deletes = Field(default_factory=Deletes, description="Deletion limits.")
    maintenance: Maintenance | None = Field(None, description="Table maintenance.")
    severity: dict[str, Literal["error", "warning", "info", "off"]] = Field(
        default_factory=dict, description="A check rule's severity.")
    create: list[Annotated[RangePolicy | PatternPolicy, Field(discriminator="name")]] = Field(
        default_factory=list, description="The create policies, in order.")


def stand_in_schema() -> dict[str, Any]:
    """A pydantic v2 JSON Schema shaped as conf/provisioning.schema.json is."""
    return Conf.model_json_schema()


def test_conf_keys_walk_properties_and_defs_into_dotted_keys() -> None:
    keys = list(gen_ref.conf_keys(stand_in_schema()))

    assert keys == [
        ("clusters", "map[string, Cluster]", "required", "The clusters, by name."),
        ("clusters.<name>.bootstrap_servers", "string", "required", "host:port[,host:port]"),
        ("clusters.<name>.security_protocol", '"PLAINTEXT" | "SSL"', '"PLAINTEXT"',
         "How the job talks to the brokers."),
        ("deletes", "Deletes", "", "Deletion limits."),
        ("deletes.max_per_cluster", "integer", "10", "Per-run cap on deletions of one cluster."),
        ("deletes.protected", "list[string]", "", "Globs never deleted."),
        ("maintenance", "Maintenance | null", "null", "Table maintenance."),
        ("maintenance.snapshot_retention_days", "integer | null", "null",
         "Snapshot rows older than this are deleted (unset: kept)."),
        ("severity", 'map[string, "error" | "warning" | "info" | "off"]', "",
         "A check rule's severity."),
        ("create", "list[RangePolicy | PatternPolicy]", "", "The create policies, in order."),
        ("create[name=partitions_range].name", '"partitions_range"', "required", ""),
        ("create[name=partitions_range].max", "integer | null", "null",
         "The most partitions a topic may have."),
        ("create[name=topic_name_pattern].name", '"topic_name_pattern"', "required", ""),
        ("create[name=topic_name_pattern].default", "string", "required",
         "The regex a topic name must fully match."),
    ]


def test_a_nested_model_without_its_own_description_takes_its_models() -> None:
    schema = stand_in_schema()
    del schema["properties"]["deletes"]["description"]

    keys = {key: description for key, _, _, description in gen_ref.conf_keys(schema)}

    assert keys["deletes"] == "What a run may delete."


def _property_names(node: Any) -> set[str]:
    """Every property name anywhere in a JSON Schema (properties and $defs, any depth)."""
    if isinstance(node, dict):
        own = set(node.get("properties", {}))
        return own.union(*(_property_names(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_property_names(v) for v in node))
    return set()


def _conf_page_keys(page: str) -> set[str]:
    return {re.sub(r"\[.*?\]", "", part)
            for key in re.findall(r"^\| `([^`]+)` \|", page, re.M) for part in key.split(".")}


def test_the_conf_page_names_every_key_of_a_schema() -> None:
    schema = stand_in_schema()

    page = gen_ref.conf_reference(schema)

    assert _property_names(schema) <= _conf_page_keys(page)


def test_the_conf_page_names_every_key_of_the_conf_schema() -> None:
    if not gen_ref.CONF_SCHEMA.is_file():
        # Until the conf's JSON Schema is in the tree, the build refuses to go without it.
        with pytest.raises(gen_ref.MissingConfSchema,
                           match=r"provisioning\.schema\.json is missing"):
            gen_ref.load_conf_schema()
        return
    schema = gen_ref.load_conf_schema()

    page = gen_ref.conf_reference(schema)

    assert _property_names(schema) <= _conf_page_keys(page)


# -- commands, tables, vocabulary -------------------------------------------------------------

def test_the_commands_page_lists_every_command_and_option() -> None:
    page = gen_ref.cli_reference()
    sections = dict(re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", page, re.M | re.S))

    options = gen_ref.cli_options()

    assert set(options) == set(sections)
    assert {"provision-topics apply", "provision-topics report", "load_manifest"} <= set(options)
    missing = {(command, option) for command, names in options.items() for option in names
               if f"`{option}`" not in sections[command]}
    assert missing == set()


def test_the_tables_page_lists_every_column_of_every_schema() -> None:
    from pyspark.sql.types import StructType

    from provisioning.registry import AUDIT

    page = gen_ref.tables_reference()
    sections = dict(re.findall(r"^### (\w+)\n(.*?)(?=^##|\Z)", page, re.M | re.S))

    # Every table of `schemas/` and of each kind's `schema.py`; the audit as the job writes
    # it (with each kind's own column).
    structs = {name: value for module in gen_ref.SCHEMA_MODULES
               for name, value in vars(importlib.import_module(module)).items()
               if isinstance(value, StructType) and not name.startswith("_")}
    structs["AUDIT"] = AUDIT
    assert {"AUDIT", "TOPIC_RESULT", "ACL_PLAN", "QUOTA_PLAN", "OFFSET_PLAN"} <= set(structs)
    assert set(structs) <= set(sections)
    missing = {(name, field.name) for name, struct in structs.items() for field in struct.fields
               if not re.search(rf"^\| `{field.name}` \|", sections[name], re.M)}
    assert missing == set()


def test_every_column_has_a_meaning() -> None:
    blank = {(table, column) for _, table, _, columns in gen_ref.schema_tables()
             for column, _, meaning in columns if not meaning}

    assert blank == set()


def test_every_outcome_of_every_kind_has_a_meaning() -> None:
    outcomes = {o for _, _, kind_outcomes in gen_ref.kinds_vocabulary() for o in kind_outcomes}

    assert outcomes - set(gen_ref.OUTCOME_MEANINGS) == set()


def test_the_vocabulary_page_lists_every_exit_code_policy_and_check_rule() -> None:
    from provisioning import errors, names
    from provisioning.kinds.topics.policies import registry

    page = gen_ref.vocabulary_reference()

    codes = {cls.exit_code for cls in vars(errors).values()
             if isinstance(cls, type) and issubclass(cls, errors.ProvisioningError)}
    assert {0, *codes} <= {int(c) for c in re.findall(r"^\| (\d) \|", page, re.M)}
    policies = {(action, name) for action, table in registry.POLICIES.items() for name in table}
    policies |= {(action, name) for action, table in registry.ALWAYS_ON.items()
                 for name, _ in table}
    assert {(a, n) for a, n in policies if f"| {a} | `{n}` |" not in page} == set()
    assert [r for r in (*names.CHECK_RULES, "unmanaged_quota") if f"| `{r}` |" not in page] == []
    assert [p for p in names.PHASES if f"`{p}`" not in page] == []


def test_policies_and_exit_codes_carry_their_meaning_from_the_code() -> None:
    page = gen_ref.vocabulary_reference()

    assert ("| 3 | `ClusterUnreachable`: A cluster could not be reached or refused our "
            "credentials; nothing was changed.") in page
    assert ("| delete | `topic_in_use` | yes | A topic with committed consumer-group offsets, "
            "or with a record written since `context.in_use_since`, is in use; `force` "
            "overrides. |") in page
    assert not re.search(r"\| `\w+` \| (yes|no) \|  \|", page)



def test_the_types_of_the_tables_page_are_not_read_as_html() -> None:
    page = gen_ref.tables_reference()
    manifest = dict(re.findall(r"^### (\w+)\n(.*?)(?=^##|\Z)", page, re.M | re.S))["MANIFEST"]

    assert "| `replica_assignment` | map&lt;int, array&lt;int&gt;&gt; |" in manifest
    assert "<" not in manifest
