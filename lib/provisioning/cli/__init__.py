"""The command line: click commands, their output, and the exit codes.

    provision-topics {snapshot,plan,apply,import,report,maintain} --conf FILE ...

Each command parses its options, loads the conf, builds the session, calls the run
(or a view) and exits with the code of what happened (README: Exit codes). The run's
modules are imported by the commands that need them, so `report` starts without the
Kafka stack.
"""

from __future__ import annotations

import click

from provisioning.cli.importing import import_
from provisioning.cli.maintain import maintain
from provisioning.cli.report import report
from provisioning.cli.runs import apply, plan
from provisioning.cli.snapshot import snapshot


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Provision and audit Kafka topics from Delta manifests."""


for _command in (snapshot, plan, apply, import_, report, maintain):
    main.add_command(_command)
