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


class LockHeld(ProvisioningError):
    """Another run holds the lock for this conf."""

    exit_code = 4


class PolicyError(ProvisioningError):
    """A policy is configured or implemented wrongly (bad parameters, a custom policy
    that breaks the PLAN contract); the run stops before anything is changed."""

    exit_code = 2
