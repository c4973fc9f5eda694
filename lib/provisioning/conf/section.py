"""A kind's section of the conf: the keys it reads and the typed, frozen value it makes.

The loader (`conf.load`) reads what every run shares (clusters, tables, kafka, spark, run,
maintenance, checks) and hands each registered kind's section (`kinds.parts("conf")`) the
keys it declares: its own top-level keys, its keys of `tables` and its lists of
`policies` (already parsed, each policy block checked with the section's
`policy_checks`). The section's value lands in `Conf.sections`, read back typed with
`Conf.section(ItsClass)`. A key no section and no shared part declares is a problem
reported with the others.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from provisioning.conf.model import PolicySpec, TablesConf
from provisioning.conf.policies import Check
from provisioning.conf.reader import Reader


@dataclass(frozen=True)
class Given:
    """What a section reads: the file's top level, its `tables` mapping, its policies by
    key (parsed and checked), and the shared tables as read."""

    top: Mapping[str, Any]
    tables: Mapping[str, Any]
    policies: Mapping[str, tuple[PolicySpec, ...]]
    shared_tables: TablesConf


class Section(ABC):
    """One kind's part of the conf room."""

    kind: ClassVar[str]
    # Top-level keys of the file it reads, keys of `tables`, keys of `policies`.
    keys: ClassVar[tuple[str, ...]] = ()
    table_keys: ClassVar[tuple[str, ...]] = ()
    policy_keys: ClassVar[tuple[str, ...]] = ()
    # policy key -> policy name -> the check of its parameter block.
    policy_checks: ClassVar[Mapping[str, Mapping[str, Check]]] = {}
    # The rules of the kind's `check` findings (`checks.severity` may set theirs).
    check_rules: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def read(self, r: Reader, given: Given) -> object:
        """The section's value; problems go to `r`, naming their key."""

    @abstractmethod
    def default(self) -> object:
        """The section's value for a conf that sets none of its keys."""
