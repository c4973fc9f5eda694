"""`check`: judge every live topic (managed or not) against the policies and Kafka's health
rules; record the violations; change nothing."""

from __future__ import annotations

from typing import Any

import click

from provisioning.cli.common import Command, Outcome, common_options, execute
from provisioning.conf import select_clusters
from provisioning.names import ERROR, SEVERITIES
from provisioning.registry import KINDS

FORMATS = ("text", "markdown")


@click.command()
@common_options
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text",
              show_default=True,
              help="text: counts per cluster and rule, then the errors; markdown: a table "
                   "for a pull request or a ticket.")
def check(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None, as_json: bool,
          verbose: bool, output_format: str) -> None:
    """Judge every live topic that is not internal, managed or not, against the configured
    create policies and the health rules; record one row per violation in
    tables.violations. Changes nothing on Kafka and takes no lock. Exit 1 when an `error`
    violation is found."""

    def work(cmd: Command) -> Outcome:
        from provisioning.run.commands import run_check
        from provisioning.run.options import CheckOptions, Scope
        from provisioning.views.check import check_markdown, in_order, render_check

        selected = select_clusters(cmd.conf, clusters)
        assert cmd.record is not None
        rows = in_order(run_check(
            cmd.session(), cmd.run_kinds, cmd.conf, selected, cmd.credentials(), cmd.record,
            CheckOptions(scope=Scope(tuple(c.name for c in selected), topics_glob)),
            cmd.stop))
        judged = [c.name for c in selected]
        counts = {s: sum(1 for r in rows if r["severity"] == s) for s in SEVERITIES}

        def human() -> list[str]:
            if output_format == "markdown":
                return check_markdown(rows, judged)
            return [*render_check(rows, judged),
                    f"recorded in {cmd.conf.tables.violations}"]

        payload: dict[str, Any] = {"clusters": judged, "counts": counts,
                                   "violations": [dict(r) for r in rows]}
        return Outcome(1 if counts[ERROR] else 0, payload, human)

    execute("check", KINDS, conf_path, as_json, verbose,
            {"clusters": list(clusters), "topics": topics_glob, "format": output_format},
            work)
