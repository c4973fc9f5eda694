"""The command line: click commands, their output, and the exit codes.

    provision-topics {snapshot,plan,apply,import,check,report,maintain} --conf FILE ...

`main` is the command tree (`cli.commands`, built from the registered kinds, which build
on `cli.kind`, `cli.entity` and `cli.common`); `run(args)` runs one command inside a
Python process that goes on afterwards (an Airflow PythonOperator, a notebook) and returns
its exit code. Both are read from `cli.commands` when first asked for, so that a kind's
part of this package imports its base without the command tree above it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["main", "run"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from provisioning.cli import commands

        return getattr(commands, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
