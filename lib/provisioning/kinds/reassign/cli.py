"""The replica moves' part of the command line (`cli.kind`): `apply --allow-reassign` and
`report --reassignments` (read live from each cluster)."""

from __future__ import annotations

from typing import Any

from provisioning.cli.common import Command
from provisioning.cli.kind import CliKind, Flag, ReportArgs, ReportView, Switch
from provisioning.conf import select_clusters
from provisioning.kinds.reassign.names import ALLOW


def _in_flight(cmd: Command, _on: bool, args: ReportArgs) -> tuple[dict[str, Any], int]:
    from provisioning.kinds.reassign.in_flight import reassignments_in_flight
    from provisioning.kinds.reassign.view import reassignments_view

    blocks = reassignments_in_flight(select_clusters(cmd.conf, args.clusters),
                                     cmd.credentials(), cmd.conf.kafka)
    # A cluster that could not be read is the exit code of an unreachable one.
    return reassignments_view(blocks, args.topics_glob), 3 if any(
        b["error"] for b in blocks) else 0


def _render(payload: Any) -> list[str]:
    from provisioning.kinds.reassign.view import render_reassignments

    return render_reassignments(payload)


class ReassignCli(CliKind):
    name = "reassign"
    apply_flags = (
        Flag(ALLOW, "Also move replicas as the manifests ask (replication factor, "
                         "replica_assignment), throttled, and finish the moves under way; off "
                         "by default: planned and checked only."),
    )
    report_views = (
        ReportView(Switch("--reassignments", "List the partition reassignments in flight on "
                                             "each cluster, read live from Kafka, with the "
                                             "bytes each still has to copy."),
                   _in_flight, _render),
    )


CLI = ReassignCli()
