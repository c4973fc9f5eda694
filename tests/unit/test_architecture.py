"""The rooms of the package and the one-way rule of their imports, read from the source."""

from __future__ import annotations

import ast
import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lib" / "provisioning"
ROOMS = ("cli", "run", "transforms", "kafka", "delta", "views", "conf")
# Modules every room may import: the vocabulary, errors, shapes, the session, and conf.
BASE = ("provisioning", "provisioning.errors", "provisioning.names", "provisioning.results",
        "provisioning.session", "provisioning.processes")
# The session package is base (every room uses the session) and the one base module that
# imports Spark.
SESSION = "provisioning.session"
# Which rooms each room may import (besides itself and the base).
ALLOWED = {
    "base": set(),
    "conf": set(),
    "transforms": {"conf"},
    "kafka": {"conf"},
    "delta": {"conf"},
    "run": {"conf", "transforms", "kafka", "delta"},
    "views": {"conf", "transforms", "delta"},
    "cli": {"conf", "run", "transforms", "kafka", "delta", "views"},
}
# Third-party packages only one room may import.
OWNED = {"kafka": "kafka", "delta": "delta", "aws_msk_iam_sasl_signer": "kafka",
         "jinja2": "views", "markupsafe": "views", "tabulate": "views"}
# Rooms that must not import Spark at all (conf loads without it; kafka runs in tasks).
NO_SPARK = {"conf", "kafka", "base"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def room_of(module: str) -> str:
    parts = module.split(".")
    if module in BASE or module.startswith(SESSION + ".") or len(parts) < 2:
        return "base"
    return parts[1] if parts[1] in ROOMS else "base"


def _imports(path: Path, top_level_only: bool = False) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import in the file (or only the top-level ones)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            for alias in node.names:
                # `from a.b import c` imports module a.b.c when there is one, else a name of a.b
                submodule = f"{node.module}.{alias.name}"
                yield (submodule if submodule in MODULES else node.module), node.lineno


def _resolve(target: str) -> str:
    """The package module an import names (`provisioning.x.y` may be a name inside x)."""
    while target not in MODULES and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports(module: str) -> None:
    importlib.import_module(module)


@pytest.mark.parametrize("room", ROOMS)
def test_every_room_says_what_it_owns(room: str) -> None:
    docstring = ast.get_docstring(ast.parse((PACKAGE / room / "__init__.py").read_text()))
    assert docstring and len(docstring) > 40


def test_imports_flow_one_way() -> None:
    wrong = []
    for module, path in MODULES.items():
        room = room_of(module)
        for target, line in _imports(path):
            top = target.split(".")[0]
            where = f"{path.relative_to(PACKAGE.parent)}:{line} ({room}) imports {target}"
            if top == "provisioning":
                other = room_of(_resolve(target))
                if other not in ("base", room) and other not in ALLOWED[room]:
                    wrong.append(where)
            elif top in OWNED and OWNED[top] != room:
                wrong.append(where + f": only the {OWNED[top]} room may")
            elif top == "pyspark" and room in NO_SPARK and not module.startswith(SESSION):
                wrong.append(where + ": this room runs without Spark")
            elif top == "tests":
                wrong.append(where + ": the package never imports test support")
    assert wrong == []


def test_base_modules_import_no_room() -> None:
    wrong = [f"{module} imports {target}"
             for module, path in MODULES.items() if room_of(module) == "base"
             for target, _ in _imports(path)
             if target.startswith("provisioning.") and room_of(_resolve(target)) != "base"
             and room_of(_resolve(target)) != "conf"]
    assert wrong == []


def test_no_import_cycles_between_modules() -> None:
    graph = {module: {_resolve(t) for t, _ in _imports(path, top_level_only=True)
                      if t.startswith("provisioning") and _resolve(t) != module}
             for module, path in MODULES.items()}
    cycles = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*trail[trail.index(nxt):], nxt]))
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    # A package's __init__ importing its own submodules is not a cycle worth a failure.
    real = [c for c in cycles if not all(
        a.startswith(b + ".") or b.startswith(a + ".")
        for a, b in zip(c.split(" -> "), c.split(" -> ")[1:], strict=False))]
    assert real == []


def test_the_package_holds_no_dev_tooling() -> None:
    assert sorted(p.name for p in PACKAGE.rglob("*")
                  if p.stem in ("devkafka", "sparkconnect") or p.name == "dev") == []
    # The package never imports it: what ships runs without it.
    assert [(module, target) for module, path in MODULES.items()
            for target, _ in _imports(path) if target.split(".")[0] == "dev"] == []


