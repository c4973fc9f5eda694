"""An entity kind's section of the conf, written once (see `transforms.entity`): the keys of
its mapping every entity kind has, its two keys of `tables`, its `policies.<prefix>` list,
and the value built from them.

A kind's section (`EntitySection`) names its nouns (`names.Nouns`), the data class of its
mapping (a subclass of `EntityKeys` with the kind's own keys), the class of its value (the
same keys, with the tables and policies: `EntityConf`), the models of its policies and the
row of its manifest files. Its keys of `tables` are made from its nouns:
`<prefix>_manifests` (left out: the run manages none of the kind) and `<prefix>_snapshots`
(left out: `<tables.snapshots>_<name>`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from provisioning.conf.model import STRICT, PolicySpec
from provisioning.conf.section import Given, Section
from provisioning.names import Nouns

try:  # the loader's side only (conf.model says why)
    from pydantic import Field

    from provisioning.conf.keys import Count, Flag, Positive, TableList, Text
except ImportError:  # pragma: no cover
    if TYPE_CHECKING:
        raise


@dataclass(frozen=True)
class EntityKeys:
    """The keys every entity kind's mapping has."""

    __pydantic_config__ = STRICT
    remove_unlisted: Annotated[Flag, Field(
        description="Plan the live entities no manifest row names as removals (made only "
                    "with the kind's `--allow-*` removal flag); else they are left alone.")
                               ] = False
    max_changes_per_cluster: Annotated[Count, Field(
        description="Over this many changes (additions and removals) on one cluster in one "
                    "run, none of that cluster's is made (never lifted by `force`).")] = 200
    batch_size: Annotated[Positive, Field(
        description="Entities per change request.")] = 200


@dataclass(frozen=True)
class EntityConf(EntityKeys):
    """An entity kind's section as built: its keys, and what it reads of `tables` and
    `policies`."""

    # Its manifests (`tables.<prefix>_manifests`); None (the key left out): the run manages
    # none of the kind.
    manifests: tuple[str, ...] | None = None
    # Where the live entities of each run are recorded (`tables.<prefix>_snapshots`).
    snapshots: str = ""
    # `policies.<prefix>`, in conf order.
    policies: tuple[PolicySpec, ...] = ()


def tables_model(nouns: Nouns) -> type | None:
    """The data class of a kind's keys of `tables` (None where pydantic is not installed:
    only the loader reads it)."""
    if "Field" not in globals():  # pragma: no cover - a worker without pydantic
        return None
    return dataclasses.make_dataclass(f"{nouns.noun.capitalize()}Tables", [
        (nouns.manifests_key, Annotated[TableList | None, Field(
            description=f"The {nouns.noun} manifest tables; left out: the run manages no "
                        f"{nouns.noun} at all (an empty list is refused: every live "
                        f"{nouns.one} would be unlisted).")], None),
        (f"{nouns.prefix}_snapshots", Annotated[Text | None, Field(
            description=f"Where the live {nouns.many} of each run are recorded (left out: "
                        f"`<tables.snapshots>_{nouns.name}`).")], None),
    ], frozen=True, namespace={"__pydantic_config__": STRICT,
                               "__doc__": f"The {nouns.noun} keys of `tables`."})


class EntitySection(Section):
    """An entity kind's part of the conf package (see the module docstring)."""

    nouns: ClassVar[Nouns]
    conf_class: ClassVar[type[EntityConf]]
    # The data class of the kind's mapping: `EntityKeys` and its own keys.
    keys_class: ClassVar[type]
    # policy name -> the data class of its parameter block (`conf.policies`).
    policy_catalogue: ClassVar[Mapping[str, type]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.kind = cls.nouns.name
        cls.key_models = {cls.nouns.name: cls.keys_class}
        cls.tables_model = tables_model(cls.nouns)
        cls.policy_models = {cls.nouns.prefix: cls.policy_catalogue}

    def policies(self, given: Given, keys: Any) -> tuple[PolicySpec, ...]:
        """`policies.<prefix>` as the section's value holds them."""
        return given.policies.get(self.nouns.prefix, ())

    def build(self, given: Given) -> EntityConf:
        prefix, keys = self.nouns.prefix, given.top.get(self.nouns.name, self.keys_class())
        return self.conf_class(
            **{f.name: getattr(keys, f.name) for f in dataclasses.fields(self.keys_class)},
            manifests=getattr(given.tables, self.nouns.manifests_key),
            snapshots=(getattr(given.tables, f"{prefix}_snapshots")
                       or f"{given.shared_tables.snapshots}_{self.nouns.name}"),
            policies=self.policies(given, keys))

    def default(self) -> EntityConf:
        return self.conf_class()
