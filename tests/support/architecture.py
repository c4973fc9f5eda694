"""The package's structure read from its source, and the rules it keeps, as functions over a
tree of modules (`Tree`: module name -> source), so that each rule can be run on the real
package and on a tree with a violation planted in it (tests/unit/test_architecture.py).

Imports are read at every depth (inside functions too), but not inside `if TYPE_CHECKING:`,
which Python never runs: a name there is for the type checker, which reads it as a type.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "lib" / "provisioning"
# The shared tables, outside the package: of the tables' room, as a kind's `schema` module.
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"

# The packages of the package; each kind's folder holds modules of several of them.
ROOMS = ("cli", "run", "transforms", "kafka", "delta", "views", "conf")
# Modules every package may import: the vocabulary, errors, shapes, the session, processes and
# the type of a registered kind.
BASE = ("provisioning", "provisioning.errors", "provisioning.names", "provisioning.results",
        "provisioning.processes", "provisioning.kinds")
SESSION = "provisioning.session"
REGISTRY = "provisioning.registry"
KINDS = "provisioning.kinds"
# A kind's tables (its `schema` module): beside the base, as the shared `schemas/` is outside
# the package; every package may import them, and they import only the base.
TABLES = "schemas"
# Which packages each package may import (besides itself, the base and a kind's tables); the
# registry only from the command line, which sits above it.
ALLOWED = {
    "base": {"conf"},
    TABLES: set(),
    "conf": set(),
    "transforms": {"conf"},
    "kafka": {"conf"},
    "delta": {"conf"},
    "run": {"conf", "transforms", "kafka", "delta"},
    "views": {"conf", "transforms", "delta"},
    "cli": {"conf", "run", "transforms", "kafka", "delta", "views", "registry"},
    "registry": {"kind"},
    "kind": {"conf", "run", "views", "cli"},
}
# A module of a kind's folder is of the package its name says.
KIND_MODULE_ROOMS = {
    "names": "base", "results": "base",
    "schema": TABLES,
    "conf": "conf",
    "model": "transforms", "validation": "transforms", "plan": "transforms",
    "policies": "transforms", "placement": "transforms", "rules": "transforms",
    "requests": "kafka", "tasks": "kafka", "entities": "kafka", "in_flight": "kafka",
    "run": "run", "phases": "run", "layer": "run", "state": "run", "executors": "run",
    "planning": "run", "relock": "run", "changes": "run", "adopt": "run", "check": "run",
    "summary": "run",
    "view": "views", "text": "views", "markdown": "views", "section": "views",
    "report": "views", "inventory": "views", "site": "views",
    "cli": "cli",
    "kind": "kind",
}
# A kind's package declares, as `OFFERS`, the modules of its folder that the kinds
# registered after it may import (SCRAM credentials' `acl_without_user` reads ACL bindings
# through the ACL kind's reader of them).
OFFERS = "OFFERS"
# Third-party packages only one package may import.
OWNED = {"kafka": "kafka", "delta": "delta", "aws_msk_iam_sasl_signer": "kafka",
         "jinja2": "views", "markupsafe": "views", "tabulate": "views"}
# Rooms that must not import Spark at all (conf loads without it; kafka runs in tasks).
NO_SPARK = {"conf", "kafka", "base"}
# The modules that find code by a string, each with why that string is not the package's
# own graph: custom policies the operator's conf names (`package.module:function`), the
# executors' probe of what their Python can import, and the packages zipped for Spark
# Connect found without importing them.
FINDS_BY_NAME = {"provisioning.conf.policies", "provisioning.run.executors",
                 "provisioning.session.connect"}

# The one retry layer: the only module that imports tenacity or sleeps between two tries.
RETRY_LAYER = "provisioning.retry"

Tree = Mapping[str, str]


def package_tree(*roots: Path) -> dict[str, str]:
    """Every module of the package and of the shared tables (or of `roots`), by dotted
    name, with its source."""
    found = {}
    for root in roots or (PACKAGE, SCHEMAS):
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path.read_text(encoding="utf-8")
    return found


def kind_of(module: str) -> str | None:
    """The kind whose folder holds `module` (`provisioning.kinds.<kind>...`)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "kinds" else None


def room_of(module: str) -> str:
    """The package of a module: a kind's module the package its name says (`ROOM?` when it says
    none), the registry, or the package its path names; the rest is the base."""
    parts = module.split(".")
    if parts[0] == TABLES:
        return TABLES
    if module == REGISTRY:
        return "registry"
    if kind_of(module) is not None:
        if len(parts) == 3:
            return "base"  # the kind's package: its docstring
        return KIND_MODULE_ROOMS.get(parts[3], f"{parts[3]}?")
    if module in BASE or module.startswith(SESSION + ".") or module == SESSION \
            or len(parts) < 2:
        return "base"
    return parts[1] if parts[1] in ROOMS else "base"


