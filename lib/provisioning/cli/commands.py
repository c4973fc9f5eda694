"""The command tree: every command of `provision-topics`, built from the registered kinds.

    provision-topics {snapshot,plan,apply,import,check,report,maintain} --conf FILE ...

`run(args)` runs one command inside a Python process that goes on afterwards (an Airflow
PythonOperator, a notebook) and returns its exit code.

Each command parses its options, loads the conf, builds the session, calls the run
(or a view) and exits with the code of what happened (README: Exit codes). The run's
modules are imported by the commands that need them, so `report` starts without the
Kafka stack.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from provisioning.cli.check import check
from provisioning.cli.importing import import_
from provisioning.cli.maintain import maintain
from provisioning.cli.report import report
from provisioning.cli.runs import apply, plan
from provisioning.cli.snapshot import snapshot
from provisioning.registry import KINDS


def _show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from provisioning import package_version

    click.echo(f"{ctx.find_root().info_name} {package_version()}")
    ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_show_version, help="Show the version and exit.")
def main() -> None:
    """Provision and audit Kafka topics from Delta manifests."""


for _command in (snapshot, plan, apply, import_, check, report, maintain):
    main.add_command(_command)
# Each kind's own commands (a request made on the spot, ...).
for _kind in KINDS:
    for _command in _kind.cli.commands(KINDS):
        main.add_command(_command)


def run(args: Sequence[str]) -> int:
    """Run one command (`provision-topics ARGS`) in this process and return its exit code
    instead of exiting; the Spark Connect sessions it opened are ended before it returns.

    Example, from an Airflow PythonOperator against a Connect server::

        code = run(["apply", "--conf", "prod.yaml", "--remote", "sc://spark:15002"])
    """
    from provisioning.session import release_sessions

    try:
        main.main(list(args), prog_name="provision-topics", standalone_mode=False)
        return 0
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        return 1
    finally:
        release_sessions()
