"""The reference pages of the docs site, generated from the code when the site is built.

`docs/hooks.py` (a MkDocs hook) adds each page of `PAGES` to the site on every build, so
the reference cannot drift from the code: the commands and options from the click
commands, the conf keys from the conf's JSON Schema, the tables and columns from
`schemas/` and each kind's `schema.py`, and the job's vocabulary (exit codes, actions,
outcomes, policies, `check` rules) from `provisioning.names`, the policy registry and
`provisioning.errors`.

    python docs/gen_ref.py OUT_DIR     # writes the pages as files, to read them without MkDocs
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import click
import yaml

ROOT = Path(__file__).resolve().parents[1]
# The conf's JSON Schema (pydantic's, made from the conf model). The build fails without it.
CONF_SCHEMA = ROOT / "conf" / "provisioning.schema.json"
# What a column means where its schema has no comment for it.
COLUMN_MEANINGS = Path(__file__).resolve().parent / "columns.yaml"


class MissingConfSchema(RuntimeError):
    """The conf's JSON Schema, which the conf reference is made from, is not there."""


def _cell(text: object) -> str:
    """`text` fit for one cell of a Markdown table: one line, pipes escaped, and angle
    brackets outside code spans escaped (`map<int, ...>` is not an HTML tag)."""
    parts = " ".join(str(text).split()).replace("|", "\\|").split("`")
    return "`".join(part.replace("<", "&lt;").replace(">", "&gt;") if index % 2 == 0 else part
                    for index, part in enumerate(parts))


def _first_paragraph(doc: str | None) -> str:
    return inspect.cleandoc(doc or "").split("\n\n", 1)[0].replace("\n", " ").strip()


# -- commands and options ------------------------------------------------------------------

def cli_commands() -> list[tuple[str, click.Command]]:
    """Every command a user runs, as `prog subcommand` -> its click command, in the order
    `--help` lists them."""
    from provisioning.cli import load_manifest, main

    commands: list[tuple[str, click.Command]] = [("provision-topics", main)]
    ctx = click.Context(main, info_name="provision-topics")
    commands += [(f"provision-topics {name}", main.commands[name])
                 for name in main.list_commands(ctx)]
    commands.append(("load_manifest", load_manifest.main))
    return commands


def _default(param: click.Parameter, ctx: click.Context) -> str:
    value = param.get_default(ctx, call=False)
    if value is None or callable(value) or repr(value).startswith("Sentinel."):
        return ""
    if isinstance(param, click.Option) and param.is_flag:
        return "on" if value and param.flag_value is True else ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) if value else ""
    return str(value)


def _type(param: click.Parameter) -> str:
    if isinstance(param, click.Option) and param.is_flag:
        return "flag"
    if isinstance(param.type, click.Choice):
        return " \\| ".join(f"`{c}`" for c in param.type.choices)
    name = param.type.name.upper()
    return f"{name}, repeatable" if getattr(param, "multiple", False) else name


def cli_reference() -> str:
    """The page of every command, with its usage, purpose and every option."""
    lines = ["# Commands and options", "",
             "Every command of `jobs/provision_topics.py` (the wheel's `provision-topics`) "
             "and of `jobs/load_manifest.py`, with every option, as `--help` shows them. "
             "Run them with `./spark-submit.sh jobs/provision_topics.py COMMAND ...`, or "
             "`provision-topics COMMAND ...` from the wheel.", ""]
    for title, command in cli_commands():
        parent = None
        if " " in title:
            parent = click.Context(cli_commands()[0][1], info_name="provision-topics")
        ctx = click.Context(command, info_name=title.split()[-1], parent=parent)
        lines += [f"## {title}", "", "```", command.get_usage(ctx), "```", ""]
        lines += [inspect.cleandoc(command.help or ""), ""]
        params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
        if not params:
            continue
        lines += ["| option | type | default | meaning |", "|---|---|---|---|"]
        for param in params:
            names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
            meaning = getattr(param, "help", None) or ""
            if param.required:
                meaning = f"required. {meaning}"
            lines.append(f"| {names} | {_type(param)} | {_cell(_default(param, ctx))} | "
                         f"{_cell(meaning)} |")
        lines.append("")
    return "\n".join(lines)


