"""`import`: write the live state of the selected clusters as a manifest table, of the kind
its option chooses (`CliKind.import_option`; none: the default kind's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from provisioning.cli.common import Command, Outcome, common_options, execute
from provisioning.cli.kind import CliKind
from provisioning.conf import select_clusters
from provisioning.registry import KINDS
from provisioning.run.options import IMPORT_MODES, ImportOptions, Scope

CLI_KINDS = tuple(k.cli for k in KINDS)


def _chosen(values: dict[str, Any]) -> CliKind:
    """The kind an import writes: the one whose option was given (at most one), else the
    default one; UsageError when a kind's own option goes with another kind."""
    parts = [k for k in CLI_KINDS if k.imports()]
    chosen = [k for k in parts if k.import_option is not None
              and values.get(k.import_option.argument)]
    if len(chosen) > 1:
        raise click.UsageError(" and ".join(k.import_option.option for k in chosen
                                            if k.import_option) + " exclude each other")
    kind = chosen[0] if chosen else next(k for k in parts if k.import_option is None)
    for other in parts:
        if other is kind:
            continue
        own = [(s.argument, s.option) for s in other.import_switches]
        for argument, option in (*own, *other.import_only):
            if values.get(argument):
                against = kind.import_option.option if kind.import_option else "the default"
                raise click.UsageError(f"{option} is for {other.name}; it does not go with "
                                       f"{against}")
    return kind


def _import(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None,
            as_json: bool, verbose: bool, table: str, owner: str | None, mode: str,
            **values: Any) -> None:
    """Write the live state (topics; with a kind's option, that kind) as manifest rows (one
    commit); changes nothing on Kafka."""
    kind = _chosen({**values, "topics_glob": topics_glob})
    options = ImportOptions(kind=kind.name, table=table, scope=Scope(clusters, topics_glob),
                            mode=mode, owner=owner,
                            switches={s.argument: values.get(s.argument)
                                      for s in kind.import_switches})

    def work(cmd: Command) -> Outcome:
        from provisioning.run.commands import run_import

        record = cmd.record
        assert record is not None
        selected = select_clusters(cmd.conf, clusters)
        imported = run_import(cmd.session(), cmd.run_kinds, cmd.conf, selected,
                              cmd.credentials(), record, options, cmd.stop)
        return kind.import_outcome(cmd, table, imported)

    execute("import", KINDS, conf_path, as_json, verbose,
            {"clusters": list(clusters), "table": table, "owner": owner, "mode": mode,
             **kind.import_arguments({**values, "topics_glob": topics_glob})}, work)


def _import_command() -> click.Command:
    fn: Callable[..., None] = _import
    options = [s for k in CLI_KINDS for s in (*k.import_switches,
                                                *([k.import_option] if k.import_option
                                                  else []))]
    for switch in reversed(options):
        fn = click.option(switch.option, switch.argument, is_flag=switch.is_flag,
                          default=None if not switch.is_flag else False,
                          help=switch.help)(fn)
    fn = click.option("--mode", type=click.Choice(IMPORT_MODES), default="error",
                      show_default=True,
                      help="error: refuse a table that exists; append: add the rows; "
                           "overwrite: replace the table's rows.")(fn)
    fn = click.option("--owner", default=None,
                      help="The owner of every imported row (default: none).")(fn)
    fn = click.option("--table", required=True,
                      help="The manifest table to write (a path or a catalog name).")(fn)
    fn = common_options(fn)
    return click.command("import", help=(
        "Write the live topics (or, with " + ", ".join(
            k.import_option.option for k in CLI_KINDS if k.import_option)
        + ", that kind) as manifest rows (one commit); changes nothing on Kafka."))(fn)


import_ = _import_command()
