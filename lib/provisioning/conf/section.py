"""A kind's section of the conf: the keys it reads and the typed, frozen value it makes.

The loader (`conf.validate`) builds the model of the whole file from what every run shares
(clusters, tables, kafka, spark, run, maintenance, checks) and every registered kind's
section (the command line hands them over): its own top-level keys (`key_models`: key ->
the data class of its mapping), its keys of `tables` (the fields of `tables_model`) and its
lists of `policies` (each policy's block read with its model, `policy_models`). Pydantic
reads the file against that model; the section then makes its value from what was read
(`build`), adding the problems no single key shows. The value lands in `Conf.sections`,
read back typed with `Conf.section(ItsClass)`. A kind with manifest files names the model
of their rows (`manifest_row`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from provisioning.conf.model import PolicySpec, TablesConf


@dataclass(frozen=True)
class Given:
    """What a section builds from: its top-level keys as read (absent: not in `top`), its
    keys of `tables` as read, its policies by key (parsed and checked), the shared tables,
    and the list its cross-key problems go to ("key: message")."""

    top: Mapping[str, Any]
    tables: Any
    policies: Mapping[str, tuple[PolicySpec, ...]]
    shared_tables: TablesConf
    problems: list[str] = field(default_factory=list)

    def problem(self, key: str, message: str) -> None:
        self.problems.append(f"{key}: {message}")


class Section(ABC):
    """One kind's part of the conf package."""

    kind: ClassVar[str]
    # Top-level keys of the file it reads, each with the data class of its mapping.
    key_models: ClassVar[Mapping[str, type]] = {}
    # A data class whose fields are its keys of `tables` (None: it has none).
    tables_model: ClassVar[type | None] = None
    # policy key -> policy name -> the data class of its parameter block
    # (`conf.policies`).
    policy_models: ClassVar[Mapping[str, Mapping[str, type]]] = {}
    # The rules of the kind's `check` findings (`checks.severity` may set theirs).
    check_rules: ClassVar[tuple[str, ...]] = ()
    # The data class of a row of its manifest files (`conf.manifests`; None: it has none),
    # its fields the columns of its manifest table.
    manifest_row: ClassVar[type | None] = None
    # Its manifest files' name in `load_manifest --kind` when not the kind's own.
    file_kind: ClassVar[str] = ""

    @abstractmethod
    def build(self, given: Given) -> object:
        """The section's value; cross-key problems go to `given.problem`, naming their key."""

    @abstractmethod
    def default(self) -> object:
        """The section's value for a conf that sets none of its keys."""
