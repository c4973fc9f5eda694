"""`plan` and `apply`: the pipeline commands, their saved plans and their output."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from provisioning.cli.common import common_options, emit, fail, load, session, setup_logging
from provisioning.conf import resolve_credentials, select_clusters
from provisioning.results import RunRecord, RunResult, new_run_id
from provisioning.run.faults import Fault
from provisioning.run.options import ApplyOptions, PlanOptions, RunOptions, Scope
from provisioning.session import cancelled_by_signals
from provisioning.views import planfile
from provisioning.views.plan_markdown import render_markdown
from provisioning.views.plan_text import render_run


def run_command(command: str, conf_path: str, clusters: tuple[str, ...],
                topics_glob: str | None, as_json: bool, verbose: bool,
                out_path: str | None = None, plan_path: str | None = None,
                validate: bool = True, allow_deletes: bool = False, allow_alter: bool = False,
                output_format: str = "text") -> None:
    """Run `plan` or `apply`, print the plan (or JSON), record the run, exit with its code."""
    from provisioning.delta.runs import write_run
    from provisioning.run.commands import run_plan

    setup_logging(verbose)
    conf = load(conf_path)
    arguments: dict[str, Any] = {"clusters": list(clusters), "topics": topics_glob,
                                 "out": out_path, "plan": plan_path, "validate": validate}
    if command == "apply":
        arguments["apply"] = True
        arguments["allow_deletes"] = allow_deletes
        arguments["allow_alter"] = allow_alter
    record = RunRecord(new_run_id(), command, arguments, conf.digest)
    spark = None
    saved_doc = None
    try:
        saved = planfile.load_plan(plan_path) if plan_path else None
        if saved is not None and not clusters and topics_glob is None:
            # Apply exactly what was planned: the saved plan's scope, unless told otherwise.
            clusters, topics_glob = saved.document.clusters, saved.document.topics
        selected = select_clusters(conf, clusters)
        names = tuple(c.name for c in selected)
        keep_plan, saved_doc = (planfile.recorder(conf.digest, names, topics_glob)
                                if out_path else (None, None))
        on_plan = (planfile.stale_check(saved, conf.digest, names, topics_glob)
                   if saved is not None else keep_plan)
        scope = Scope(names, topics_glob)
        # PROVISIONING_FAULT injects a real failure at a named point (reliability tests).
        fault = Fault.parse(os.environ.get("PROVISIONING_FAULT"))
        options: RunOptions = (
            ApplyOptions(scope=scope, allow_deletes=allow_deletes, allow_alter=allow_alter,
                         on_plan=on_plan, fault=fault)
            if command == "apply" else
            PlanOptions(scope=scope, validate=validate, on_plan=on_plan, fault=fault))
        credentials = resolve_credentials(conf, os.environ)
        spark = session(conf)

        def record_run(result: RunResult) -> None:
            if out_path and saved_doc is not None:
                planfile.save_plan(out_path, saved_doc(), planfile.plan_meta(
                    record.run_id, command, conf.source, result.counts, result.exit_code,
                    record.started_at))
            record.outcome_counts = result.counts
            record.finish("succeeded" if result.exit_code == 0 else "completed_with_errors",
                          result.exit_code)
            write_run(spark, conf.tables.runs, record)

        with cancelled_by_signals(spark, record.run_id):
            result = run_plan(spark, conf, selected, credentials, record, options,
                              record_run)
        code = result.exit_code
    except Exception as exc:  # anticipated errors exit 2-4, the rest 5 (README)
        fail(spark, conf, record, exc, as_json)
    saved_plan = (out_path, saved_doc().digest) if out_path and saved_doc else None
    emit(as_json, {"run_id": result.run_id, "command": command, "counts": result.counts,
                   "actions": result.actions, "topics": result.topics,
                   "topics_not_listed": result.topics_not_listed,
                   "deletes_not_allowed": result.deletes_not_allowed,
                   "alters_not_allowed": result.alters_not_allowed, "exit_code": code,
                   "unmanaged": result.unmanaged,
                   "plan_file": None if saved_plan is None else {
                       "path": saved_plan[0], "digest": saved_plan[1]}},
         lambda: click.echo("\n".join(
             render_markdown(result, command) if output_format == "markdown"
             else render_run(result, command, verbose, saved_plan))))
    sys.exit(code)


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


@click.command()
@common_options
@click.option("--allow-deletes", is_flag=True,
              help="Also delete the topics the manifests mark `absent` (off by default).")
@click.option("--allow-alter", is_flag=True,
              help="Also change live topics (configs, more partitions) as the manifests ask "
                   "(off by default: planned and validated only).")
@click.option("--plan", "plan_path", default=None,
              type=click.Path(dir_okay=False),
              help="Apply only if a fresh plan equals this saved plan (`plan --out`); "
                   "otherwise exit 2 before any request reaches Kafka.")
def apply(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None, as_json: bool,
          verbose: bool, allow_deletes: bool, allow_alter: bool, plan_path: str | None) -> None:
    """Plan, validate, then create (with --allow-deletes, delete; with --allow-alter,
    alter)."""
    run_command("apply", conf_path, clusters, topics_glob, as_json, verbose,
                plan_path=plan_path, allow_deletes=allow_deletes, allow_alter=allow_alter)
