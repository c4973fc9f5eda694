"""The package's structure, read from the source: the packages and the one-way flow of their
imports at every depth, no import cycle, one folder per kind and the registry that names
them, the shared packages free of any kind. Each rule is a function of `tests.support.
architecture` run on the real package here, and on a tree with a violation planted in it
(`test_a_planted_*`), so that each can be seen to fail."""

from __future__ import annotations

import ast
import importlib
import re

import pytest

from provisioning.cli.kind import CliKind
from provisioning.conf.section import Section
from provisioning.kinds import Kind
from provisioning.registry import KINDS
from provisioning.run.kind import RunKind
from provisioning.views.kind import ViewKind
from tests.support import architecture as arch

TREE = arch.package_tree()
# The package alone: the shared tables (`schemas/`) still spell out the replica moves'
# columns of the topics' plan and audit rows, until that kind is on the entity base.
PACKAGE_TREE = arch.package_tree(arch.PACKAGE)
REGISTERED = tuple(k.name for k in KINDS)
RUN_KINDS = tuple(k.run for k in KINDS)
# The packages that loop over kinds, each with the interface a kind's part of it is.
INTERFACES: dict[str, type] = {"conf": Section, "run": RunKind, "view": ViewKind,
                               "cli": CliKind}
# What names a kind in code and prose, for every registered kind but topics (the product's
# own subject: its name is everywhere the engine speaks of topics, until the topics kind is
# on the base). Case matters: Kafka's THROTTLING_QUOTA_EXCEEDED (KIP-599) is no client
# quota, a SASL mechanism's SCRAM no SCRAM credential.
VOCABULARY = {
    "acls": re.compile(r"\bacls?\b|\bacl_\w*|\w*_acls?\b|\bbindings?\b", re.IGNORECASE),
    "reassign": re.compile(r"reassign|replica moves?\b", re.IGNORECASE),
    "quotas": re.compile(r"\bquotas?\b|\bquota_\w*|\w*_quotas?\b"),
    # As code and the conf spell the kind (`users.`, `"users"`, `--users`, `user_*`), not
    # the word: "other users of the machine".
    "users": re.compile(r"\busers\.\w|\"users\"|--users\b|\buser_(?!metadata)\w*|\w*_users\b"
                        r"|\bSCRAM credentials?\b"),
    # As code and the conf spell the kind, not the consumer groups the topics' usage reads.
    "groups": re.compile(r"\bgroups\.(?:protected|remove|max|batch)\w*|--groups\b"
                         r"|--allow-group-removals"
                         r"|\bgroup_(?:manifests|snapshots|removals)\b|\bprotected_groups\b"
                         r"|\bconsumer_group\b"),
    # As code and the conf spell the kind, not the offsets the topics' usage reads.
    "offsets": re.compile(r"\boffset_resets?\b|--allow-offset-resets|offset-resets\b"
                          r"|\breset-offsets\b|\boffsets\.(?:max|batch)\w*"
                          r"|\boffset resets?\b"),
}
# Words of the conf's API that name no kind: topics' owner_partition_quota policy (a
# partition allowance per owner, its "quotas" parameter and its message) predates
# client quotas and keeps its name for the confs that use it (its model's field too).
API_WORDS = re.compile(r'\w*owner_partition_quota\b|"quotas"|over its quota of'
                       r'|^    quotas: Annotated\[dict\[str, AtLeast0\]')


def planted(**modules: str) -> dict[str, str]:
    """The package's tree with `modules` (dotted name, `__` for `.`) added or replaced."""
    return {**TREE, **{name.replace("__", "."): source for name, source in modules.items()}}


# -- the flow of imports -------------------------------------------------------------------


def test_imports_flow_one_way() -> None:
    assert arch.flow_violations(TREE, REGISTERED) == []


def test_a_planted_import_against_the_flow_fails() -> None:
    tree = planted(provisioning__run__planted="def f():\n"
                                              "    from provisioning.cli.common import Command\n")
    assert arch.flow_violations(tree, REGISTERED) == [
        "provisioning.run.planted:2 (run) imports provisioning.cli.common (cli)"]


def test_a_planted_shared_module_that_imports_a_kind_fails() -> None:
    tree = planted(provisioning__views__planted="from provisioning.kinds.acls.view import VIEW\n")
    assert arch.flow_violations(tree, REGISTERED) == [
        "provisioning.views.planted:1 (views) imports provisioning.kinds.acls.view (views): "
        "the shared packages import no kind"]


