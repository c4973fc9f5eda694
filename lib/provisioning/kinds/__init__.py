"""The kinds of resource the job manages, one folder each (`kinds/<kind>/`), and the one
object each registers (`Kind`).

Everything that is a kind's own sits in its folder: its nouns (`names`), its conf section
(`conf`), its manifest rows' validation, plan and policies, its Kafka requests and the
tasks that send them, its part of the run, how its rows read (`view`) and its command line
(`cli`). Its `kind.py` holds its `KIND`: the parts the packages that loop over kinds (the
conf loader, the engine, the views, the command line) are given. `provisioning.registry`
imports every kind's `KIND` by name, in the order their phases run.

This module imports nothing of a kind: a task on an executor that unpickles a kind's conf
or runs its requests loads that module alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from provisioning.cli.kind import CliKind
    from provisioning.conf.section import Section
    from provisioning.run.kind import RunKind
    from provisioning.views.kind import ViewKind


@dataclass(frozen=True)
class Kind:
    """One registered kind: its name and its part of each package that loops over kinds."""

    name: str
    conf: Section
    run: RunKind
    view: ViewKind
    cli: CliKind

    def __post_init__(self) -> None:
        named = {"conf": self.conf.kind, "run": self.run.name, "view": self.view.name,
                 "cli": self.cli.name}
        wrong = [f"{part} names {name!r}" for part, name in named.items() if name != self.name]
        if wrong:
            raise ValueError(f"kind {self.name!r}: {', '.join(wrong)}")
