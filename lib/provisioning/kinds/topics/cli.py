"""The topics' part of the command line (`cli.kind`): `apply --allow-deletes` and
`--allow-alter`, the topic `import` and its switches, the topic views of `report`, and topic
manifest files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from provisioning.cli.common import Command, Outcome
from provisioning.cli.kind import CliKind, Flag, ReportArgs, ReportView, Switch
from provisioning.cli.manifest_file import read_rows
from provisioning.names import ALLOW_ALTER, ALLOW_DELETES
from provisioning.session import job_label
from schemas import MANIFEST, column_names


def load_manifest_file(path: str | Path) -> list[tuple[Any, ...]]:
    """Rows in MANIFEST column order (`kinds.topics.conf.TopicManifestRow`); shape errors are
    reported all at once by row and key.

    Only the shape is checked here (a number where a number goes); whether a
    row makes sense is decided by the job, as data, so one bad row never
    stops the others.
    """
    from provisioning.kinds.topics.conf import TopicManifestRow

    rows = read_rows(path, "topic", TopicManifestRow, lambda item: repr(item.get("topic")))
    return [tuple(row[c] for c in column_names(MANIFEST)) for row in rows]


def _history(cmd: Command, topic: str, args: ReportArgs) -> tuple[dict[str, Any], int]:
    from provisioning.kinds.topics.report import history_view

    spark = cmd.session()
    with job_label(spark, "report: topic"):
        return history_view(spark, cmd.view_kinds, cmd.conf, topic, args.clusters,
                            args.topics_glob), 0


def _drift(cmd: Command, _on: bool, args: ReportArgs) -> tuple[dict[str, Any], int]:
    from provisioning.kinds.topics.report import drift_report

    spark = cmd.session()
    with job_label(spark, "report: drift"):
        return drift_report(spark, cmd.conf, args.clusters, args.topics_glob), 0


def _unmanaged(cmd: Command, _on: bool, args: ReportArgs) -> tuple[dict[str, Any], int]:
    from provisioning.kinds.topics.report import unmanaged_view

    spark = cmd.session()
    with job_label(spark, "report: unmanaged"):
        return unmanaged_view(spark, cmd.conf, args.clusters, args.topics_glob), 0


def _violations(cmd: Command, _on: bool, args: ReportArgs) -> tuple[dict[str, Any], int]:
    from provisioning.kinds.topics.report import violations_trend

    spark = cmd.session()
    with job_label(spark, "report: violations"):
        return violations_trend(spark, cmd.conf, args.clusters, args.values.get("since"),
                                args.topics_glob), 0


def _inventory(cmd: Command, _on: bool, args: ReportArgs) -> tuple[dict[str, Any], int]:
    from provisioning.kinds.topics.inventory import inventory_view

    spark = cmd.session()
    with job_label(spark, "report: inventory"):
        return inventory_view(spark, cmd.conf, args.clusters, bool(args.values.get("idle")),
                              args.values.get("largest"), args.values.get("since"),
                              args.topics_glob), 0


def _render_inventory(payload: Mapping[str, Any]) -> list[str]:
    from provisioning.kinds.topics.inventory import render_inventory

    return render_inventory(payload)


SINCE = Switch("--since", "With --violations or --inventory: only the last DAYS days.",
               is_flag=False, metavar="DAYS", type=click.IntRange(min=1))


def _render(name: str) -> Any:
    def render(payload: Mapping[str, Any]) -> list[str]:
        from provisioning.kinds.topics import report
        from provisioning.views.check import render_trend

        if name == "violations":
            return render_trend(payload["violations"]["days"], payload["violations"]["spans"])
        return list(getattr(report, f"render_{name}")(payload))
    return render


class TopicsCli(CliKind):
    name = "topics"
    apply_flags = (
        Flag(ALLOW_DELETES, "Also delete the topics the manifests mark `absent` (off by default)."),
        Flag(ALLOW_ALTER, "Also change live topics (configs, more partitions) as the "
                          "manifests ask (off by default: planned and validated only)."),
    )
    import_switches = (
        Switch("--with-assignment", "Also write each topic's replica assignment (default: "
                                    "null, any assignment accepted)."),
        Switch("--include-protected", "Also import internal topics and the ones the delete "
                                      "policies protect."),
    )
    import_only = (("topics_glob", "--topics"),)
    report_views = (
        ReportView(Switch("--topic", "Show this topic's history across runs.", is_flag=False),
                   _history, _render("history")),
        ReportView(Switch("--drift", "Show the topics whose latest plan found drift, per "
                                     "cluster."), _drift, _render("drift")),
        ReportView(Switch("--unmanaged", "List the live topics no manifest names (latest "
                                         "snapshot per cluster)."),
                   _unmanaged, _render("unmanaged")),
        ReportView(Switch("--violations", "Show check's violations per rule per day (each "
                                          "day's last check run) and when each topic "
                                          "started and stopped breaking a rule."),
                   _violations, _render("violations"), extras=(SINCE,)),
        ReportView(Switch("--inventory", "Show what the clusters hold and who uses it, from "
                                         "check's inventory: per cluster its bytes, topics "
                                         "and brokers' disks, the largest topics, the idle "
                                         "and empty ones (with --since: bytes and records "
                                         "per day)."),
                   _inventory, _render_inventory,
                   extras=(SINCE,
                           Switch("--idle", "With --inventory: only the idle topics."),
                           Switch("--largest", "With --inventory: how many of the largest "
                                               "topics to list (default 10).",
                                  is_flag=False, metavar="N", type=click.IntRange(min=1)))),
    )
    manifest_kind = "topics"

    def imports(self) -> bool:
        return True

    def import_arguments(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {"topics": values.get("topics_glob"),
                "with_assignment": bool(values.get("with_assignment")),
                "include_protected": bool(values.get("include_protected"))}

    def import_outcome(self, cmd: Command, table: str, imported: Any) -> Outcome:
        record = cmd.record
        assert record is not None
        summaries = list(imported)
        version = record.outcome_counts.get("table_version")

        def human() -> list[str]:
            total = sum(s.rows_written for s in summaries)
            lines = [f"import {record.run_id}: {total} manifest row(s) written to {table} "
                     f"(version {version})"]
            for s in summaries:
                left_out = []
                if s.left_out_managed:
                    left_out.append(f"{s.left_out_managed} already named by a manifest")
                if s.left_out_protected:
                    left_out.append(f"{s.left_out_protected} internal or protected "
                                    "(--include-protected imports them)")
                if s.left_out_undescribable:
                    left_out.append(f"{s.left_out_undescribable} not describable by this "
                                    "principal")
                lines.append(f"  cluster {s.cluster}: {s.rows_written} row(s)"
                             + (f"; left out {', '.join(left_out)}" if left_out else ""))
            lines.append("next: review the table, then add it to tables.manifests and run "
                         "plan: every imported topic plans as NOOP")
            return lines

        return Outcome(0, {"table": table, "table_version": version,
                           "clusters": [s.as_dict() for s in summaries]}, human)

    def manifest_rows(self, path: Path) -> tuple[Sequence[tuple[Any, ...]], Any]:
        return load_manifest_file(path), MANIFEST


CLI = TopicsCli()
