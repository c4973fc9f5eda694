"""A kind's part of the command line: its `apply --allow-*` flags, its `import`, its views of
`report`, its manifest files (`load_manifest --kind`), its own commands.

The commands (`cli.runs`, `cli.importing`, `cli.report`, `cli.load_manifest`) build their
options from every registered kind (`provisioning.registry`) through this interface and
name none of them.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import click

    from provisioning.cli.common import Command, Outcome
    from provisioning.kinds import Kind


@dataclass(frozen=True)
class Flag:
    """An `apply` flag that allows one kind of change: `--allow-<change>`; `old`: earlier
    names of the change, still taken (hidden from the help) with a warning naming this
    one."""

    change: str
    help: str
    old: tuple[str, ...] = ()

    @property
    def option(self) -> str:
        return f"--allow-{self.change}"

    @property
    def argument(self) -> str:
        """Its name in the runs row's arguments and as a click parameter."""
        return _argument(self.change)

    @property
    def old_options(self) -> tuple[tuple[str, str], ...]:
        """(option, click parameter) of each old name."""
        return tuple((f"--allow-{o}", _argument(o)) for o in self.old)


def _argument(change: str) -> str:
    return f"allow_{change.replace('-', '_')}"


@dataclass(frozen=True)
class Switch:
    """An option of a kind's own: a flag (`is_flag`) or one that takes a value."""

    option: str
    help: str
    is_flag: bool = True
    metavar: str | None = None
    type: Any = None

    @property
    def argument(self) -> str:
        return self.option.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class ReportArgs:
    """What every report view is given besides its own option's value."""

    clusters: tuple[str, ...]
    topics_glob: str | None
    limit: int
    # The values of every kind's report options, by argument name.
    values: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ReportView:
    """One view of `report`, chosen by its option: what it reads, as a payload (and the
    exit code: a view that reads a cluster live may find it unreachable), and the lines a
    person reads of that payload.

    extras: options that go with this view only (`--since` with `--violations`).
    """

    option: Switch
    build: Callable[[Command, Any, ReportArgs], tuple[dict[str, Any], int]]
    render: Callable[[Mapping[str, Any]], list[str]]
    extras: tuple[Switch, ...] = ()


class CliKind(ABC):
    """One kind's part of the command line."""

    name: ClassVar[str]
    # `apply`'s flags that allow this kind's changes.
    apply_flags: ClassVar[tuple[Flag, ...]] = ()
    # `import`: the option that chooses this kind (None: the kind `import` writes unless
    # another is chosen), the options only this kind's import takes, and the common
    # options only it uses, as (argument, option): ("topics_glob", "--topics").
    import_option: ClassVar[Switch | None] = None
    import_switches: ClassVar[tuple[Switch, ...]] = ()
    import_only: ClassVar[tuple[tuple[str, str], ...]] = ()
    # `report`'s views of this kind.
    report_views: ClassVar[tuple[ReportView, ...]] = ()
    # `load_manifest --kind`: this kind's name there (None: it has no manifest file).
    manifest_kind: ClassVar[str | None] = None

    def imports(self) -> bool:
        """Whether `import` can write this kind."""
        return False

    def commands(self, kinds: Sequence[Kind]) -> tuple[click.Command, ...]:
        """The kind's own commands (none by default), each run over the registered
        `kinds`."""
        return ()

    def import_arguments(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """What the runs row records of this kind's import options."""
        return {}

    def import_outcome(self, cmd: Command, table: str, imported: Any) -> Outcome:
        """The import's output, from what the run wrote (`RunKind.imported`)."""
        raise NotImplementedError

    def manifest_rows(self, path: Path) -> tuple[Sequence[tuple[Any, ...]], Any]:
        """A manifest file's rows (in the manifest schema's column order) and that schema;
        UsageError names every problem at once."""
        raise NotImplementedError