def test_a_planted_shared_table_module_that_imports_a_kind_fails() -> None:
    tree = planted(schemas__planted="from provisioning.kinds.acls.schema import ACL_PLAN\n")
    assert arch.flow_violations(tree, REGISTERED) == [
        "schemas.planted:1 (schemas) imports provisioning.kinds.acls.schema (schemas): "
        "the shared packages import no kind"]


def test_a_planted_upward_import_of_the_registry_fails() -> None:
    tree = planted(provisioning__run__planted="def f():\n"
                                              "    from provisioning.registry import KINDS\n")
    assert arch.flow_violations(tree, REGISTERED) == [
        "provisioning.run.planted:2 (run) imports provisioning.registry (registry)"]


def test_a_planted_kind_module_that_reads_what_another_kind_does_not_offer_fails() -> None:
    tree = planted(provisioning__kinds__users__run=TREE["provisioning.kinds.users.run"]
                   + "\nfrom provisioning.kinds.acls.run import RUN\n")
    line = len(TREE["provisioning.kinds.users.run"].splitlines()) + 2
    assert arch.flow_violations(tree, REGISTERED) == [
        f"provisioning.kinds.users.run:{line} (run) imports provisioning.kinds.acls.run "
        "(run): another kind is read only through what it offers"]


def test_a_planted_kind_module_that_reads_a_later_kind_fails() -> None:
    tree = planted(provisioning__kinds__topics__run=TREE["provisioning.kinds.topics.run"]
                   + "\nfrom provisioning.kinds.acls.requests import acl_states\n")
    line = len(TREE["provisioning.kinds.topics.run"].splitlines()) + 2
    assert arch.flow_violations(tree, REGISTERED) == [
        f"provisioning.kinds.topics.run:{line} (run) imports provisioning.kinds.acls.requests "
        "(kafka): a kind reads only the kinds registered before it"]


def test_a_planted_kind_module_of_the_wrong_room_fails() -> None:
    tree = planted(provisioning__kinds__acls__requests=TREE["provisioning.kinds.acls.requests"]
                   + "\nfrom provisioning.kinds.acls.run import RUN\n")
    line = len(TREE["provisioning.kinds.acls.requests"].splitlines()) + 2
    assert arch.flow_violations(tree, REGISTERED) == [
        f"provisioning.kinds.acls.requests:{line} (kafka) imports provisioning.kinds.acls.run "
        "(run)"]


def test_a_planted_kind_module_named_after_no_room_fails() -> None:
    tree = planted(provisioning__kinds__acls__helpers="from provisioning import names\n")
    assert arch.flow_violations(tree, REGISTERED) == [
        "provisioning.kinds.acls.helpers:1 (helpers?) imports provisioning.names (base): a "
        "kind's module is named after its package"]


