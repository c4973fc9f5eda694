"""`plan` and `apply`: the pipeline commands, their saved plans and their output. `apply`
takes every kind's `--allow-*` flags (`CliKind.apply_flags`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import click

from provisioning.cli.common import Command, Outcome, common_options, execute
from provisioning.conf import select_clusters
from provisioning.registry import KINDS
from provisioning.run.options import ApplyOptions, PlanOptions, RunOptions, Scope
from provisioning.views import planfile
from provisioning.views.plan_markdown import render_markdown
from provisioning.views.plan_text import render_run, run_json

CLI_KINDS = tuple(k.cli for k in KINDS)


def run_command(command: str, conf_path: str, clusters: tuple[str, ...],
                topics_glob: str | None, as_json: bool, verbose: bool,
                out_path: str | None = None, plan_path: str | None = None,
                validate: bool = True, output_format: str = "text",
                allowed: Mapping[str, bool] | None = None) -> None:
    """Run `plan` or `apply` through the command skeleton (`common.execute`).

    allowed: an apply's `--allow-*` flags, by change (`deletes`, `alter`, ...).
    """
    flags = [f for k in CLI_KINDS for f in k.apply_flags]
    given = dict(allowed or {})
    arguments: dict[str, Any] = {"clusters": list(clusters), "topics": topics_glob,
                                 "out": out_path, "plan": plan_path, "validate": validate}
    if command == "apply":
        arguments["apply"] = True
        arguments.update({f.argument: bool(given.get(f.change)) for f in flags})

    def work(cmd: Command) -> Outcome:
        from provisioning.run.commands import run_plan

        conf = cmd.conf
        scope_clusters, scope_topics = clusters, topics_glob
        known = planfile.sections(cmd.view_kinds)
        saved = planfile.load_plan(plan_path, known) if plan_path else None
        if saved is not None and not clusters and topics_glob is None:
            # Apply exactly what was planned: the saved plan's scope, unless told otherwise.
            scope_clusters, scope_topics = saved.document.clusters, saved.document.topics
        selected = select_clusters(conf, scope_clusters)
        names = tuple(c.name for c in selected)
        hooks: dict[str, Callable[..., None]] = {}
        plans_done: Callable[[], None] | None = None
        saved_doc = None
        if saved is not None:
            hooks, plans_done = planfile.stale_check(saved, conf.digest, names, scope_topics)
        elif out_path:
            hooks, saved_doc = planfile.recorder(known, conf.digest, names, scope_topics)
        scope = Scope(names, scope_topics)
        options: RunOptions = (
            ApplyOptions(scope=scope, on_plan=hooks, plans_done=plans_done,
                         allowed=frozenset(c for c, on in given.items() if on))
            if command == "apply" else
            PlanOptions(scope=scope, validate=validate, on_plan=hooks,
                        plans_done=plans_done))
        credentials = cmd.credentials()
        record = cmd.record
        assert record is not None
        result = run_plan(cmd.session(), cmd.run_kinds, conf, selected, credentials, record,
                          options, cmd.stop, cmd.pending)
        saved_plan = None
        if out_path and saved_doc is not None:
            document = saved_doc()
            planfile.save_plan(out_path, document, planfile.plan_meta(
                record.run_id, command, conf.source, result.counts, result.exit_code,
                record.started_at))
            saved_plan = (out_path, document.digest)
        record.outcome_counts = result.counts
        payload = {**run_json(cmd.view_kinds, result),
                   "plan_file": None if saved_plan is None else {
                       "path": saved_plan[0], "digest": saved_plan[1]}}
        return Outcome(result.exit_code, payload, lambda: (
            render_markdown(cmd.view_kinds, result, command) if output_format == "markdown"
            else render_run(cmd.view_kinds, result, command, verbose, saved_plan)))

    execute(command, KINDS, conf_path, as_json, verbose, arguments, work)


@click.command()
@common_options
@click.option("--no-validate", is_flag=True,
              help="Skip the validateOnly CreateTopics pass (no broker-side checks).")
@click.option("--out", "out_path", default=None, type=click.Path(dir_okay=False),
              help="Save the plan to FILE, for `apply --plan FILE`.")
@click.option("--format", "output_format", type=click.Choice(("text", "markdown")),
              default="text", show_default=True,
              help="markdown: the plan as GitHub-flavoured Markdown (a pull-request comment).")
def plan(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None, as_json: bool,
         verbose: bool, no_validate: bool, out_path: str | None, output_format: str) -> None:
    """Compute the plan and run the validateOnly pass; changes nothing."""
    if as_json and output_format != "text":
        raise click.UsageError("--json and --format markdown exclude each other")
    run_command("plan", conf_path, clusters, topics_glob, as_json, verbose,
                out_path=out_path, validate=not no_validate, output_format=output_format)


def _apply(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None, as_json: bool,
           verbose: bool, plan_path: str | None, **allowed: bool) -> None:
    """Plan, validate, then create and grant; the changes each `--allow-*` flag names as
    well."""
    flags = [f for k in CLI_KINDS for f in k.apply_flags]
    by_argument = {f.argument: f.change for f in flags}
    given: dict[str, bool] = {}
    for flag in flags:
        given[flag.change] = bool(allowed.get(flag.argument))
        for option, argument in flag.old_options:
            if allowed.get(argument):
                click.echo(f"warning: {option} is deprecated and will be removed; use "
                           f"{flag.option}", err=True)
                given[flag.change] = True
    run_command("apply", conf_path, clusters, topics_glob, as_json, verbose,
                plan_path=plan_path,
                allowed={change: given[change] for change in by_argument.values()})


def _apply_command() -> click.Command:
    """`apply`, with every kind's `--allow-*` flags."""
    fn: Callable[..., None] = _apply
    fn = click.option("--plan", "plan_path", default=None, type=click.Path(dir_okay=False),
                      help="Apply only if a fresh plan equals this saved plan "
                           "(`plan --out`); otherwise exit 2 before any request reaches "
                           "Kafka.")(fn)
    for flag in reversed([f for k in CLI_KINDS for f in k.apply_flags]):
        for option, argument in flag.old_options:
            fn = click.option(option, argument, is_flag=True, hidden=True)(fn)
        fn = click.option(flag.option, flag.argument, is_flag=True, help=flag.help)(fn)
    fn = common_options(fn)
    help_text = ("Plan, validate, then create and grant; each --allow-* flag adds the "
                 "changes it names (" + ", ".join(
                     f.option for k in CLI_KINDS for f in k.apply_flags) + ").")
    return click.command("apply", help=help_text)(fn)


apply = _apply_command()