def cli_options() -> dict[str, list[str]]:
    """Every command's option names (`--conf`, ...), for the tests."""
    out: dict[str, list[str]] = {}
    for title, command in cli_commands():
        ctx = click.Context(command, info_name=title.split()[-1])
        out[title] = [o for p in command.get_params(ctx) if not getattr(p, "hidden", False)
                      for o in [*p.opts, *p.secondary_opts]]
    return out


# -- conf keys (from the conf's JSON Schema) -------------------------------------------------

def _resolve(schema: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if ref is None and len(node.get("allOf", ())) == 1:
        ref = node["allOf"][0].get("$ref")
    if ref is None:
        return node
    target: Any = schema
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    return _resolve(schema, target)


def _type_name(schema: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    if "$ref" in node or len(node.get("allOf", ())) == 1:
        target = _resolve(schema, node)
        return str(target.get("title", "object"))
    if "const" in node:
        return json.dumps(node["const"])
    if "enum" in node:
        return " | ".join(json.dumps(v) for v in node["enum"])
    for union in ("anyOf", "oneOf"):
        if union in node:
            return " | ".join(_type_name(schema, n) for n in node[union])
    kind = node.get("type")
    if isinstance(kind, list):
        return " | ".join(kind)
    if kind == "array":
        items = node.get("items")
        return f"list[{_type_name(schema, items)}]" if items else "list"
    extra = _map_values(node)
    if kind == "object" and extra is not None:
        return f"map[string, {_type_name(schema, extra)}]"
    return str(kind or "any")


def _map_values(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The schema of a map's values (`additionalProperties`, or the one pattern of
    `patternProperties`: the keys' form is the pattern's), or None."""
    if isinstance(node.get("additionalProperties"), Mapping):
        return node["additionalProperties"]  # type: ignore[no-any-return]
    patterns = node.get("patternProperties")
    if isinstance(patterns, Mapping) and len(patterns) == 1:
        return next(iter(patterns.values()))  # type: ignore[no-any-return]
    return None


def _label(model: Mapping[str, Any]) -> str:
    """How a key names one model of several that may stand at one place: by the property
    that tells them apart (`name=partitions_range`), else by the model's title."""
    for name, node in model.get("properties", {}).items():
        values = [node["const"]] if "const" in node else node.get("enum", [])
        if len(values) == 1:
            return f"{name}={values[0]}"
    return str(model.get("title", "?"))


def _models(schema: Mapping[str, Any], node: Mapping[str, Any]) -> list[tuple[str, Mapping]]:
    """The models whose keys sit under `node`, each with the path segment it adds: `""` for
    a model (or an optional one), `.<name>` for a map of models, `[]` for a list of them,
    and `[name=value]` for one of several models that may stand there."""
    target = _resolve(schema, node)
    options = [_resolve(schema, o) for o in target.get("anyOf") or target.get("oneOf") or [target]]
    options = [o for o in options if o.get("type") != "null"]
    found: list[tuple[str, Mapping[str, Any]]] = []
    for option in options:
        extra, items = _map_values(option), option.get("items")
        if "properties" in option:
            found.append((f"[{_label(option)}]" if len(options) > 1 else "", option))
        elif option.get("type") == "object" and isinstance(extra, Mapping):
            found += [(f".<name>{segment}", model) for segment, model in _models(schema, extra)]
        elif option.get("type") == "array" and isinstance(items, Mapping):
            found += [(segment if segment.startswith("[") else f"[]{segment}", model)
                      for segment, model in _models(schema, items)]
        elif "anyOf" in option or "oneOf" in option:
            found += _models(schema, option)
    return found


def conf_keys(schema: Mapping[str, Any]) -> Iterator[tuple[str, str, str, str]]:
    """Every key of the conf as (dotted key, type, default, description), walking the
    schema's properties and its `$defs` depth first. A key whose value is a model (or a map
    or list of models, `clusters.<name>`, `policies.create[]`) is listed, then the model's
    own keys under it."""

    def walk(model: Mapping[str, Any], prefix: str, seen: tuple[str, ...]) -> Iterator:
        required = set(model.get("required", ()))
        for name, node in model.get("properties", {}).items():
            key = f"{prefix}{name}"
            target = _resolve(schema, node)
            description = node.get("description") or target.get("description", "")
            nested = _models(schema, node)
            if "default" in node and not (nested and isinstance(node["default"], dict)):
                # A section's default is shown key by key, under it.
                default = json.dumps(node["default"])
            elif name in required:
                default = "required"
            else:
                default = ""
            yield key, _type_name(schema, node), default, _first_paragraph(description)
            for segment, inner in nested:
                title = str(inner.get("title", ""))
                if title not in seen:  # a model that holds itself would never end
                    yield from walk(inner, f"{key}{segment}.", (*seen, title))

    yield from walk(schema, "", (str(schema.get("title", "")),))


def load_conf_schema(path: Path = CONF_SCHEMA) -> dict[str, Any]:
    if not path.is_file():
        raise MissingConfSchema(
            f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} is missing: the "
            "conf reference is generated from the conf's JSON Schema (made from the conf "
            "model); the docs site is not built without it")
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def conf_reference(schema: Mapping[str, Any]) -> str:
    """The page of every conf key, from the conf's JSON Schema."""
    lines = ["# Conf keys", "",
             "One YAML file per environment (`conf/local.yaml` is the embedded default). "
             "Unknown keys are errors, and every problem is reported at once, naming its "
             "key. `<name>` stands for a name of your choosing (a cluster's). This page is "
             "made from `conf/provisioning.schema.json`.", ""]
    if schema.get("description"):
        lines += [_first_paragraph(schema["description"]), ""]
    lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key, kind, default, description in conf_keys(schema):
        lines.append(f"| `{key}` | {_cell(kind)} | {_cell(default)} | {_cell(description)} |")
    return "\n".join(lines) + "\n"


# -- tables and columns (from schemas/ and each kind's schema.py) ----------------------------

SCHEMA_MODULES = ("schemas.tables", "provisioning.kinds.acls.schema",
                  "provisioning.kinds.quotas.schema", "provisioning.kinds.users.schema",
                  "provisioning.kinds.groups.schema", "provisioning.kinds.offsets.schema",
                  "schemas.check", "schemas.usage")
_COLUMN = re.compile(r"""^\s*(?:\(|StructField\()\s*"(\w+)",""")


def _comments(source: str) -> tuple[dict[str, tuple[int, int, str]], dict[int, str]]:
    """The module's top-level assignments (name -> first line, last line, the comment above
    it) and, per source line that names a column, the comment block just above that line."""
    lines = source.splitlines()

    def above(index: int) -> str:
        block: list[str] = []
        while index > 0 and lines[index - 1].strip().startswith("#"):
            index -= 1
            block.insert(0, lines[index].strip().lstrip("#").strip())
        return " ".join(block)

    assignments = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            end = node.end_lineno or node.lineno
            assignments[node.targets[0].id] = (node.lineno, end, above(node.lineno - 1))
    columns = {number: above(number - 1) for number, line in enumerate(lines, 1)
               if _COLUMN.match(line)}
    return assignments, columns


def schema_tables() -> list[tuple[str, str, str, list[tuple[str, str, str]]]]:
    """Every StructType of `schemas/` and of the kinds' `schema.py` as (module, name,
    description, [(column, type, meaning)]), in the order the modules define them. A
    column's meaning is the comment above its line; a column a schema takes from another
    definition of its module (`*X.fields`, `*_COLUMNS`) has the comment it has there."""
    from pyspark.sql.types import StructType

    from provisioning.registry import AUDIT

    found: list[tuple[str, str, str, StructType]] = []
    sources: dict[str, tuple[dict[str, tuple[int, int, str]], dict[int, str], list[str]]] = {}
    for name in SCHEMA_MODULES:
        module = importlib.import_module(name)
        source = inspect.getsource(module)
        assignments, columns = _comments(source)
        sources[name] = (assignments, columns, source.splitlines())
        # The audit table as the job writes it: with each registered kind's own column.
        found += [(name, const, comment, AUDIT
                   if (name, const) == ("schemas.tables", "AUDIT") else getattr(module, const))
                  for const, (_, _, comment) in assignments.items()
                  if isinstance(getattr(module, const, None), StructType)
                  and not const.startswith("_")]

    def meaning(module: str, const: str, column: str, seen: frozenset[str]) -> str:
        assignments, columns, lines = sources[module]
        first, last, _ = assignments[const]
        for number in range(first, last + 1):
            match = _COLUMN.match(lines[number - 1])
            if match and match.group(1) == column:
                return columns.get(number, "")
        text = "\n".join(lines[first - 1:last])
        for other in assignments:
            if other not in seen and re.search(rf"\b{other}\b", text):
                found_there = meaning(module, other, column, seen | {other})
                if found_there:
                    return found_there
        return ""

    def type_name(dtype: Any) -> str:
        for _, const, _, struct in found:
            if dtype == struct:
                return const
        if hasattr(dtype, "elementType"):
            return f"array<{type_name(dtype.elementType)}>"
        if hasattr(dtype, "keyType"):
            return f"map<{type_name(dtype.keyType)}, {type_name(dtype.valueType)}>"
        return str(dtype.simpleString())

    glossary = yaml.safe_load(COLUMN_MEANINGS.read_text())
    return [(module, const, comment or glossary["tables"].get(const, ""),
             [(f.name, type_name(f.dataType),
               meaning(module, const, f.name, frozenset({const}))
               or glossary["columns"].get(f.name, ""))
              for f in struct.fields])
            for module, const, comment, struct in found]


def tables_reference() -> str:
    """The page of every table and struct the job reads or writes, column by column."""
    names = {const for _, const, _, _ in schema_tables()}
    lines = ["# Tables and columns", "",
             "Every table the job reads or writes, and every struct its columns hold, as "
             "`schemas/` and each kind's `schema.py` define them. Every column is nullable: "
             "rows are checked as data, not by the schema. A type in capitals is a struct of "
             "this page.", ""]
    module_titles = {"schemas.tables": "Topics, runs and shared structs",
                     "provisioning.kinds.acls.schema": "ACL bindings",
                     "provisioning.kinds.quotas.schema": "Client quotas",
                     "provisioning.kinds.users.schema": "SCRAM credentials",
                     "provisioning.kinds.groups.schema": "Consumer groups",
                     "provisioning.kinds.offsets.schema": "Offset resets",
                     "schemas.check": "`check`", "schemas.usage": "`check`'s usage"}
    current = None
    for module, const, comment, columns in schema_tables():
        if module != current:
            lines += [f"## {module_titles.get(module, module)}", ""]
            current = module
        lines += [f"### {const}", ""]
        if comment:
            lines += [comment, ""]
        lines += ["| column | type | meaning |", "|---|---|---|"]
        for column, kind, text in columns:
            shown = re.sub(r"\b[A-Z][A-Z_]+\b",
                           lambda m: f"[{m[0]}](#{m[0].lower()})" if m[0] in names else m[0],
                           kind)
            lines.append(f"| `{column}` | {_cell(shown)} | {_cell(text)} |")
        lines.append("")
    return "\n".join(lines)


# -- the job's vocabulary ---------------------------------------------------------------------

EXIT_0 = "everything done"
# What each outcome means, by name: every outcome of every kind must be here (a test
# checks it), so a new outcome cannot reach the reference without a meaning.
OUTCOME_MEANINGS = {
    "planned": "in the plan, not yet validated",
    "blocked": "a policy refused it; never sent to Kafka",
    "validated": "the broker's validateOnly pass (or the job's own checks) accepted it",
    "rejected": "an invalid manifest row (phase plan), or the broker refused it (later "
                "phases)",
    "created": "the topic was created",
    "deleted": "the topic (or the SCRAM credential) was deleted",
    "altered": "the topic's configs or partitions were changed",
    "already_present": "nothing to do: it was already as asked",
    "already_absent": "nothing to do: it was already gone",
    "drift": "it differs in what cannot be changed in place; reported, never fixed",
    "failed": "the request failed, or verify did not see it take effect in time",
    "unknown": "the request may or may not have taken effect (a timeout); verify settles "
               "most of them",
    "granted": "the ACL binding was created (CreateAcls, read back by DescribeAcls)",
    "revoked": "the ACL binding was deleted (DeleteAcls, read back by DescribeAcls)",
    "set": "the client quota was set (AlterClientQuotas, read back by "
           "DescribeClientQuotas)",
    "removed": "the client quota was removed",
    "upserted": "the SCRAM credential was set (AlterUserScramCredentials; its mechanism and "
                "iterations read back by DescribeUserScramCredentials)",
    "reset": "the group's committed offset on the partition was moved to the target "
             "(OffsetCommit, read back by OffsetFetch)",
    "offsets_deleted": "the group's committed offset on the partition was deleted "
                       "(OffsetDelete, read back by OffsetFetch)",
    "already_done": "nothing to do: an earlier run's apply sent the offset reset request "
                    "(`done_by`)",
    "reassigning": "the partition's move was started, or is still moving",
    "reassigned": "the partition's move is complete",
}


def kinds_vocabulary() -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """Per kind: (name, plan actions, outcomes); every registered entity kind's from its
    model (the actions that add and remove, and the broker's words for them)."""
    from provisioning import names
    from provisioning.kinds.reassign import names as reassign
    from provisioning.registry import KINDS
    from provisioning.run.entity import EntityRunKind

    found = [
        ("topics", names.ACTIONS, names.OUTCOMES),
        ("replica moves", (reassign.REASSIGN,),
         (reassign.REASSIGNING, reassign.REASSIGNED, names.REJECTED, names.FAILED,
          names.UNKNOWN)),
    ]
    for kind in KINDS:
        if isinstance(kind.run, EntityRunKind):
            model = kind.run.model
            found.append((model.nouns.title, (model.adds, model.removes, names.NOOP),
                          names.entity_outcomes(model.added, model.removed)))
    return found


def exit_codes() -> list[tuple[int, str]]:
    """Each exit code with what leads to it: the errors of `provisioning.errors` that map to
    it (their docstrings), and for 1 the outcomes that need a person (names.ATTENTION)."""
    from provisioning import errors, names

    meanings: dict[int, list[str]] = {0: [EXIT_0], 1: [
        "some subjects ended " + ", ".join(f"`{o}`" for o in names.ATTENTION)
        + " (see the audit; the rest were done); for `check`: at least one `error` "
        "violation"]}
    for _, cls in inspect.getmembers(errors, inspect.isclass):
        if (issubclass(cls, errors.ProvisioningError) and cls is not errors.ProvisioningError
                and cls.__module__ == errors.__name__):
            meanings.setdefault(cls.exit_code, []).append(
                f"`{cls.__name__}`: {_first_paragraph(cls.__doc__)}")
    return sorted((code, "; ".join(sorted(set(texts), key=texts.index)))
                  for code, texts in meanings.items())


def _policy_doc(factory: Callable[..., Any]) -> str:
    return _first_paragraph(getattr(factory, "__doc__", None))


def vocabulary_reference() -> str:
    """The page of exit codes, actions, outcomes, policies and `check` rules."""
    from provisioning import names
    from provisioning.kinds.groups.run import DEFAULT_SEVERITY as GROUP_SEVERITY
    from provisioning.kinds.topics.policies import registry
    from provisioning.kinds.topics.rules import DEFAULT_SEVERITY

    lines = ["# Exit codes, outcomes, policies and check rules", "",
             "## Exit codes", "", "| exit code | meaning |", "|---|---|"]
    lines += [f"| {code} | {_cell(text)} |" for code, text in exit_codes()]
    lines += ["", "## Phases", "",
              "Every subject gets one audit row per phase it reaches, in this order: "
              + ", ".join(f"`{p}`" for p in names.PHASES) + ".", "",
              "## Plan actions and outcomes", "",
              "| kind | plan actions | outcomes |", "|---|---|---|"]
    for kind, actions, outcomes in kinds_vocabulary():
        lines.append(f"| {kind} | {', '.join(f'`{a}`' for a in actions)} | "
                     f"{', '.join(f'`{o}`' for o in outcomes)} |")
    lines += ["", "| outcome | meaning |", "|---|---|"]
    every = dict.fromkeys(o for _, _, outcomes in kinds_vocabulary() for o in outcomes)
    lines += [f"| `{o}` | {_cell(OUTCOME_MEANINGS.get(o, ''))} |" for o in every]
    lines += ["", "Outcomes that make a run exit 1: "
              + ", ".join(f"`{o}`" for o in names.ATTENTION) + ".", ""]

    lines += ["## Policies", "",
              "Always-on policies run first, in this order, then the configured ones "
              "(`policies.create`, `policies.delete`, `policies.alter`) in conf order.", "",
              "| action | policy | always on | what it refuses |", "|---|---|---|---|"]
    for action in ("create", "delete", "alter"):
        for name, factory in registry.ALWAYS_ON[action]:
            lines.append(f"| {action} | `{name}` | yes | {_cell(_policy_doc(factory))} |")
        for name, factory in registry.POLICIES[action].items():
            doc = _policy_doc(factory)
            if action == "alter" and name != "custom":
                doc = f"the create policy `{name}`, judging the topic as it will be after " \
                      "the alter"
            lines.append(f"| {action} | `{name}` | no | {_cell(doc)} |")
    lines += ["", "## check rules", "",
              "Each rule's severity unless `checks.severity` says otherwise "
              "(`error`, `warning`, `info` or `off`); `custom` stands for every custom "
              "create policy's violations.", "",
              "| rule | default severity | kind |", "|---|---|---|"]
    for rule in check_rules():
        if rule in names.HEALTH_RULES:
            kind = "health"
        elif rule in names.LIVE_POLICIES:
            kind = "create policy, on live topics"
        else:
            kind = "another kind's live state"
        # A kind's own rules (unmanaged_quota, unmanaged_group) are `info` unless the conf
        # says otherwise; acl_without_user is off (a principal may come from a certificate
        # or OAuth); the group inventory's rules have their own.
        severity = {**DEFAULT_SEVERITY, **GROUP_SEVERITY}.get(
            rule, names.OFF if rule == "acl_without_user" else names.INFO)
        lines.append(f"| `{rule}` | {severity} | {kind} |")
    return "\n".join(lines) + "\n"


def check_rules() -> list[str]:
    """Every rule `checks.severity` may name: each conf section's (kind's) rules."""
    from provisioning.registry import KINDS

    return list(dict.fromkeys(rule for k in KINDS for rule in k.conf.check_rules))


# -- the pages ------------------------------------------------------------------------------

PAGES: dict[str, Callable[[], str]] = {
    "reference/commands.md": cli_reference,
    "reference/conf.md": lambda: conf_reference(load_conf_schema()),
    "reference/tables.md": tables_reference,
    "reference/vocabulary.md": vocabulary_reference,
}


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else ROOT / "build" / "reference"
    for page, make in PAGES.items():
        try:
            content = make()
        except MissingConfSchema as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        target = out / page
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