@functools.cache
def parsed(source: str) -> ast.Module:
    """A module's syntax tree, parsed once per source (the rules read each many times;
    none changes it)."""
    return ast.parse(source)


@functools.cache
def _imports_of(module: str, source: str, names: frozenset[str]) -> tuple[Import, ...]:
    found: list[Import] = []
    for node in _nodes(parsed(source)):
        if isinstance(node, ast.Import):
            found += [Import(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                raise ValueError(f"{module}:{node.lineno}: relative import")
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.append(Import(module, submodule if submodule in names else node.module,
                                    node.lineno))
    return tuple(dict.fromkeys(found))


@functools.cache
def _attributes(source: str) -> tuple[frozenset[str], frozenset[str]]:
    """The attribute names a module reads (`x.attr` loaded), and those it gives a value
    (`x.attr` stored, or a name assigned in a class body)."""
    read, given = set(), set()
    for node in ast.walk(parsed(source)):
        if isinstance(node, ast.Attribute):
            (read if isinstance(node.ctx, ast.Load) else given).add(node.attr)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                targets = (item.targets if isinstance(item, ast.Assign) else
                           [item.target] if isinstance(item, ast.AnnAssign)
                           and item.value is not None else [])
                for target in targets:
                    names = target.elts if isinstance(target, ast.Tuple) else [target]
                    given.update(n.id for n in names if isinstance(n, ast.Name))
    return frozenset(read), frozenset(given)


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, but those under `if TYPE_CHECKING:`."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and _type_checking(child):
            yield from (n for other in child.orelse for n in (other, *_nodes(other)))
            continue
        yield child
        yield from _nodes(child)


@dataclass(frozen=True)
class Import:
    module: str
    target: str
    line: int


def imports(tree: Tree, module: str) -> list[Import]:
    """What `module` imports, at every depth: a module of the tree where the import names
    one (`from a.b import c` names a.b.c when the tree has it), else the name as written;
    once per line."""
    return list(_imports_of(module, tree[module], _names(tree)))


def _names(tree: Tree) -> frozenset[str]:
    return frozenset(tree)


def offers(tree: Tree, kind: str) -> tuple[str, ...]:
    """The modules (`state`, `policies.alter`) of `kind`'s folder its package declares it
    offers the kinds registered after it (`OFFERS`)."""
    package = parsed(tree.get(f"{KINDS}.{kind}", ""))
    for node in package.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == OFFERS for target in node.targets):
            value = ast.literal_eval(node.value)
            return tuple(value)
    return ()


def resolve(tree: Tree, target: str) -> str:
    """The module of the tree an import names (`a.b.c` may be a name inside a.b)."""
    while target not in tree and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def _own(tree: Tree) -> Iterator[tuple[Import, str]]:
    """Every import of a module of the package by a module of the package, resolved."""
    for module in tree:
        for imp in imports(tree, module):
            if imp.target.split(".")[0] == "provisioning":
                yield imp, resolve(tree, imp.target)


def flow_violations(tree: Tree, registered: Sequence[str]) -> list[str]:
    """Imports against the one-way flow of the packages. The shared packages import no kind; the
    registry imports each kind's registration (`kind`); a kind's module imports another
    kind's only through its `offers`, and only of a kind registered before it
    (`registered`: the registry's order)."""
    wrong = []
    for imp, target in _own(tree):
        package, other = room_of(imp.module), room_of(target)
        where = f"{imp.module}:{imp.line} ({package}) imports {target} ({other})"
        mine, theirs = kind_of(imp.module), kind_of(target)
        leaf = ".".join(target.split(".")[3:]) if theirs is not None else None
        if package.endswith("?"):
            wrong.append(f"{where}: a kind's module is named after its package")
        elif package == "registry":
            if leaf != "kind" and target != KINDS:
                wrong.append(f"{where}: the registry imports each kind's registration")
        elif theirs is not None and mine is None:
            wrong.append(f"{where}: the shared packages import no kind")
        elif theirs is not None and theirs != mine and leaf not in offers(tree, theirs):
            wrong.append(f"{where}: another kind is read only through what it offers")
        elif theirs is not None and theirs != mine and (
                theirs not in registered or mine not in registered
                or registered.index(theirs) > registered.index(mine)):
            wrong.append(f"{where}: a kind reads only the kinds registered before it")
        elif other == "kind" and package != "kind":
            wrong.append(f"{where}: a kind's registration is the registry's to import")
        elif other not in ("base", TABLES, package) and other not in ALLOWED.get(package, set()):
            wrong.append(where)
    return wrong


def third_party_violations(tree: Tree) -> list[str]:
    """Third-party packages imported outside the package that owns them; Spark where a package
    runs without it; the tests' support from the package."""
    wrong = []
    for module in tree:
        package = room_of(module)
        for imp in imports(tree, module):
            top = imp.target.split(".")[0]
            where = f"{module}:{imp.line} ({package}) imports {imp.target}"
            if top in OWNED and OWNED[top] != package:
                wrong.append(f"{where}: only the {OWNED[top]} package may")
            elif top == "pyspark" and package in NO_SPARK and not module.startswith(SESSION):
                wrong.append(f"{where}: this package runs without Spark")
            elif top == "tests":
                wrong.append(f"{where}: the package never imports test support")
    return wrong


def cycles(tree: Tree) -> list[str]:
    """Every loop of imports between modules (a package importing its own submodules is
    no loop: Python imports the package first)."""
    graph: dict[str, set[str]] = {m: set() for m in tree}
    for imp, target in _own(tree):
        if target != imp.module and target in tree and not target.startswith(imp.module + "."):
            graph[imp.module].add(target)
    found: list[str] = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(" <-> ".join(sorted(component)))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def finds_by_name(tree: Tree) -> list[str]:
    """Modules that import code named by a string (importlib, `__import__`) and are not
    among the known ones (`FINDS_BY_NAME`)."""
    wrong = []
    for module, source in tree.items():
        if module in FINDS_BY_NAME:
            continue
        for node in _nodes(parsed(source)):
            named = (isinstance(node, ast.Attribute) and node.attr in ("import_module",
                                                                        "find_spec")) or (
                isinstance(node, ast.Name) and node.id == "__import__")
            if named:
                wrong.append(f"{module}:{node.lineno} finds code by a name string")
    return wrong


def waits_outside_the_retry_layer(tree: Tree) -> list[str]:
    """Modules but the retry layer that sleep (`time.sleep`, or `sleep` imported from time)
    or import tenacity: every wait between two tries is one of its named policies."""
    wrong = []
    for module, source in tree.items():
        if module == RETRY_LAYER:
            continue
        for node in _nodes(parsed(source)):
            sleeps = (isinstance(node, ast.Attribute) and node.attr == "sleep"
                      and isinstance(node.value, ast.Name) and node.value.id == "time") or (
                isinstance(node, ast.ImportFrom) and node.module == "time"
                and any(alias.name == "sleep" for alias in node.names))
            if sleeps:
                wrong.append(f"{module}:{node.lineno} sleeps: waits between tries are the "
                             f"retry layer's ({RETRY_LAYER})")
        wrong += [f"{module}:{imp.line} imports {imp.target}: only {RETRY_LAYER} may"
                  for imp in imports(tree, module) if imp.target.split(".")[0] == "tenacity"]
    return wrong


def kind_named(tree: Tree, names: Sequence[str]) -> list[str]:
    """Modules outside the kinds' folders named after a kind (a segment of the module's
    name is the kind's, or starts with it and an underscore)."""
    return sorted(m for m in tree if kind_of(m) is None and m != KINDS
                  and any(s == k or s.startswith(k + "_") for s in m.split(".")[1:]
                          for k in names))


def vocabulary_violations(tree: Tree, words: Mapping[str, re.Pattern[str]],
                          registered: Sequence[str],
                          allowed: re.Pattern[str] | None = None) -> list[str]:
    """Lines of modules outside a kind's folder that name that kind (`words`: kind -> its
    vocabulary), but in the registry and in the folders of the kinds registered after it
    (which may read what it offers); `allowed` removes words of the conf's API first."""
    wrong = []
    for module, source in tree.items():
        if module == REGISTRY:
            continue
        owner = kind_of(module)
        for kind, pattern in words.items():
            if owner == kind or (owner in registered and kind in registered
                                 and registered.index(owner) > registered.index(kind)):
                continue
            for number, line in enumerate(source.splitlines(), 1):
                text = allowed.sub("", line) if allowed is not None else line
                if pattern.search(text):
                    wrong.append(f"{module}:{number} names {kind}: {line.strip()[:80]}")
    return wrong


def read_elsewhere(tree: Tree, attr: str) -> bool:
    """Whether some module reads `<something>.attr` and is not one of the kinds' modules that
    give it a value (an assignment to it, in a class body or to an attribute): what a kind
    interface declares must be read beyond the kinds that give it."""
    readers, setters = set(), set()
    for module, source in tree.items():
        read, given = _attributes(source)
        if attr in read:
            readers.add(module)
        if attr in given:
            setters.add(module)
    return bool(readers - {m for m in setters if kind_of(m) is not None})
