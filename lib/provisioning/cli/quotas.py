"""The client quotas' part of the command line (`cli.kind`): `apply --allow-quota-removals`,
`import --quotas`, `report --unmanaged-quotas`, and quota manifest files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from provisioning.cli.common import Command, Outcome
from provisioning.cli.kind import CliKind, Flag, ReportArgs, ReportView, Switch
from provisioning.cli.manifest_file import read_rows
from provisioning.session import job_label
from schemas.quotas import ENTITY_COLUMNS, QUOTA_MANIFEST


def load_quota_manifest_file(path: str | Path) -> list[tuple[Any, ...]]:
    """QUOTA_MANIFEST rows, in column order (`conf.quotas.QuotaManifestRow`); shape errors
    reported all at once by row and key (whether an entity or a key makes sense is the
    job's call, as data)."""
    from provisioning.conf.quotas import QuotaManifestRow

    rows = read_rows(path, "quota", QuotaManifestRow, _entity)
    return [tuple(row[f.name] for f in QUOTA_MANIFEST.fields) for row in rows]


def _entity(item: Mapping[str, Any]) -> str:
    entity = " ".join(f"{c}={item[c]}" for c in ENTITY_COLUMNS if item.get(c) is not None)
    return entity or "no entity"


def _unmanaged(cmd: Command, _on: bool, args: ReportArgs) -> tuple[dict[str, Any], int]:
    from provisioning.views.quotas import unmanaged_quota_view

    spark = cmd.session()
    with job_label(spark, "report: unmanaged-quotas"):
        return unmanaged_quota_view(spark, cmd.conf, args.clusters), 0


def _render(payload: Mapping[str, Any]) -> list[str]:
    from provisioning.views.quotas import render_unmanaged_quotas

    return render_unmanaged_quotas(payload)


class QuotasCli(CliKind):
    name = "quotas"
    apply_flags = (
        Flag("quota-removals", "Also remove the client quotas the quota manifests mark "
                               "`absent` (and, with quotas.remove_unlisted, those no manifest "
                               "lists); off by default: planned, validated and counted only."),
    )
    import_option = Switch("--quotas", "Import the live client quotas (as quota manifest "
                                       "rows) instead of topics.")
    report_views = (
        ReportView(Switch("--unmanaged-quotas", "List the live client quotas no quota "
                                                "manifest lists (latest quota snapshot per "
                                                "cluster)."),
                   _unmanaged, _render),
    )
    manifest_kind = "quotas"

    def imports(self) -> bool:
        return True

    def import_arguments(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {"quotas": True}

    def import_outcome(self, cmd: Command, table: str, imported: Any) -> Outcome:
        record = cmd.record
        assert record is not None
        payload = dict(imported)

        def human() -> list[str]:
            total = sum(c["rows_written"] for c in payload["clusters"])
            lines = [f"import {record.run_id}: {total} quota manifest row(s) written to "
                     f"{table} (version {payload['table_version']})"]
            for c in payload["clusters"]:
                line = (f"  cluster {c['cluster']}: {c['rows_written']} row(s), "
                        f"{c['quotas_written']} quota(s)")
                if c["left_out_managed"]:
                    line += f"; left out {c['left_out_managed']} already named by a manifest"
                if c["error_name"]:
                    line += f"; none read: {c['error_message']}"
                lines.append(line)
            lines.append("next: review the table, then add it to tables.quota_manifests and "
                         "run plan: every imported quota plans as NOOP")
            return lines

        return Outcome(0, payload, human)

    def manifest_rows(self, path: Path) -> tuple[Sequence[tuple[Any, ...]], Any]:
        return load_quota_manifest_file(path), QUOTA_MANIFEST


KIND = QuotasCli()
