"""Entry point: parse, load conf, build the session, call lib, record the run, exit with a code.

    ./spark-submit.sh jobs/provision_topics.py snapshot --conf conf/local.yaml
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from provisioning.conf import Conf, load_conf, resolve_credentials, select_clusters
from provisioning.errors import ProvisioningError
from provisioning.runs import RunRecord, new_run_id, write_run
from provisioning.spark import build_session

log = logging.getLogger("provisioning")


def common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options every subcommand takes."""
    options = [
        click.option("--conf", "conf_path", required=True,
                     type=click.Path(dir_okay=False), help="The environment's YAML conf."),
        click.option("--cluster", "clusters", multiple=True,
                     help="Only this cluster (repeatable); default: every cluster in the conf."),
        click.option("--topics", "topics_glob", default=None,
                     help="Only topics whose name matches this glob."),
        click.option("--json", "as_json", is_flag=True, help="Machine-readable output."),
        click.option("--verbose", is_flag=True, help="Log every phase in detail."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Provision and audit Kafka topics from Delta manifests."""


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # kafka-python logs its whole client configuration, credentials included, at DEBUG,
    # and every failed connection attempt at ERROR; the job reports failures itself.
    logging.getLogger("kafka").setLevel(logging.WARNING if verbose else logging.CRITICAL)
    logging.getLogger("py4j").setLevel(logging.WARNING)


def _load(conf_path: str) -> Conf:
    try:
        return load_conf(conf_path, os.environ)
    except ProvisioningError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)


def _emit(as_json: bool, payload: dict[str, Any], human: Callable[[], None]) -> None:
    if as_json:
        # One line, printed last: spark-submit merges the driver's stderr into stdout.
        click.echo(json.dumps(payload, sort_keys=True, default=str))
    else:
        human()


@cli.command()
@common_options
def snapshot(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None,
             as_json: bool, verbose: bool) -> None:
    """Record the live state of each cluster; changes nothing."""
    _setup_logging(verbose)
    conf = _load(conf_path)
    from provisioning.commands import take_snapshot

    record = RunRecord(new_run_id(), "snapshot",
                       {"clusters": list(clusters), "topics": topics_glob}, conf.digest)
    spark = None
    try:
        selected = select_clusters(conf, clusters)
        credentials = resolve_credentials(conf, os.environ)
        spark = build_session(conf.spark.app_name, conf.spark.settings)
        summaries = take_snapshot(spark, conf, selected, credentials, record)
    except ProvisioningError as exc:
        _fail(spark, conf, record, exc)
        return
    record.finish("succeeded", 0)
    write_run(spark, conf.tables.runs, record)

    def human() -> None:
        click.echo(f"snapshot {record.run_id}")
        for s in summaries:
            click.echo(
                f"  {s.cluster} (id {s.cluster_id}): {s.brokers} broker(s), {s.topics} topic(s) "
                f"({s.internal_topics} internal), {s.partitions} partition(s), "
                f"{s.topics_in_use} in use by consumer groups"
                + (f", {s.undescribable_topics} not describable" if s.undescribable_topics
                   else "")
            )
        click.echo(f"  recorded in {conf.tables.snapshots}")

    _emit(as_json, {"run_id": record.run_id, "clusters": [s.as_dict() for s in summaries]},
          human)


def _fail(spark: Any, conf: Conf, record: RunRecord, exc: ProvisioningError,
          as_json: bool = False) -> None:
    """Print the error, record the run as failed when a session exists, exit with its code.

    With --json the error is also the last line of stdout, as a JSON document.
    """
    click.echo(f"error: {exc}", err=True)
    record.finish("failed", exc.exit_code, str(exc))
    if spark is None and exc.exit_code == 3:
        # Unreachable clusters are worth a runs row even though no session was needed yet.
        spark = build_session(conf.spark.app_name, conf.spark.settings)
    if spark is not None:
        try:
            write_run(spark, conf.tables.runs, record)
        except Exception as write_exc:
            click.echo(f"error: could not record the run: {write_exc}", err=True)
    if as_json:
        _emit(True, {"run_id": record.run_id, "command": record.command,
                     "exit_code": exc.exit_code, "error": str(exc),
                     **getattr(exc, "details", {})}, lambda: None)
    sys.exit(exc.exit_code)


def _run_pipeline(command: str, conf_path: str, clusters: tuple[str, ...],
                  topics_glob: str | None, as_json: bool, verbose: bool,
                  out_path: str | None = None, plan_path: str | None = None,
                  **flags: bool) -> None:
    _setup_logging(verbose)
    conf = _load(conf_path)
    from provisioning import planfile
    from provisioning.faults import Fault
    from provisioning.pipeline import RunOptions, run_pipeline
    from provisioning.render import render_run

    record = RunRecord(new_run_id(), command,
                       {"clusters": list(clusters), "topics": topics_glob, "out": out_path,
                        "plan": plan_path, **flags}, conf.digest)
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
        # PROVISIONING_FAULT injects a real failure at a named point (reliability tests).
        options = RunOptions(command=command, clusters=names,
                             topics_glob=topics_glob, on_plan=on_plan,
                             fault=Fault.parse(os.environ.get("PROVISIONING_FAULT")), **flags)
        credentials = resolve_credentials(conf, os.environ)
        spark = build_session(conf.spark.app_name, conf.spark.settings)
        result = run_pipeline(spark, conf, selected, credentials, record, options)
        code = result.exit_code
        if out_path and saved_doc is not None:
            planfile.save_plan(out_path, saved_doc(), planfile.plan_meta(
                record.run_id, command, conf.source, result.counts, code, record.started_at))
    except ProvisioningError as exc:
        _fail(spark, conf, record, exc, as_json)
        return
    record.outcome_counts = result.counts
    record.finish("succeeded" if code == 0 else "completed_with_errors", code)
    write_run(spark, conf.tables.runs, record)
    saved_plan = (out_path, saved_doc().digest) if out_path and saved_doc else None
    _emit(as_json, {"run_id": result.run_id, "command": command, "counts": result.counts,
                    "actions": result.actions, "topics": result.topics,
                    "topics_not_listed": result.topics_not_listed,
                    "deletes_not_allowed": result.deletes_not_allowed, "exit_code": code,
                    "plan_file": None if saved_plan is None else {
                        "path": saved_plan[0], "digest": saved_plan[1]}},
          lambda: click.echo("\n".join(render_run(result, command, verbose, saved_plan))))
    sys.exit(code)


@cli.command()
@common_options
@click.option("--no-validate", is_flag=True,
              help="Skip the validateOnly CreateTopics pass (no broker-side checks).")
@click.option("--out", "out_path", default=None, type=click.Path(dir_okay=False),
              help="Save the plan to FILE, for `apply --plan FILE`.")
def plan(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None, as_json: bool,
         verbose: bool, no_validate: bool, out_path: str | None) -> None:
    """Compute the plan and run the validateOnly pass; changes nothing."""
    _run_pipeline("plan", conf_path, clusters, topics_glob, as_json, verbose,
                  out_path=out_path, validate=not no_validate)


@cli.command()
@common_options
@click.option("--allow-deletes", is_flag=True,
              help="Also delete the topics the manifests mark `absent` (off by default).")
@click.option("--plan", "plan_path", default=None,
              type=click.Path(dir_okay=False),
              help="Apply only if a fresh plan equals this saved plan (`plan --out`); "
                   "otherwise exit 2 before any request reaches Kafka.")
def apply(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None, as_json: bool,
          verbose: bool, allow_deletes: bool, plan_path: str | None) -> None:
    """Plan, validate, then create (and with --allow-deletes, delete)."""
    _run_pipeline("apply", conf_path, clusters, topics_glob, as_json, verbose,
                  plan_path=plan_path, validate=True, apply=True, allow_deletes=allow_deletes)


@cli.command()
@common_options
@click.option("--run-id", default=None, help="Show this run's outcomes.")
@click.option("--topic", default=None, help="Show this topic's history across runs.")
@click.option("--drift", is_flag=True,
              help="Show the topics whose latest plan found drift, per cluster.")
@click.option("--limit", default=20, show_default=True, help="How many runs or rows to show.")
def report(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None, as_json: bool,
           verbose: bool, run_id: str | None, topic: str | None, drift: bool,
           limit: int) -> None:
    """Show recent runs, one run's outcomes, a topic's history or drift across clusters."""
    _setup_logging(verbose)
    conf = _load(conf_path)
    from provisioning.report import build_report, render_report

    try:
        spark = build_session(conf.spark.app_name, conf.spark.settings)
        payload = build_report(spark, conf, run_id=run_id, topic=topic,
                               clusters=clusters, limit=limit, drift=drift,
                               topics_glob=topics_glob)
    except ProvisioningError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    _emit(as_json, payload, lambda: click.echo("\n".join(render_report(payload))))


@cli.command()
@click.option("--conf", "conf_path", required=True, type=click.Path(dir_okay=False),
              help="The environment's YAML conf.")
@click.option("--no-optimize", is_flag=True, help="Skip compaction; only prune and VACUUM.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--verbose", is_flag=True, help="Log every step in detail.")
def maintain(conf_path: str, no_optimize: bool, as_json: bool, verbose: bool) -> None:
    """Compact the job's tables, drop expired snapshot rows, VACUUM old files."""
    _setup_logging(verbose)
    conf = _load(conf_path)
    from provisioning.maintenance import maintain_tables
    from provisioning.runs import utc_now

    record = RunRecord(new_run_id(), "maintain", {"optimize": not no_optimize}, conf.digest)
    spark = None
    try:
        spark = build_session(conf.spark.app_name, conf.spark.settings)
        done = maintain_tables(spark, conf, utc_now(), optimize=not no_optimize)
    except ProvisioningError as exc:
        _fail(spark, conf, record, exc, as_json)
        return
    record.outcome_counts = {
        "files_compacted": sum(max(t.files_before - t.files_after, 0) for t in done),
        "snapshot_rows_deleted": sum(t.rows_deleted for t in done),
        "files_vacuumed": sum(t.files_vacuumed for t in done)}
    record.finish("succeeded", 0)
    write_run(spark, conf.tables.runs, record)

    def human() -> None:
        click.echo(f"maintain {record.run_id} (VACUUM retains "
                   f"{conf.maintenance.vacuum_retain_hours} h)")
        for t in done:
            click.echo(f"  {t.role} {t.table}: {t.files_before} -> {t.files_after} file(s), "
                       f"{t.rows_deleted} row(s) deleted, {t.files_vacuumed} file(s) vacuumed")

    _emit(as_json, {"run_id": record.run_id, "tables": [t.as_dict() for t in done]}, human)


if __name__ == "__main__":
    cli()
