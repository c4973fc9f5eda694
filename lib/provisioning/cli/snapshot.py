"""`snapshot`: record the live state of each cluster; change nothing."""

from __future__ import annotations

import os

import click

from provisioning.cli.common import (
    common_options,
    emit,
    fail,
    finish,
    load,
    session,
    setup_logging,
)
from provisioning.conf import resolve_credentials, select_clusters
from provisioning.results import RunRecord, new_run_id


@click.command()
@common_options
def snapshot(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None,
             as_json: bool, verbose: bool) -> None:
    """Record the live state of each cluster; changes nothing."""
    from provisioning.run.commands import take_snapshot

    setup_logging(verbose)
    conf = load(conf_path)
    record = RunRecord(new_run_id(), "snapshot",
                       {"clusters": list(clusters), "topics": topics_glob}, conf.digest)
    spark = None
    try:
        selected = select_clusters(conf, clusters)
        credentials = resolve_credentials(conf, os.environ)
        spark = session(conf)
        summaries = take_snapshot(spark, conf, selected, credentials, record)
    except Exception as exc:  # anticipated errors exit 2-4, the rest 5 (README)
        fail(spark, conf, record, exc)
    finish(spark, conf, record, "succeeded", 0)

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

    emit(as_json, {"run_id": record.run_id, "clusters": [s.as_dict() for s in summaries]},
         human)
