"""`report`: recent runs, one run, a topic's history, drift, unmanaged topics, the trend of
check's violations; read from the Delta tables."""

from __future__ import annotations

import click

from provisioning.cli.common import Command, Outcome, common_options, execute
from provisioning.views.report import build_report, render_report


@click.command()
@common_options
@click.option("--run-id", default=None, help="Show this run's outcomes.")
@click.option("--topic", default=None, help="Show this topic's history across runs.")
@click.option("--drift", is_flag=True,
              help="Show the topics whose latest plan found drift, per cluster.")
@click.option("--unmanaged", is_flag=True,
              help="List the live topics no manifest names (latest snapshot per cluster).")
@click.option("--unmanaged-acls", is_flag=True,
              help="List the live ACL bindings no ACL manifest names (latest ACL snapshot "
                   "per cluster).")
@click.option("--orphaned-acls", is_flag=True,
              help="List the LITERAL TOPIC bindings that name no live topic.")
@click.option("--violations", is_flag=True,
              help="Show check's violations per rule per day (each day's last check run) "
                   "and when each topic started and stopped breaking a rule.")
@click.option("--since", "since_days", type=click.IntRange(min=1), default=None,
              metavar="DAYS", help="With --violations: only the last DAYS days.")
@click.option("--limit", default=20, show_default=True, help="How many runs or rows to show.")
def report(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None, as_json: bool,
           verbose: bool, run_id: str | None, topic: str | None, drift: bool,
           unmanaged: bool, unmanaged_acls: bool, orphaned_acls: bool, violations: bool,
           since_days: int | None, limit: int) -> None:
    """Show recent runs, one run's outcomes, a topic's history, drift across clusters, the
    unmanaged topics or the trend of check's violations."""

    def work(cmd: Command) -> Outcome:
        payload = build_report(cmd.session(), cmd.conf, run_id=run_id, topic=topic,
                               clusters=clusters, limit=limit, drift=drift,
                               topics_glob=topics_glob, unmanaged=unmanaged,
                               violations=violations, since_days=since_days,
                               unmanaged_acls=unmanaged_acls, orphaned_acls=orphaned_acls)
        return Outcome(0, payload, lambda: render_report(payload))

    execute("report", conf_path, as_json, verbose, {}, work, records_run=False)
