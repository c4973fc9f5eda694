"""Errors the job maps to exit codes."""

from __future__ import annotations

from collections.abc import Sequence


class ProvisioningError(Exception):
    """Base of the errors the command line turns into an exit code."""

    exit_code = 1


class ConfError(ProvisioningError):
    """The conf file is wrong; `problems` names every bad key at once."""

    exit_code = 2

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid conf {source}: {len(self.problems)} problem(s)\n{lines}")


class UsageError(ProvisioningError):
    """A command-line argument or manifest table is unusable as given."""

    exit_code = 2


class ClusterUnreachable(ProvisioningError):
    """A cluster could not be reached or refused our credentials; nothing was changed."""

    exit_code = 3


class SparkUnreachable(ProvisioningError):
    """The Spark Connect server could not be reached; nothing was read or changed."""

    exit_code = 3


class ConnectServerUnfit(UsageError):
    """The Spark Connect server lacks what the job needs (Delta, speculation off)."""


class ExecutorsUnfit(UsageError):
    """The executors' Python cannot run the admin tasks (a module they import is missing, or
    they fail to start); found by one small task before any cluster is read."""


class LockHeld(ProvisioningError):
    """Another run holds the lock for this conf."""

    exit_code = 4


class LockUnavailable(ProvisioningError):
    """The run lock could not be taken or kept: the lock table is not a lock table, a MERGE
    failed, or the claim is not there when read back. Nothing was changed after it."""

    exit_code = 4


class PolicyError(ProvisioningError):
    """A policy is configured or implemented wrongly (bad parameters, a custom policy
    that breaks the PLAN contract); the run stops before anything is changed."""

    exit_code = 2


class RunCancelled(ProvisioningError):
    """The run was stopped by SIGTERM or SIGINT (an Airflow timeout, Ctrl-C): its Spark
    operations were interrupted; what completed is recorded and the lock given back."""

    exit_code = 6


class UnexpectedError(ProvisioningError):
    """An error the job did not anticipate (a Spark, Delta or Python failure): one line
    naming what failed and its cause; the stack trace is logged with --verbose."""

    exit_code = 5

    @classmethod
    def of(cls, exc: BaseException) -> ProvisioningError:
        """`exc` itself when the job anticipated it, else an UnexpectedError describing it."""
        if isinstance(exc, ProvisioningError):
            return exc
        first = (str(exc).strip().splitlines() or [""])[0][:500]
        return cls(f"unexpected error: {type(exc).__name__}: {first}".rstrip(": "))
