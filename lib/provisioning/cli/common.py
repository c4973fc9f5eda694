"""What every command shares: its common options, logging, output and the failure path."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from provisioning.conf import Conf, load_conf
from provisioning.delta.runs import write_run
from provisioning.errors import ClusterUnreachable, ProvisioningError, UnexpectedError
from provisioning.results import RunRecord
from provisioning.session import build_session, redact_remote

log = logging.getLogger("provisioning.cli")


def _keep_remote(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None and not value.startswith("sc://"):
        raise click.BadParameter(f"expected sc://HOST:PORT, got {redact_remote(value)!r}")
    ctx.meta[_REMOTE] = value


_REMOTE = "provisioning.remote"
remote_option = click.option(
    "--remote", envvar="SPARK_REMOTE", expose_value=False, callback=_keep_remote,
    metavar="sc://HOST:PORT",
    help="Run on this Spark Connect server (default: $SPARK_REMOTE, then the conf's "
         "spark.remote; none: classic Spark, as spark-submit started it).")


def common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options every run subcommand takes."""
    options = [
        remote_option,
        click.option("--conf", "conf_path", required=True,
                     type=click.Path(dir_okay=False), help="The environment's YAML conf."),
        click.option("--cluster", "clusters", multiple=True,
                     help="Only this cluster (repeatable); default: every cluster in the conf."),
        click.option("--topics", "topics_glob", default=None,
                     help="Only topics whose name matches this glob."),
        click.option("--json", "as_json", is_flag=True, help="Machine-readable output."),
        click.option("--verbose", is_flag=True, help="Log every phase in detail."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # kafka-python logs every failed connection attempt at ERROR; the job reports
    # failures itself (its credential-carrying DEBUG records are filtered in any case).
    logging.getLogger("kafka").setLevel(logging.WARNING if verbose else logging.CRITICAL)
    logging.getLogger("py4j").setLevel(logging.WARNING)


def load(conf_path: str) -> Conf:
    """The conf, or exit 2 with every problem it has."""
    try:
        return load_conf(conf_path, os.environ)
    except ProvisioningError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)


def emit(as_json: bool, payload: dict[str, Any], human: Callable[[], None]) -> None:
    """`payload` as one JSON line (printed last: spark-submit merges the driver's stderr into
    stdout), or the human rendering."""
    if as_json:
        click.echo(json.dumps(payload, sort_keys=True, default=str))
    else:
        human()


def remote_of(conf: Conf) -> str | None:
    """The Spark Connect server to run on: --remote (or $SPARK_REMOTE), else the conf's."""
    ctx = click.get_current_context(silent=True)
    given = ctx.meta.get(_REMOTE) if ctx is not None else None
    return given or conf.spark.remote


def session(conf: Conf) -> Any:
    """The conf's SparkSession: on the Spark Connect server of `remote_of`, else classic."""
    return build_session(conf.spark.app_name, conf.spark.settings, remote=remote_of(conf))


def finish(spark: Any, conf: Conf, record: RunRecord, status: str, code: int) -> None:
    """Record a run that ended with `code` in the runs table."""
    record.finish(status, code)
    write_run(spark, conf.tables.runs, record)


def fail(spark: Any, conf: Conf, record: RunRecord, error: BaseException,
         as_json: bool = False) -> NoReturn:
    """Print the error, record the run as failed when a session exists, exit with its code.

    An error the job did not anticipate exits 5 with one line (UnexpectedError); its stack
    trace is logged at DEBUG (--verbose). With --json the error is also the last line of
    stdout, as a JSON document.
    """
    exc = UnexpectedError.of(error)
    if exc is not error:
        log.debug("the unexpected error's stack trace", exc_info=error)
    click.echo(f"error: {exc}", err=True)
    record.finish("failed", exc.exit_code, str(exc))
    if spark is None and isinstance(exc, ClusterUnreachable):
        # Unreachable clusters are worth a runs row even though no session was needed yet.
        try:
            spark = session(conf)
        except ProvisioningError as session_exc:
            click.echo(f"error: could not record the run: {session_exc}", err=True)
    if spark is not None:
        try:
            write_run(spark, conf.tables.runs, record)
        except Exception as write_exc:
            click.echo(f"error: could not record the run: {write_exc}", err=True)
    if as_json:
        emit(True, {"run_id": record.run_id, "command": record.command,
                    "exit_code": exc.exit_code, "error": str(exc),
                    **getattr(exc, "details", {})}, lambda: None)
    sys.exit(exc.exit_code)
