"""What every command shares: its common options, logging, and the one skeleton that runs it.

`execute` is the skeleton of every command: it loads the conf, records the run in the
runs table (for the commands that take one), maps every error to its exit code (README:
Exit codes), prints the JSON document on every path when `--json` is given, and exits.
A command only says what its work is (`work(Command) -> Outcome`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, NoReturn

import click

from provisioning.conf import (
    Conf,
    Credentials,
    SparkConf,
    TablesConf,
    load_conf,
    resolve_credentials,
)
from provisioning.errors import (
    ClusterUnreachable,
    ProvisioningError,
    RunCancelled,
    UnexpectedError,
)
from provisioning.kafka import timing
from provisioning.kafka.tokens import token_sources
from provisioning.kinds import Kind
from provisioning.results import RunRecord, new_run_id
from provisioning.session import Stop, build_session, handling_signals, profile, redact_remote
from provisioning.session.profile import LAST_STEP

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
def _keep_profile(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    ctx.meta[_PROFILE] = value


_PROFILE = "provisioning.profile"
profile_option = click.option(
    "--profile", is_flag=True, expose_value=False, callback=_keep_profile,
    help="Tell where the run's time went: per step, its wall time, the Spark work it ran, "
         "the Delta commits it made and the Kafka requests it sent, with the totals "
         "(printed, and under --json in the document's `profile`).")
json_option = click.option("--json", "as_json", is_flag=True,
                           help="Machine-readable output: one JSON document, the last line.")
verbose_option = click.option("--verbose", is_flag=True, help="Log every step in detail.")
conf_option = click.option("--conf", "conf_path", required=True,
                           type=click.Path(dir_okay=False), help="The environment's YAML conf.")


def common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options every run subcommand takes."""
    options = [
        remote_option,
        conf_option,
        click.option("--cluster", "clusters", multiple=True,
                     help="Only this cluster (repeatable); default: every cluster in the conf."),
        click.option("--topics", "topics_glob", default=None,
                     help="Only topics whose name matches this glob."),
        json_option,
        verbose_option,
        profile_option,
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


def emit(as_json: bool, payload: Mapping[str, Any], human: Callable[[], None]) -> None:
    """`payload` as one JSON line (printed last: spark-submit merges the driver's stderr into
    stdout), or the human rendering."""
    if as_json:
        click.echo(json.dumps(payload, sort_keys=True, default=str))
    else:
        human()


def profiling() -> bool:
    """Whether `--profile` was given."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(_PROFILE))


def remote_of(conf: Conf | None) -> str | None:
    """The Spark Connect server to run on: --remote (or $SPARK_REMOTE), else the conf's."""
    ctx = click.get_current_context(silent=True)
    given = ctx.meta.get(_REMOTE) if ctx is not None else None
    return given or (conf.spark.remote if conf is not None else None)


@dataclass
class Outcome:
    """What a command's work ended with: its exit code, the runs table's status, the JSON
    document's fields and the lines a person reads."""

    exit_code: int
    payload: dict[str, Any]
    human: Callable[[], list[str]]
    status: str = ""

    @property
    def run_status(self) -> str:
        return self.status or ("succeeded" if self.exit_code == 0 else "completed_with_errors")


@dataclass
class Command:
    """One command's invocation, as its work sees it."""

    name: str
    conf: Conf  # an empty conf for the commands that take none (load_manifest)
    # The registered kinds (the command line hands them to the packages below it).
    kinds: Sequence[Kind]
    record: RunRecord | None
    stop: Stop
    _stack: ExitStack
    spark: Any = None
    # Work a command leaves running (the lock release): waited for after the runs row.
    pending: list[Future[Any]] = field(default_factory=list)

    @property
    def run_kinds(self) -> tuple[Any, ...]:
        """Each kind's part of the run package, in registry order."""
        return tuple(k.run for k in self.kinds)

    @property
    def view_kinds(self) -> tuple[Any, ...]:
        """Each kind's part of the views package, in registry order."""
        return tuple(k.view for k in self.kinds)

    def session(self) -> Any:
        """The conf's SparkSession (built once): on the Spark Connect server of `remote_of`,
        else classic; the run's own operations carry its run tag from here on."""
        if self.spark is None:
            conf = self.conf
            self.spark = build_session(conf.spark.app_name, conf.spark.settings,
                                       remote=remote_of(conf if conf.source else None),
                                       profile=profile.active())
            if self.record is not None:
                self._stack.enter_context(self.stop.tag_operations(self.spark,
                                                                   self.record.run_id))
        return self.spark

    def credentials(self) -> dict[str, Credentials]:
        """What each cluster's connection needs, read on the driver: the secrets the conf
        names (environment variables or files), its TLS files, and the source of its bearer
        tokens (kafka.tokens). It reaches the executors in memory, with their tasks."""
        read = resolve_credentials(self.conf, os.environ)
        return token_sources(read, self.conf.clusters,
                             min(self.conf.kafka.request_timeout_ms, 30000) / 1000)


Work = Callable[[Command], Outcome]


def execute(name: str, kinds: Sequence[Kind], conf_path: str | None, as_json: bool,
            verbose: bool, arguments: Mapping[str, Any], work: Work,
            records_run: bool = True) -> NoReturn:
    """Run one command over the registered `kinds`: load the conf, run `work`, record the run
    (when `records_run`), print its output or its error (as JSON with `as_json`) and exit
    with its code."""
    setup_logging(verbose)
    record: RunRecord | None = None
    outcome: Outcome | None = None
    error: ProvisioningError | None = None
    stop = Stop()
    cmd: Command | None = None
    measured = profile.Profile() if profiling() else None
    with ExitStack() as stack, handling_signals(stop), profile.installed(measured):
        if measured is not None:
            # The Kafka requests the driver itself sends (the admin tasks' come back with
            # their rows: run.executors).
            stack.enter_context(timing.recording(
                lambda api, start, seconds: profile.requests(api, 1, seconds, start)))
        try:
            conf = (load_conf(conf_path, tuple(k.conf for k in kinds), os.environ)
                    if conf_path is not None
                    else Conf(source="", digest="", clusters={},
                              tables=TablesConf(manifests=(), audit="", runs="", snapshots=""),
                              spark=SparkConf(app_name=f"topic-provisioning {name}")))
            record = (RunRecord(new_run_id(), name, dict(arguments), conf.digest)
                      if records_run else None)
            cmd = Command(name, conf, kinds, record, stop, stack)
            outcome = work(cmd)
        except Exception as exc:  # anticipated errors exit 2-4 and 6, the rest 5 (README)
            error = UnexpectedError.of(exc)
            if error is not exc:
                log.debug("the unexpected error's stack trace", exc_info=exc)
        if error is None and stop.requested:
            error = RunCancelled(f"cancelled by {stop.signal} as the run ended: everything "
                                 "it did is recorded")
        if cmd is not None and record is not None:
            error = _record(cmd, record, outcome, error)
        for pending in cmd.pending if cmd is not None else []:
            if pending.exception() is not None:
                log.error("%s", pending.exception())
        profiled: dict[str, Any] = {}
        if measured is not None:
            measured.mark(LAST_STEP)
            profiled["profile"] = measured.report()
            from provisioning.views.profile import render_profile

            click.echo("\n".join(render_profile(profiled["profile"])), err=True)
    code = error.exit_code if error is not None else (outcome.exit_code if outcome else 5)
    if error is not None:
        click.echo(f"error: {error}", err=True)
        if as_json:
            emit(True, {"run_id": record.run_id if record else None, "command": name,
                        "exit_code": code, "error": str(error),
                        **getattr(error, "details", {}), **profiled}, lambda: None)
    elif outcome is not None:
        emit(as_json, {"run_id": record.run_id if record else None, "command": name,
                       **outcome.payload, **profiled, "exit_code": code},
             lambda: click.echo("\n".join(outcome.human())))
    sys.exit(code)


def _record(cmd: Command, record: RunRecord, outcome: Outcome | None,
            error: ProvisioningError | None) -> ProvisioningError | None:
    """Write the run's row to the runs table; the error the command ends with (a runs row
    that could not be written is one: exit 5, the run's work is done)."""
    if error is not None:
        status = "cancelled" if error.exit_code == 6 else "failed"
        record.finish(status, error.exit_code, str(error))
    else:
        assert outcome is not None
        record.finish(outcome.run_status, outcome.exit_code)
    spark = cmd.spark
    if spark is None and isinstance(error, ClusterUnreachable):
        # Unreachable clusters are worth a runs row even though no session was needed yet.
        try:
            spark = cmd.session()
        except ProvisioningError as exc:
            click.echo(f"error: could not record the run: {exc}", err=True)
    if spark is None:
        return error
    from provisioning.delta.runs import write_run

    try:
        write_run(spark, cmd.conf.tables.runs, record)
    except Exception as exc:
        unrecorded = UnexpectedError(
            f"could not record the run in {cmd.conf.tables.runs}: {type(exc).__name__}: "
            f"{(str(exc).strip().splitlines() or [''])[0][:300]}")
        if error is None:
            return unrecorded
        click.echo(f"error: {unrecorded}", err=True)
    return error


def fail_usage(message: str) -> NoReturn:
    """Exit 2 for a usage problem found before any command ran."""
    raise click.UsageError(message)