def test_policy_catalogue_and_factories_name_the_same_policies() -> None:
    from provisioning.conf.reassign import KIND as REASSIGN_SECTION
    from provisioning.conf.topics import KIND as TOPICS_SECTION
    from provisioning.transforms.policies.registry import POLICIES
    from provisioning.transforms.reassign.policies import REASSIGN_POLICIES

    assert {k: sorted(v) for k, v in TOPICS_SECTION.policy_models.items()} == \
        {k: sorted(v) for k, v in POLICIES.items()}
    assert {k: sorted(v) for k, v in REASSIGN_SECTION.policy_models.items()} == \
        {"reassign": sorted(REASSIGN_POLICIES)}
    from provisioning.conf.quotas import KIND as QUOTAS_SECTION
    from provisioning.transforms.quotas.policies import QUOTA_POLICIES

    assert {k: sorted(v) for k, v in QUOTAS_SECTION.policy_models.items()} == \
        {"quota": sorted(QUOTA_POLICIES)}
    from provisioning.conf.users import KIND as USERS_SECTION
    from provisioning.transforms.users.policies import USER_POLICIES

    assert {k: sorted(v) for k, v in USERS_SECTION.policy_models.items()} == \
        {"user": sorted(USER_POLICIES)}


def test_a_phase_list_that_reads_what_no_earlier_phase_wrote_is_refused() -> None:
    from provisioning.run.engine import Run
    from provisioning.run.kind import slices
    from provisioning.run.phases import Preflight
    from provisioning.run.reassign.phases import ReassignSnapshot
    from provisioning.run.topics.changes import Apply
    from provisioning.run.topics.phases import Plan, ReadManifests, Snapshot

    with pytest.raises(ValueError, match=r"phase apply reads topics\.validated"):
        Run(Preflight(), ReadManifests(), Snapshot(), ReassignSnapshot(), Plan(), Apply(),
            slices=slices())


def test_every_commands_phase_list_is_built_from_the_kinds_and_checked() -> None:
    from provisioning.run.commands import every_phase_list

    lists = every_phase_list()
    assert [[p.name for p in run.phases] for run in lists[:3]] == [
        ["preflight", "manifests", "acl manifests", "quota manifests", "user manifests",
         "snapshot", "acl snapshot", "reassign snapshot", "quota snapshot", "user snapshot",
         "plan", "acl plan", "quota plan", "user plan", "validate", "acl validate",
         "reassign validate", "quota validate", "user validate"],
        ["preflight", "manifests", "acl manifests", "quota manifests", "user manifests",
         "snapshot", "acl snapshot", "reassign snapshot", "quota snapshot", "user snapshot",
         "plan", "acl plan", "quota plan", "user plan"],
        ["preflight", "manifests", "acl manifests", "quota manifests", "user manifests",
         "snapshot", "acl snapshot", "reassign snapshot", "quota snapshot", "user snapshot",
         "plan", "acl plan", "quota plan", "user plan", "lock", "validate", "acl validate",
         "reassign validate", "quota validate", "user validate", "apply", "verify",
         "acl apply", "acl verify", "reassign", "reassign verify", "quota apply",
         "quota verify", "user apply", "user verify"]]
    assert [p.name for p in lists[3].phases][-5:] == [
        "user manifests", "user snapshot", "user check", "user check bindings",
        "record findings"]


# -- kinds behind one seam -----------------------------------------------------------------

# The rooms whose shared modules loop over the registered kinds, and the class each kind's
# part of the room is.
KIND_ROOMS = {"conf": ("provisioning.conf.section", "Section"),
              "run": ("provisioning.run.kind", "RunKind"),
              "views": ("provisioning.views.kind", "ViewKind"),
              "cli": ("provisioning.cli.kind", "CliKind")}
# What names a kind in code and prose, for the kinds other than topics (the product's
# own subject: its name is everywhere, so the modules that loop over kinds are held to
# importing no kind's module instead).
VOCABULARY = {
    "acls": re.compile(r"\bacls?\b|\bacl_\w*|\w*_acls?\b|\bbindings?\b", re.IGNORECASE),
    "reassign": re.compile(r"reassign|replica moves?\b", re.IGNORECASE),
    # Lower case: Kafka's THROTTLING_QUOTA_EXCEEDED (KIP-599) is no client quota.
    "quotas": re.compile(r"\bquotas?\b|\bquota_\w*|\w*_quotas?\b"),
}
# Words of the conf's API that name no kind: topics' owner_partition_quota policy (a
# partition allowance per owner, its "quotas" parameter and its message) predates
# client quotas and keeps its name for the confs that use it (its model's field too).
API_WORDS = re.compile(r'\w*owner_partition_quota\b|"quotas"|over its quota of'
                       r'|^    quotas: Annotated\[dict\[str, AtLeast0\]')
