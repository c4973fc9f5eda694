"""`maintain`: compact the job's tables, drop expired snapshot rows, VACUUM old files."""

from __future__ import annotations

import click

from provisioning.cli.common import (
    Command,
    Outcome,
    conf_option,
    execute,
    json_option,
    remote_option,
    verbose_option,
)
from provisioning.registry import KINDS
from provisioning.results import utc_now


@click.command()
@conf_option
@click.option("--no-optimize", is_flag=True, help="Skip compaction; only prune and VACUUM.")
@json_option
@verbose_option
@remote_option
def maintain(conf_path: str, no_optimize: bool, as_json: bool, verbose: bool) -> None:
    """Compact the job's tables, drop expired snapshot rows, VACUUM old files."""

    def work(cmd: Command) -> Outcome:
        from provisioning.delta.maintenance import maintain_tables

        done = maintain_tables(cmd.session(), cmd.conf, utc_now(), optimize=not no_optimize)
        assert cmd.record is not None
        cmd.record.outcome_counts = {
            "files_compacted": sum(max(t.files_before - t.files_after, 0) for t in done),
            "snapshot_rows_deleted": sum(t.rows_deleted for t in done),
            "files_vacuumed": sum(t.files_vacuumed for t in done)}

        def human() -> list[str]:
            assert cmd.record is not None
            lines = [f"maintain {cmd.record.run_id} (VACUUM retains "
                     f"{cmd.conf.maintenance.vacuum_retain_hours} h)"]
            for t in done:
                lines.append(
                    f"  {t.role} {t.table}: {t.files_before} -> {t.files_after} file(s), "
                    f"{t.rows_deleted} row(s) deleted, {t.files_vacuumed} file(s) vacuumed"
                    + (f", collated column(s) {', '.join(t.retyped_columns)} rewritten as "
                       "plain types" if t.retyped_columns else ""))
            return lines

        return Outcome(0, {"tables": [t.as_dict() for t in done]}, human)

    execute("maintain", KINDS, conf_path, as_json, verbose, {"optimize": not no_optimize}, work)
