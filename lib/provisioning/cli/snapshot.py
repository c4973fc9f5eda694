"""`snapshot`: record the live state of each cluster; change nothing."""

from __future__ import annotations

import click

from provisioning.cli.common import Command, Outcome, common_options, execute
from provisioning.conf import select_clusters
from provisioning.errors import UsageError
from provisioning.registry import KINDS


@click.command()
@common_options
def snapshot(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None,
             as_json: bool, verbose: bool) -> None:
    """Record the live state of each cluster; changes nothing."""

    def work(cmd: Command) -> Outcome:
        from provisioning.run.commands import take_snapshot

        if topics_glob is not None:
            # `report --unmanaged` reads each cluster's latest snapshot as its whole listing.
            raise UsageError("snapshot records every topic of each cluster: --topics is "
                             "refused (narrow the views instead: report --unmanaged --topics)")
        selected = select_clusters(cmd.conf, clusters)
        credentials = cmd.credentials()
        assert cmd.record is not None
        summaries = take_snapshot(cmd.session(), cmd.run_kinds, cmd.conf, selected,
                                  credentials, cmd.record, cmd.stop)["topics"]

        def human() -> list[str]:
            assert cmd.record is not None
            lines = [f"snapshot {cmd.record.run_id}"]
            for s in summaries:
                lines.append(
                    f"  {s.cluster} (id {s.cluster_id}): {s.brokers} broker(s), {s.topics} "
                    f"topic(s) ({s.internal_topics} internal), {s.partitions} partition(s), "
                    + (f"{s.topics_in_use} in use by consumer groups"
                       if s.topics_in_use is not None
                       else "topics in use by consumer groups unknown (not every group "
                            "could be read)")
                    + (f", {s.undescribable_topics} not describable"
                       if s.undescribable_topics else ""))
            lines.append(f"  recorded in {cmd.conf.tables.snapshots}")
            return lines

        return Outcome(0, {"clusters": [s.as_dict() for s in summaries]}, human)

    execute("snapshot", KINDS, conf_path, as_json, verbose,
            {"clusters": list(clusters), "topics": topics_glob}, work)
