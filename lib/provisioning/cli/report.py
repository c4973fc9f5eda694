"""`report`: recent runs, one run, a topic's history, drift, unmanaged topics; read from
the Delta tables."""

from __future__ import annotations

import sys

import click

from provisioning.cli.common import common_options, emit, load, session, setup_logging
from provisioning.errors import UnexpectedError
from provisioning.views.report import build_report, render_report


@click.command()
@common_options
@click.option("--run-id", default=None, help="Show this run's outcomes.")
@click.option("--topic", default=None, help="Show this topic's history across runs.")
@click.option("--drift", is_flag=True,
              help="Show the topics whose latest plan found drift, per cluster.")
@click.option("--unmanaged", is_flag=True,
              help="List the live topics no manifest names (latest snapshot per cluster).")
@click.option("--limit", default=20, show_default=True, help="How many runs or rows to show.")
def report(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None, as_json: bool,
           verbose: bool, run_id: str | None, topic: str | None, drift: bool,
           unmanaged: bool, limit: int) -> None:
    """Show recent runs, one run's outcomes, a topic's history, drift across clusters or the
    unmanaged topics."""
    setup_logging(verbose)
    conf = load(conf_path)
    try:
        payload = build_report(session(conf), conf, run_id=run_id, topic=topic,
                               clusters=clusters, limit=limit, drift=drift,
                               topics_glob=topics_glob, unmanaged=unmanaged)
    except Exception as error:  # anticipated errors exit 2-4, the rest 5 (README)
        exc = UnexpectedError.of(error)
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    emit(as_json, payload, lambda: click.echo("\n".join(render_report(payload))))
