"""An entity kind's part of the command line, written once (see `transforms.entity`): its
`import --<name>` and its output, its manifest files (`load_manifest --kind <name>`), and its
`report` views of the live entities a run leaves alone (`left_alone_report`).

A kind (`EntityCli`) names its views and conf section, what its removal is called, how a
manifest file's row is named in a problem (`row_label`), and its other report views; its
`apply --allow-<flag>`, `import --<name>` and `report --unmanaged-<name>` are the base's.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pyspark.sql.types import StructType

from provisioning.cli.common import Command, Outcome
from provisioning.cli.kind import CliKind, Flag, ReportArgs, ReportView, Switch
from provisioning.cli.manifest_file import read_rows
from provisioning.conf.section import Section
from provisioning.names import Nouns
from provisioning.session import job_label
from provisioning.views.entity import EntityView


def left_alone_report(view: EntityView, which: str, help: str) -> ReportView:
    """The `report --<which>-<name>` view of a kind's live entities its runs leave alone
    (`views.entity.LeftAloneView`), read from each cluster's latest snapshot."""
    nouns = view.model.nouns

    def build(cmd: Command, _on: bool, args: ReportArgs) -> tuple[dict[str, Any], int]:
        spark = cmd.session()
        with job_label(spark, f"report: {which}-{nouns.name}"):
            return view.left_alone_payload(spark, cmd.conf, args.clusters,
                                           view.left_alone_view(which)), 0

    def render(payload: Mapping[str, Any]) -> list[str]:
        lines: list[str] = view.render_left_alone(payload, view.left_alone_view(which))
        return lines

    return ReportView(Switch(f"--{which}-{nouns.name}", help), build, render)


class EntityCli(CliKind):
    """An entity kind's part of the command line (see the module docstring)."""

    # The kind's views (its model: its nouns and manifest table) and its conf section (the
    # model of its manifest files' rows).
    view: ClassVar[EntityView]
    section: ClassVar[Section]
    # Taken from its view's model.
    nouns: ClassVar[Nouns]
    manifest: ClassVar[StructType]
    # What its removal is called in the help of `apply --allow-<prefix>-removals` ("revoke").
    removal: ClassVar[str]
    # The help of its `--allow-*` flag, when it allows more than removals (else made from
    # `removal`).
    flag_help: ClassVar[str] = ""
    # The kind's other report views.
    more_views: ClassVar[tuple[ReportView, ...]] = ()
    # Whether it has live entities no manifest names (`import --<name>`, `report
    # --unmanaged-<name>`); a kind of requests has none.
    lists_unmanaged: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        n = cls.nouns = cls.view.model.nouns
        cls.manifest = cls.view.model.manifest
        cls.name = n.name
        # A kind whose manifest files are named otherwise than the kind says so in its body.
        cls.manifest_kind = cls.__dict__.get("manifest_kind") or n.name
        cls.apply_flags = (Flag(n.removals, cls.flag_help or (
            f"Also {cls.removal} the {n.title} the {n.noun} manifests mark `absent` (and, with "
            f"{n.name}.remove_unlisted, those no manifest names); off by default: planned, "
            "validated and counted only."), old=n.old_removals),)
        if not cls.lists_unmanaged:
            cls.import_option, cls.report_views = None, cls.more_views
            return
        cls.import_option = Switch(f"--{n.name}", f"Import the live {n.title} (as {n.noun} "
                                   "manifest rows) instead of topics.")
        cls.report_views = (left_alone_report(cls.view, "unmanaged", (
            f"List the live {n.title} no {n.noun} manifest names (latest {n.noun} snapshot "
            "per cluster).")), *cls.more_views)

    @abstractmethod
    def row_label(self, item: Mapping[str, Any]) -> str:
        """What names a manifest file's row in a problem."""

    def imports(self) -> bool:
        return True

    def import_arguments(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {self.name: True}

    def import_outcome(self, cmd: Command, table: str, imported: Any) -> Outcome:
        record = cmd.record
        assert record is not None
        payload, nouns = dict(imported), self.nouns

        def human() -> list[str]:
            total = sum(c["rows_written"] for c in payload["clusters"])
            lines = [f"import {record.run_id}: {total} {nouns.noun} manifest row(s) written "
                     f"to {table} (version {payload['table_version']})"]
            for c in payload["clusters"]:
                line = (f"  cluster {c['cluster']}: {c['rows_written']} row(s), "
                        f"{c[f'{nouns.many}_written']} {nouns.one}(s)")
                if c["left_out_managed"]:
                    line += f"; left out {c['left_out_managed']} already named by a manifest"
                if c["error_name"]:
                    line += f"; none read: {c['error_message']}"
                lines.append(line)
            lines.append(f"next: review the table, then add it to tables."
                         f"{nouns.manifests_key} and run plan: every imported {nouns.one} "
                         "plans as NOOP")
            return lines

        return Outcome(0, payload, human)

    def manifest_rows(self, path: Path) -> tuple[Sequence[tuple[Any, ...]], Any]:
        """A manifest file's rows, in column order (the kind's `Section.manifest_row`);
        shape errors reported all at once by row and key (whether a row makes sense is
        the job's call, as data)."""
        model = self.section.manifest_row
        assert model is not None
        rows = read_rows(path, self.nouns.noun, model, self.row_label)
        return [tuple(row[f.name] for f in self.manifest.fields) for row in rows], \
            self.manifest