def test_an_import_for_the_type_checker_only_is_no_import() -> None:
    tree = planted(provisioning__run__planted=(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from provisioning.cli.common import Command\n"))
    assert arch.flow_violations(tree, REGISTERED) == []


def test_third_party_packages_stay_in_their_rooms() -> None:
    assert arch.third_party_violations(TREE) == []


def test_a_planted_import_of_kafka_python_outside_the_kafka_room_fails() -> None:
    tree = planted(provisioning__kinds__acls__run=TREE["provisioning.kinds.acls.run"]
                   + "\ndef f():\n    import kafka.errors\n")
    line = len(TREE["provisioning.kinds.acls.run"].splitlines()) + 3
    assert arch.third_party_violations(tree) == [
        f"provisioning.kinds.acls.run:{line} (run) imports kafka.errors: only the kafka "
        "package may"]


def test_only_the_retry_layer_waits_between_tries() -> None:
    assert arch.waits_outside_the_retry_layer(TREE) == []


def test_a_planted_sleep_or_tenacity_outside_the_retry_layer_fails() -> None:
    tree = planted(provisioning__delta__planted="import time\n\n"
                                                "def f():\n"
                                                "    time.sleep(1)\n",
                   provisioning__kafka__planted="from time import sleep\n"
                                                "import tenacity\n")
    assert sorted(arch.waits_outside_the_retry_layer(tree)) == [
        "provisioning.delta.planted:4 sleeps: waits between tries are the retry layer's "
        "(provisioning.retry)",
        "provisioning.kafka.planted:1 sleeps: waits between tries are the retry layer's "
        "(provisioning.retry)",
        "provisioning.kafka.planted:2 imports tenacity: only provisioning.retry may"]


def test_no_import_cycle() -> None:
    assert arch.cycles(TREE) == []


def test_a_planted_import_cycle_fails() -> None:
    tree = planted(provisioning__conf__planted_a="from provisioning.conf.planted_b import x\n",
                   provisioning__conf__planted_b="def f():\n"
                                                 "    from provisioning.conf.planted_a import y\n")
    assert arch.cycles(tree) == ["provisioning.conf.planted_a <-> provisioning.conf.planted_b"]


def test_no_module_finds_code_by_a_name_string() -> None:
    assert arch.finds_by_name(TREE) == []


def test_a_planted_import_by_name_fails() -> None:
    tree = planted(provisioning__run__planted="import importlib\n\n"
                                              "def f(kind):\n"
                                              "    return importlib.import_module(kind)\n")
    assert arch.finds_by_name(tree) == [
        "provisioning.run.planted:4 finds code by a name string"]


# -- one folder per kind, one registry ------------------------------------------------------


def test_every_kind_folder_is_registered_by_name_and_every_registered_kind_has_one() -> None:
    folders = sorted({m.split(".")[2] for m in TREE if arch.kind_of(m) is not None})
    assert sorted(REGISTERED) == folders
    registry = ast.parse(TREE[arch.REGISTRY])
    imported = sorted(node.module for node in ast.walk(registry)
                      if isinstance(node, ast.ImportFrom) and node.module
                      and node.module.startswith(arch.KINDS + "."))
    assert imported == [f"provisioning.kinds.{k}.kind" for k in folders]
    assert [k.name for k in KINDS] == list(dict.fromkeys(k.name for k in KINDS))


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_a_registered_kind_is_one_object_whose_parts_are_its_own(kind: Kind) -> None:
    module = importlib.import_module(f"provisioning.kinds.{kind.name}.kind")
    assert module.KIND is kind
    for attr, interface in INTERFACES.items():
        part = getattr(kind, attr)
        assert isinstance(part, interface)
        assert type(part).__module__.startswith(f"provisioning.kinds.{kind.name}."), attr


def test_a_kind_whose_parts_name_another_kind_is_refused() -> None:
    acls = next(k for k in KINDS if k.name == "acls")
    quotas = next(k for k in KINDS if k.name == "quotas")
    with pytest.raises(ValueError, match=r"^kind 'acls': view names 'quotas'$"):
        Kind(name="acls", conf=acls.conf, run=acls.run, view=quotas.view, cli=acls.cli)


def test_no_module_of_a_shared_room_is_named_after_a_kind() -> None:
    assert arch.kind_named(TREE, REGISTERED) == []


def test_a_planted_shared_module_named_after_a_kind_fails() -> None:
    tree = planted(provisioning__run__quotas_extra="")
    assert arch.kind_named(tree, REGISTERED) == ["provisioning.run.quotas_extra"]


def test_every_registered_kind_but_topics_has_its_vocabulary() -> None:
    assert sorted(VOCABULARY) == sorted(k for k in REGISTERED if k != "topics")


def test_no_module_names_a_kind_outside_its_folder() -> None:
    """...but the folders of the kinds registered after it, which may read what it
    offers."""
    assert arch.vocabulary_violations(PACKAGE_TREE, VOCABULARY, REGISTERED, API_WORDS) == []


def test_a_planted_line_naming_a_kind_in_a_shared_room_fails() -> None:
    tree = {**PACKAGE_TREE, "provisioning.run.planted": "# the ACL bindings are read here\n"}
    assert arch.vocabulary_violations(tree, VOCABULARY, REGISTERED, API_WORDS) == [
        "provisioning.run.planted:1 names acls: # the ACL bindings are read here"]


@pytest.mark.parametrize("package", sorted(INTERFACES))
def test_every_attribute_a_kind_interface_declares_is_read_by_a_module_that_does_not_set_it(
        package: str) -> None:
    """What an interface declares, every kind must give: an attribute that only the modules
    giving it read is weight each kind carries for nothing."""
    interface = INTERFACES[package]
    declared = [a for cls in interface.__mro__ for a in getattr(cls, "__annotations__", {})]
    assert [a for a in dict.fromkeys(declared) if not arch.read_elsewhere(TREE, a)] == []


def test_a_planted_interface_attribute_that_only_its_setters_read_fails() -> None:
    tree = {"provisioning.kinds.acls.run": "class K:\n    widget = 1\n    def f(self):\n"
                                          "        return self.widget\n",
            "provisioning.run.kind": "class RunKind:\n    widget: int\n"}
    assert not arch.read_elsewhere(tree, "widget")
    tree["provisioning.run.commands"] = "def f(kind):\n    return kind.widget\n"
    assert arch.read_elsewhere(tree, "widget")


# -- the commands' phase lists -------------------------------------------------------------


def test_a_phase_list_that_reads_what_no_earlier_phase_wrote_is_refused() -> None:
    from provisioning.kinds.reassign.phases import ReassignSnapshot
    from provisioning.kinds.topics.changes import Apply
    from provisioning.kinds.topics.phases import Plan, ReadManifests, Snapshot
    from provisioning.run.engine import Run
    from provisioning.run.kind import slices
    from provisioning.run.phases import Preflight

    with pytest.raises(ValueError, match=r"phase apply reads topics\.validated"):
        Run(Preflight(), ReadManifests(), Snapshot(), ReassignSnapshot(), Plan(), Apply(),
            slices=slices(RUN_KINDS))


def test_every_commands_phase_list_is_built_from_the_kinds_and_checked() -> None:
    from provisioning.run.commands import every_phase_list

    lists = every_phase_list(RUN_KINDS)
    assert [[p.name for p in run.phases] for run in lists[:3]] == [
        ["preflight", "manifests", "acl manifests", "quota manifests", "user manifests",
         "group manifests", "offset manifests", "snapshot", "acl snapshot",
         "reassign snapshot", "quota snapshot", "user snapshot", "group snapshot",
         "offset snapshot", "plan", "acl plan", "quota plan", "user plan", "group plan",
         "offset plan", "validate", "acl validate", "reassign validate", "quota validate",
         "user validate", "group validate", "offset validate"],
        ["preflight", "manifests", "acl manifests", "quota manifests", "user manifests",
         "group manifests", "offset manifests", "snapshot", "acl snapshot",
         "reassign snapshot", "quota snapshot", "user snapshot", "group snapshot",
         "offset snapshot", "plan", "acl plan", "quota plan", "user plan", "group plan",
         "offset plan"],
        ["preflight", "manifests", "acl manifests", "quota manifests", "user manifests",
         "group manifests", "offset manifests", "snapshot", "acl snapshot",
         "reassign snapshot", "quota snapshot", "user snapshot", "group snapshot",
         "offset snapshot", "plan", "acl plan", "quota plan", "user plan", "group plan",
         "offset plan", "lock", "validate", "acl validate", "reassign validate",
         "quota validate", "user validate", "group validate", "offset validate", "apply",
         "verify", "acl apply", "acl verify", "reassign", "reassign verify", "quota apply",
         "quota verify", "user apply", "user verify", "group apply", "group verify",
         "offset apply", "offset verify"]]
    assert [p.name for p in lists[3].phases][-9:] == [
        "user manifests", "user snapshot", "user check", "user check bindings",
        "group manifests", "group snapshot", "group check", "group usage", "record findings"]


# -- what the package holds ----------------------------------------------------------------


def test_no_module_is_over_450_lines() -> None:
    assert {m: n for m, s in TREE.items() if (n := len(s.splitlines())) > 450} == {}


def test_the_package_holds_no_dev_tooling() -> None:
    assert sorted(p.name for p in arch.PACKAGE.rglob("*")
                  if p.stem in ("devkafka", "sparkconnect") or p.name == "dev") == []
    # The package never imports it: what ships runs without it.
    assert [(i.module, i.target) for module in TREE for i in arch.imports(TREE, module)
            if i.target.split(".")[0] == "dev"] == []


# What only classic Spark has: the job's path must run on Spark Connect as well.
CLASSIC_ONLY_ATTRIBUTES = {"rdd", "sparkContext", "_jvm", "_jsparkSession", "_jsc", "_jdf",
                           "mapPartitions", "setJobDescription", "setJobGroup",
                           "setLocalProperty", "getLocalProperty"}
CLASSIC_ONLY_IMPORTS = {"py4j", "pyspark.SparkContext", "pyspark.InheritableThread",
                        "pyspark.rdd", "delta.tables", "delta.pip_utils"}


def test_the_package_uses_only_what_spark_connect_also_has() -> None:
    wrong = []
    for module, source in TREE.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Attribute) and node.attr in CLASSIC_ONLY_ATTRIBUTES:
                wrong.append(f"{module}:{node.lineno} uses .{node.attr}")
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) and node.module else [])
            wrong += [f"{module}:{node.lineno} imports {name}" for name in names
                      if any(name == c or name.startswith(c + ".") for c in CLASSIC_ONLY_IMPORTS)]
    assert wrong == []


def test_no_fault_injection_ships_with_the_job() -> None:
    """Faults are injected from tests/support/faults; the package never looks for them."""
    assert [m for m, s in TREE.items() if "PROVISIONING_FAULT" in s] == []
    assert sorted(p.name for p in arch.PACKAGE.rglob("fault*")) == []

