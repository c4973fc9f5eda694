"""`maintain`: compact the job's tables, drop expired snapshot rows, VACUUM old files."""

from __future__ import annotations

import click

from provisioning.cli.common import (
    emit,
    fail,
    finish,
    load,
    remote_option,
    session,
    setup_logging,
)
from provisioning.results import RunRecord, new_run_id, utc_now


@click.command()
@click.option("--conf", "conf_path", required=True, type=click.Path(dir_okay=False),
              help="The environment's YAML conf.")
@click.option("--no-optimize", is_flag=True, help="Skip compaction; only prune and VACUUM.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--verbose", is_flag=True, help="Log every step in detail.")
@remote_option
def maintain(conf_path: str, no_optimize: bool, as_json: bool, verbose: bool) -> None:
    """Compact the job's tables, drop expired snapshot rows, VACUUM old files."""
    from provisioning.delta.maintenance import maintain_tables

    setup_logging(verbose)
    conf = load(conf_path)
    record = RunRecord(new_run_id(), "maintain", {"optimize": not no_optimize}, conf.digest)
    spark = None
    try:
        spark = session(conf)
        done = maintain_tables(spark, conf, utc_now(), optimize=not no_optimize)
    except Exception as exc:  # anticipated errors exit 2-4, the rest 5 (README)
        fail(spark, conf, record, exc, as_json)
    record.outcome_counts = {
        "files_compacted": sum(max(t.files_before - t.files_after, 0) for t in done),
        "snapshot_rows_deleted": sum(t.rows_deleted for t in done),
        "files_vacuumed": sum(t.files_vacuumed for t in done)}
    finish(spark, conf, record, "succeeded", 0)

    def human() -> None:
        click.echo(f"maintain {record.run_id} (VACUUM retains "
                   f"{conf.maintenance.vacuum_retain_hours} h)")
        for t in done:
            click.echo(f"  {t.role} {t.table}: {t.files_before} -> {t.files_after} file(s), "
                       f"{t.rows_deleted} row(s) deleted, {t.files_vacuumed} file(s) vacuumed"
                       + (f", collated column(s) {', '.join(t.retyped_columns)} rewritten as "
                          "plain types" if t.retyped_columns else ""))

    emit(as_json, {"run_id": record.run_id, "tables": [t.as_dict() for t in done]}, human)
