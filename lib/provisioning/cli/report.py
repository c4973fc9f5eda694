"""`report`: recent runs and one run's rows of every kind (`--run-id`), read from the Delta
tables; the audit as a static site (`--site`); every kind's own views
(`CliKind.report_views`: a topic's history, drift, unmanaged subjects, check's trend, what a
kind reads live)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from provisioning.cli.common import Command, Outcome, common_options, execute
from provisioning.cli.kind import ReportArgs, ReportView
from provisioning.conf import select_clusters
from provisioning.registry import KINDS
from provisioning.session import job_label
from provisioning.views.report import (
    recent_runs,
    render_recent_runs,
    render_run_view,
    run_view,
)

CLI_KINDS = tuple(k.cli for k in KINDS)


def _views() -> list[ReportView]:
    return [v for k in CLI_KINDS for v in k.report_views]


# The days `--site` shows without `--since`.
SITE_DAYS = 30


def _report(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None,
            as_json: bool, verbose: bool, run_id: str | None, limit: int,
            site: str | None, **values: Any) -> None:
    """Show recent runs, one run's outcomes, or a kind's view (see the options)."""
    views = _views()
    chosen = [v for v in views if values.get(v.option.argument)]
    args = ReportArgs(clusters=clusters, topics_glob=topics_glob, limit=limit, values=values)

    # Refused before the conf is read or a session started, as every option conflict.
    given = [n for n in ("--run-id" if run_id else "", "--site" if site else "",
                         *(v.option.option for v in chosen)) if n]
    if len(given) > 1:
        every = ", ".join(["--run-id", "--site", *(v.option.option for v in views)])
        raise click.UsageError(f"report takes one of {every}; got {' and '.join(given)}")
    for view in views:
        for extra in view.extras:
            given_value = values.get(extra.argument)
            if given_value in (None, False) or any(extra in v.extras for v in chosen):
                continue
            if site and extra.argument == "since":
                continue  # --since narrows the site's window too
            owners = " or ".join(v.option.option for v in views if extra in v.extras)
            raise click.UsageError(f"{extra.option} goes with {owners}")

    def work(cmd: Command) -> Outcome:
        if chosen:
            view = chosen[0]
            payload, code = view.build(cmd, values[view.option.argument], args)
            return Outcome(code, payload, lambda: view.render(payload))
        spark = cmd.session()
        if site is not None:
            from provisioning.views.site import build_site

            with job_label(spark, "report: site"):
                payload = build_site(
                    spark, cmd.view_kinds, cmd.conf, Path(site),
                    [c.name for c in select_clusters(cmd.conf, clusters)],
                    values.get("since") or SITE_DAYS,
                    cmd.conf.tables.inventory, cmd.conf.tables.disks)
            return Outcome(0, payload, lambda: [
                f"site written to {payload['site']}: {payload['files']} files "
                f"({payload['runs']} runs, {payload['topics']} topics, "
                f"{' to '.join(payload['days']) or 'no run yet'})"])
        if run_id is not None:
            with job_label(spark, "report: run-id"):
                payload = run_view(spark, cmd.view_kinds, cmd.conf, run_id, clusters, topics_glob,
                                   limit)
            return Outcome(0, payload, lambda: render_run_view(cmd.view_kinds, payload))
        with job_label(spark, "report: recent runs"):
            payload = recent_runs(spark, cmd.conf, limit)
        return Outcome(0, payload, lambda: render_recent_runs(payload))

    execute("report", KINDS, conf_path, as_json, verbose, {}, work, records_run=False)


def _report_command() -> click.Command:
    fn: Callable[..., None] = _report
    fn = click.option("--limit", default=20, show_default=True,
                      help="How many runs to show (with --run-id: 50 audit rows per unit).")(fn)
    switches = list(dict.fromkeys(s for v in _views() for s in (v.option, *v.extras)))
    for switch in reversed(switches):
        fn = click.option(switch.option, switch.argument, is_flag=switch.is_flag,
                          default=False if switch.is_flag else None, metavar=switch.metavar,
                          type=switch.type, help=switch.help)(fn)
    fn = click.option("--site", default=None, metavar="DIR",
                      help="Write the audit as a static site into DIR (overview, runs, "
                           "topics, findings, inventory), from the tables; with --since "
                           f"DAYS (default {SITE_DAYS}) and --cluster.")(fn)
    fn = click.option("--run-id", default=None, help="Show this run's outcomes.")(fn)
    fn = common_options(fn)
    return click.command("report", help=(
        "Show recent runs, one run's outcomes (every kind's rows), or one of the views "
        "below."))(fn)


report = _report_command()
