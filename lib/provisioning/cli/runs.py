"""`plan` and `apply`: the pipeline commands, their saved plans and their output."""

from __future__ import annotations

from typing import Any

import click

from provisioning.cli.common import Command, Outcome, common_options, execute
from provisioning.conf import select_clusters
from provisioning.run.options import ApplyOptions, PlanOptions, RunOptions, Scope
from provisioning.views import planfile
from provisioning.views.plan_markdown import render_markdown
from provisioning.views.plan_text import render_run


def run_command(command: str, conf_path: str, clusters: tuple[str, ...],
                topics_glob: str | None, as_json: bool, verbose: bool,
                out_path: str | None = None, plan_path: str | None = None,
                validate: bool = True, allow_deletes: bool = False, allow_alter: bool = False,
                output_format: str = "text", allow_revokes: bool = False,
                allow_reassign: bool = False) -> None:
    """Run `plan` or `apply` through the command skeleton (`common.execute`)."""
    arguments: dict[str, Any] = {"clusters": list(clusters), "topics": topics_glob,
                                 "out": out_path, "plan": plan_path, "validate": validate}
    if command == "apply":
        arguments.update(apply=True, allow_deletes=allow_deletes, allow_alter=allow_alter,
                         allow_revokes=allow_revokes, allow_reassign=allow_reassign)

    def work(cmd: Command) -> Outcome:
        from provisioning.run.commands import run_plan

        conf = cmd.conf
        scope_clusters, scope_topics = clusters, topics_glob
        saved = planfile.load_plan(plan_path) if plan_path else None
        if saved is not None and not clusters and topics_glob is None:
            # Apply exactly what was planned: the saved plan's scope, unless told otherwise.
            scope_clusters, scope_topics = saved.document.clusters, saved.document.topics
        selected = select_clusters(conf, scope_clusters)
        names = tuple(c.name for c in selected)
        keep_plan, keep_acls, saved_doc = (
            planfile.recorder(conf.digest, names, scope_topics) if out_path
            else (None, None, None))
        on_plan, on_acl_plan = (planfile.stale_check(saved, conf.digest, names, scope_topics)
                                if saved is not None else (keep_plan, keep_acls))
        scope = Scope(names, scope_topics)
        options: RunOptions = (
            ApplyOptions(scope=scope, allow_deletes=allow_deletes, allow_alter=allow_alter,
                         allow_revokes=allow_revokes, allow_reassign=allow_reassign,
                         on_plan=on_plan,
                         on_acl_plan=on_acl_plan)
            if command == "apply" else
            PlanOptions(scope=scope, validate=validate, on_plan=on_plan,
                        on_acl_plan=on_acl_plan))
        credentials = cmd.credentials()
        record = cmd.record
        assert record is not None
        result = run_plan(cmd.session(), conf, selected, credentials, record, options,
                          cmd.stop, cmd.pending)
        saved_plan = None
        if out_path and saved_doc is not None:
            document = saved_doc()
            planfile.save_plan(out_path, document, planfile.plan_meta(
                record.run_id, command, conf.source, result.counts, result.exit_code,
                record.started_at))
            saved_plan = (out_path, document.digest)
        record.outcome_counts = result.counts
        payload = {"counts": result.counts, "actions": result.actions, "topics": result.topics,
                   "topics_not_listed": result.topics_not_listed,
                   "deletes_not_allowed": result.deletes_not_allowed,
                   "alters_not_allowed": result.alters_not_allowed,
                   "reassigns_not_allowed": result.reassigns_not_allowed,
                   "unmanaged": result.unmanaged,
                   "acls": result.acls,
                   "plan_file": None if saved_plan is None else {
                       "path": saved_plan[0], "digest": saved_plan[1]}}
        return Outcome(result.exit_code, payload, lambda: (
            render_markdown(result, command) if output_format == "markdown"
            else render_run(result, command, verbose, saved_plan)))

    execute(command, conf_path, as_json, verbose, arguments, work)


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
@click.option("--allow-revokes", is_flag=True,
              help="Also revoke the ACL bindings the ACL manifests mark `absent` (and, with "
                   "acls.remove_unlisted, those no manifest names); off by default: planned "
                   "and counted only.")
@click.option("--allow-reassign", is_flag=True,
              help="Also move replicas as the manifests ask (replication factor, "
                   "replica_assignment), throttled, and finish the moves under way; off by "
                   "default: planned and checked only.")
@click.option("--plan", "plan_path", default=None,
              type=click.Path(dir_okay=False),
              help="Apply only if a fresh plan equals this saved plan (`plan --out`); "
                   "otherwise exit 2 before any request reaches Kafka.")
def apply(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None, as_json: bool,
          verbose: bool, allow_deletes: bool, allow_alter: bool, allow_revokes: bool,
          allow_reassign: bool, plan_path: str | None) -> None:
    """Plan, validate, then create and grant (with --allow-deletes, delete; with
    --allow-alter, alter; with --allow-revokes, revoke; with --allow-reassign, move
    replicas)."""
    run_command("apply", conf_path, clusters, topics_glob, as_json, verbose,
                plan_path=plan_path, allow_deletes=allow_deletes, allow_alter=allow_alter,
                allow_revokes=allow_revokes, allow_reassign=allow_reassign)
