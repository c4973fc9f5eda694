"""`report`: recent runs, one run, a topic's history, drift, unmanaged topics, the trend of
check's violations, read from the Delta tables; the reassignments in flight, read live."""

from __future__ import annotations

import click

from provisioning.cli.common import Command, Outcome, common_options, execute
from provisioning.conf import select_clusters
from provisioning.errors import UsageError
from provisioning.views.report import build_report, reassignments_view, render_report


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
@click.option("--reassignments", is_flag=True,
              help="List the partition reassignments in flight on each cluster, read live "
                   "from Kafka, with the bytes each still has to copy.")
@click.option("--since", "since_days", type=click.IntRange(min=1), default=None,
              metavar="DAYS", help="With --violations: only the last DAYS days.")
@click.option("--limit", default=20, show_default=True, help="How many runs or rows to show.")
def report(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None, as_json: bool,
           verbose: bool, run_id: str | None, topic: str | None, drift: bool,
           unmanaged: bool, unmanaged_acls: bool, orphaned_acls: bool, violations: bool,
           reassignments: bool, since_days: int | None, limit: int) -> None:
    """Show recent runs, one run's outcomes, a topic's history, drift across clusters, the
    unmanaged topics, the trend of check's violations or the reassignments in flight."""

    def work(cmd: Command) -> Outcome:
        if reassignments:
            return in_flight(cmd)
        payload = build_report(cmd.session(), cmd.conf, run_id=run_id, topic=topic,
                               clusters=clusters, limit=limit, drift=drift,
                               topics_glob=topics_glob, unmanaged=unmanaged,
                               violations=violations, since_days=since_days,
                               unmanaged_acls=unmanaged_acls, orphaned_acls=orphaned_acls)
        return Outcome(0, payload, lambda: render_report(payload))

    def in_flight(cmd: Command) -> Outcome:
        from provisioning.kafka.in_flight import reassignments_in_flight

        others = [name for name, on in (("--run-id", run_id), ("--topic", topic),
                                        ("--drift", drift), ("--unmanaged", unmanaged),
                                        ("--violations", violations), ("--since", since_days),
                                        ("--unmanaged-acls", unmanaged_acls),
                                        ("--orphaned-acls", orphaned_acls)) if on]
        if others:
            raise UsageError(f"--reassignments goes alone; got it with {' and '.join(others)}")
        blocks = reassignments_in_flight(select_clusters(cmd.conf, clusters),
                                         cmd.credentials(), cmd.conf.kafka)
        payload = reassignments_view(blocks, topics_glob)
        # A cluster that could not be read is the exit code of an unreachable one.
        code = 3 if any(b["error"] for b in blocks) else 0
        return Outcome(code, payload, lambda: render_report(payload))

    execute("report", conf_path, as_json, verbose, {}, work, records_run=False)
