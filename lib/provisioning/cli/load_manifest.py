"""Write a manifest file (YAML or JSON list of rows) to a Delta manifest table.

    ./spark-submit.sh jobs/load_manifest.py --source manifest.yaml --table warehouse/desired_topics

Teams that keep manifests in git use this to publish them; the table is
overwritten as one commit, so its Delta history is the manifest's history.
"""

from __future__ import annotations

import sys

import click

from provisioning.cli.manifest_file import load_manifest_file
from provisioning.errors import UnexpectedError
from provisioning.session import build_session


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--source", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--table", required=True, help="Delta path or catalog table name.")
@click.option("--mode", type=click.Choice(["overwrite", "append"]), default="overwrite")
@click.option("--remote", envvar="SPARK_REMOTE", default=None, metavar="sc://HOST:PORT",
              help="Write through this Spark Connect server (default: $SPARK_REMOTE).")
def main(source: str, table: str, mode: str, remote: str | None) -> None:
    """Load a manifest file into a Delta table."""
    try:
        rows = load_manifest_file(source)
    except Exception as error:  # anticipated errors exit 2-4, the rest 5 (README)
        exc = UnexpectedError.of(error)
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    from provisioning.delta.manifests import write_manifest

    try:
        spark = build_session("load-manifest", remote=remote)
        version = write_manifest(spark, rows, table, mode)
    except Exception as error:
        exc = UnexpectedError.of(error)
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    click.echo(f"wrote {len(rows)} manifest row(s) to {table} (version {version})")
