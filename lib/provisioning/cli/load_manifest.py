"""Write a manifest file (YAML or JSON list of rows) to a Delta manifest table.

    ./spark-submit.sh jobs/load_manifest.py --source manifest.yaml --table warehouse/desired_topics

Teams that keep manifests in git use this to publish them; the table is
overwritten as one commit, so its Delta history is the manifest's history. `--kind`
chooses whose manifest it is (every kind with manifest files: `CliKind.manifest_kind`).
"""

from __future__ import annotations

from pathlib import Path

import click

from provisioning.cli.common import (
    Command,
    Outcome,
    execute,
    json_option,
    remote_option,
    verbose_option,
)
from provisioning.registry import KINDS

_KINDS = {k.cli.manifest_kind: k.cli for k in KINDS if k.cli.manifest_kind is not None}



@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--source", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The manifest file: a YAML or JSON list of rows.")
@click.option("--table", required=True, help="Delta path or catalog table name.")
@click.option("--mode", type=click.Choice(["overwrite", "append"]), default="overwrite",
              show_default=True,
              help="overwrite: the file becomes the whole table; append: its rows are added.")
@click.option("--kind", type=click.Choice(list(_KINDS)), default=next(iter(_KINDS)),
              show_default=True, help="Whose manifest the file holds.")
@remote_option
@json_option
@verbose_option
def main(source: str, table: str, mode: str, kind: str, as_json: bool, verbose: bool) -> None:
    """Load a manifest file (topics, or another kind's rows) into a Delta table."""

    def work(cmd: Command) -> Outcome:
        from provisioning.delta.manifests import write_manifest

        rows, schema = _KINDS[kind].manifest_rows(Path(source))
        version = write_manifest(cmd.session(), rows, table, mode, schema)
        return Outcome(0, {"table": table, "rows": len(rows), "version": version},
                       lambda: [f"wrote {len(rows)} manifest row(s) to {table} "
                                f"(version {version})"])

    execute("load_manifest", KINDS, None, as_json, verbose, {}, work, records_run=False)
