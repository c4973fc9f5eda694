"""The ACL bindings' part of the command line (`cli.kind`): `apply --allow-revokes`,
`import --acls`, the `report` views of the live bindings left alone (`--unmanaged-acls`,
`--orphaned-acls`), and ACL manifest files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from provisioning.cli.common import Command, Outcome
from provisioning.cli.kind import CliKind, Flag, ReportArgs, ReportView, Switch
from provisioning.cli.manifest_file import read_rows
from provisioning.session import job_label
from schemas import ACL_MANIFEST, column_names


def load_acl_manifest_file(path: str | Path) -> list[tuple[Any, ...]]:
    """ACL_MANIFEST rows, in column order (`conf.acls.AclManifestRow`); shape errors
    reported all at once by row and key (whether a binding makes sense is the job's call,
    as data)."""
    from provisioning.conf.acls import AclManifestRow

    rows = read_rows(path, "ACL", AclManifestRow, lambda item: repr(item.get("principal")))
    return [tuple(row[c] for c in column_names(ACL_MANIFEST)) for row in rows]


def _bindings(kind: str) -> Any:
    def build(cmd: Command, _on: bool, args: ReportArgs) -> tuple[dict[str, Any], int]:
        from provisioning.views.acls import acl_view

        spark = cmd.session()
        with job_label(spark, f"report: {kind}-acls"):
            return acl_view(spark, cmd.conf, args.clusters, kind), 0
    return build


def _render(kind: str) -> Any:
    def render(payload: Mapping[str, Any]) -> list[str]:
        from provisioning.views.acls import render_acl_view

        return render_acl_view(payload, kind)
    return render


class AclsCli(CliKind):
    name = "acls"
    apply_flags = (
        Flag("revokes", "Also revoke the ACL bindings the ACL manifests mark `absent` (and, "
                        "with acls.remove_unlisted, those no manifest names); off by default: "
                        "planned and counted only."),
    )
    import_option = Switch("--acls", "Import the live ACL bindings (as ACL manifest rows) "
                                     "instead of topics.")
    report_views = (
        ReportView(Switch("--unmanaged-acls", "List the live ACL bindings no ACL manifest "
                                              "names (latest ACL snapshot per cluster)."),
                   _bindings("unmanaged"), _render("unmanaged")),
        ReportView(Switch("--orphaned-acls", "List the LITERAL TOPIC bindings that name no "
                                             "live topic."),
                   _bindings("orphaned"), _render("orphaned")),
    )
    manifest_kind = "acls"

    def imports(self) -> bool:
        return True

    def import_arguments(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {"acls": True}

    def import_outcome(self, cmd: Command, table: str, imported: Any) -> Outcome:
        record = cmd.record
        assert record is not None
        payload = dict(imported)

        def human() -> list[str]:
            total = sum(c["rows_written"] for c in payload["clusters"])
            lines = [f"import {record.run_id}: {total} ACL manifest row(s) written to {table} "
                     f"(version {payload['table_version']})"]
            for c in payload["clusters"]:
                line = (f"  cluster {c['cluster']}: {c['rows_written']} row(s), "
                        f"{c['bindings_written']} binding(s)")
                if c["left_out_managed"]:
                    line += f"; left out {c['left_out_managed']} already named by a manifest"
                if c["error_name"]:
                    line += f"; none read: {c['error_message']}"
                lines.append(line)
            lines.append("next: review the table, then add it to tables.acl_manifests and run "
                         "plan: every imported binding plans as NOOP")
            return lines

        return Outcome(0, payload, human)

    def manifest_rows(self, path: Path) -> tuple[Sequence[tuple[Any, ...]], Any]:
        return load_acl_manifest_file(path), ACL_MANIFEST


KIND = AclsCli()
