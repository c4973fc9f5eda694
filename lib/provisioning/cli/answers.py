"""What the command line answers from Python alone: help, the version and usage errors.

`spark-submit.sh` asks `answer` before it starts a JVM, so `--help`, `SUBCOMMAND --help`,
`--version` and a usage error cost a Python process, not a Spark driver; arguments that name
a run are left to the driver, which parses them again.
"""

from __future__ import annotations

from collections.abc import Sequence

import click


def answer(command: click.Command, args: Sequence[str], prog_name: str) -> int | None:
    """Parse `args` as `command` (and the subcommand they name) would, without running it.
    The exit code when click answered them itself (help or the version printed: 0; a usage
    error shown on standard error: 2); None when they name a run."""
    try:
        ctx = command.make_context(prog_name, list(args))
        while isinstance(command, click.Group) and not command.chain:
            # What Group.invoke does before it runs the subcommand (click keeps the
            # subcommand's name apart from its arguments until then).
            rest = [*ctx._protected_args, *ctx.args]
            if not rest:
                if command.invoke_without_command:
                    return None
                ctx.fail("Missing command.")
            name, sub, sub_args = command.resolve_command(ctx, rest)
            if sub is None or name is None:
                return None
            ctx = sub.make_context(name, sub_args, parent=ctx)
            command = sub
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.Abort:
        return 1
    return None