# The modules that loop over kinds: the engine, the re-plan under the lock, the command
# lists, the summary, the saved plan, the output and the report, the conf loader, the
# commands of the CLI, and each room's kind interface.
LOOPS_OVER_KINDS = (
    "provisioning.run.engine", "provisioning.run.state", "provisioning.run.commits",
    "provisioning.run.kind", "provisioning.run.relock", "provisioning.run.commands",
    "provisioning.run.summary", "provisioning.run.options", "provisioning.run.executors",
    "provisioning.views.kind", "provisioning.views.planfile", "provisioning.views.plan_text",
    "provisioning.views.plan_markdown", "provisioning.views.report",
    "provisioning.conf.load", "provisioning.conf.model", "provisioning.conf.section",
    "provisioning.conf.policies", "provisioning.cli.kind", "provisioning.cli.runs",
    "provisioning.cli.importing", "provisioning.cli.report", "provisioning.cli.load_manifest",
    "provisioning.cli.manifest_file", "provisioning.results",
)


def _kind_of(module: str) -> str | None:
    """The kind a module belongs to: a segment of its name is the kind's name, or starts
    with it and an underscore (`kafka.reassign_in_flight`)."""
    from provisioning.kinds import KINDS

    segments = module.split(".")[1:]
    return next((k for k in KINDS for s in segments if s == k or s.startswith(k + "_")),
                None)


def test_every_registered_kind_brings_its_part_of_each_room_that_loops_over_kinds() -> None:
    from provisioning import kinds

    for room, (module, name) in KIND_ROOMS.items():
        expected = getattr(importlib.import_module(module), name)
        parts = kinds.parts(room, expected)
        assert [type(p).__module__ for p in parts] == [
            f"provisioning.{room}.{k}" for k in kinds.KINDS]


def test_every_attribute_a_kind_interface_declares_is_read() -> None:
    """What an interface of the kinds declares, every kind must give: an attribute no module
    reads is weight each kind carries for nothing."""
    code = "\n".join(line for path in MODULES.values()
                     for line in path.read_text(encoding="utf-8").splitlines()
                     if not line.lstrip().startswith(("from ", "import ")))
    unread = [f"{name}.{attr}" for module, name in KIND_ROOMS.values()
              for attr in getattr(importlib.import_module(module), name).__annotations__
              if not re.search(rf"\.{attr}\b(?!\s*\()", code)]
    assert unread == []


def test_outside_a_kinds_own_modules_no_module_names_it() -> None:
    """...but a kind's own modules may name a kind registered before it: a kind's phases
    may read the state of the kinds before it (the registry's order), as a kind that judges
    another's entities does (SCRAM credentials' `acl_without_user` reads ACL bindings)."""
    from provisioning.kinds import KINDS

    wrong = []
    for module, path in MODULES.items():
        if module == "provisioning.kinds":
            continue  # the registry lists them
        owner = _kind_of(module)
        for kind, words in VOCABULARY.items():
            if owner == kind or (owner is not None
                                 and KINDS.index(owner) > KINDS.index(kind)):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if words.search(API_WORDS.sub("", line)):
                    wrong.append(f"{module}:{number} names {kind}: {line.strip()[:80]}")
    assert wrong == []


def test_the_modules_that_loop_over_kinds_import_none_of_them() -> None:
    wrong = [f"{module} imports {target}"
             for module in LOOPS_OVER_KINDS
             for target, _ in _imports(MODULES[module])
             if target.startswith("provisioning.") and _kind_of(_resolve(target)) is not None]
    assert wrong == []


def test_no_module_is_over_450_lines() -> None:
    long = {module: n for module, path in MODULES.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 450}
    assert long == {}


# What only classic Spark has: the job's path must run on Spark Connect as well.
CLASSIC_ONLY_ATTRIBUTES = {"rdd", "sparkContext", "_jvm", "_jsparkSession", "_jsc", "_jdf",
                           "mapPartitions", "setJobDescription", "setJobGroup",
                           "setLocalProperty", "getLocalProperty"}
CLASSIC_ONLY_IMPORTS = {"py4j", "pyspark.SparkContext", "pyspark.InheritableThread",
                        "pyspark.rdd", "delta.tables", "delta.pip_utils"}


def test_the_package_uses_only_what_spark_connect_also_has() -> None:
    wrong = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
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
    assert [m for m, path in MODULES.items()
            if "PROVISIONING_FAULT" in path.read_text(encoding="utf-8")] == []
    assert sorted(p.name for p in PACKAGE.rglob("fault*")) == []


def test_a_kinds_audit_column_comes_from_its_own_schema_module(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit table has a column per kind that brings one (`schemas.<kind>.AUDIT_COLUMN`):
    a new kind adds its own without an edit to the shared schemas."""
    import types

    from pyspark.sql.types import StringType, StructField, StructType

    import schemas

    widgets: Any = types.ModuleType("schemas.widgets")
    widgets.AUDIT_COLUMN = StructField("widget", StructType([StructField("name", StringType())]))
    monkeypatch.setitem(sys.modules, "schemas.widgets", widgets)
    shared = schemas.tables.AUDIT
    assert schemas.with_kind_columns(shared, ("topics", "acls", "widgets", "quotas")) == \
        StructType([*shared.fields, widgets.AUDIT_COLUMN])
    assert schemas.with_kind_columns(shared) == schemas.AUDIT
