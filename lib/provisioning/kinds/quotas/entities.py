"""Client-quota entities as the requests name them, and the requests built from them
(KIP-546: DescribeClientQuotas, AlterClientQuotas), without sending anything
(`kinds.quotas.requests` sends them)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

from provisioning.kinds.quotas.names import ENTITY_TYPES, protocol_name, table_name

# Match types of a DescribeClientQuotas filter component (KIP-546).
_MATCH_EXACT = 0
_MATCH_DEFAULT = 1


class Entity(Mapping[str, str | None]):
    """A client-quota entity: entity type -> name (None: the type's default entity).

    Immutable and hashable, so it keys the answers; equal to any mapping of the same pairs.
    Entity({"user": "alice", "client-id": None}) is alice's quota for clients without one
    of their own. The types are Kafka's to judge (ENTITY_TYPES are the ones it knows): a
    type or combination it refuses is its INVALID_REQUEST, not an error here.
    """

    __slots__ = ("_pairs",)

    def __init__(self, parts: Mapping[str, str | None]) -> None:
        if not parts:
            raise ValueError("a client-quota entity names at least one entity type")
        for kind, name in parts.items():
            if not isinstance(kind, str) or not (name is None or isinstance(name, str)):
                raise ValueError(f"a client-quota entity maps type names to a name or None, "
                                 f"not {kind!r}: {name!r}")
        self._pairs: tuple[tuple[str, str | None], ...] = tuple(
            sorted(parts.items(), key=lambda p: (_type_rank(p[0]), p[0])))

    @classmethod
    def from_table(cls, parts: Mapping[str, str]) -> Entity:
        """An entity as the tables spell it (`<default>` for a default)."""
        return cls({kind: protocol_name(name) for kind, name in parts.items()})

    def table_names(self) -> dict[str, str]:
        """This entity as the tables spell it (`<default>` for a default)."""
        return {kind: table_name(name) for kind, name in self._pairs}

    def __getitem__(self, kind: str) -> str | None:
        for k, name in self._pairs:
            if k == kind:
                return name
        raise KeyError(kind)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._pairs)

    def __len__(self) -> int:
        return len(self._pairs)

    def __hash__(self) -> int:
        return hash(self._pairs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Entity):
            return self._pairs == other._pairs
        return super().__eq__(other)

    def __repr__(self) -> str:
        return f"Entity({dict(self._pairs)!r})"


def _type_rank(kind: str) -> int:
    return ENTITY_TYPES.index(kind) if kind in ENTITY_TYPES else len(ENTITY_TYPES)


@dataclass(frozen=True)
class QuotaEntry:
    """One entity's change: quota key -> the value to set, or None to remove the key."""

    entity: Entity
    ops: Mapping[str, float | None]

    @property
    def removes_only(self) -> bool:
        """Every op removes a key: a success is `removed`, not `set`."""
        return bool(self.ops) and all(v is None for v in self.ops.values())


# -- request building ------------------------------------------------------------------


def describe_request(entity: Entity | None) -> Any:
    """The DescribeClientQuotas request of one entity exactly (strict: not the entities that
    combine it with another type), or of every entity of the cluster (None: no component and
    not strict, which a 4.3 broker answers with every entity, defaults and combinations
    included)."""
    component = DescribeClientQuotasRequest.ComponentData
    if entity is None:
        return DescribeClientQuotasRequest(components=[], strict=False)
    return DescribeClientQuotasRequest(
        components=[component(entity_type=kind,
                              match_type=_MATCH_DEFAULT if name is None else _MATCH_EXACT,
                              match=name)
                    for kind, name in entity.items()],
        strict=True)


def alter_request(entries: Sequence[QuotaEntry], validate_only: bool) -> Any:
    """The AlterClientQuotas request of `entries` (a removal's value is sent as 0.0, which
    the broker ignores)."""
    entry_cls = AlterClientQuotasRequest.EntryData
    return AlterClientQuotasRequest(
        entries=[entry_cls(
            entity=[entry_cls.EntityData(entity_type=kind, entity_name=name)
                    for kind, name in e.entity.items()],
            ops=[entry_cls.OpData(key=key, value=0.0 if value is None else float(value),
                                  remove=value is None)
                 for key, value in sorted(e.ops.items())])
            for e in entries],
        validate_only=validate_only)


def batches(indexes: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    """`indexes` in runs of at most `batch_size`, in order."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    for start in range(0, len(indexes), batch_size):
        yield list(indexes[start:start + batch_size])


def entry_problems(entries: Sequence[QuotaEntry]) -> dict[int, str]:
    """Why an entry must not be sent, by its index: an entity twice in `entries` (the broker
    applies the first and answers INVALID_REQUEST for it), no op at all (answered NONE with
    nothing changed), a value that is not a finite number (NaN would be stored)."""
    seen: dict[Entity, int] = {}
    for e in entries:
        seen[e.entity] = seen.get(e.entity, 0) + 1
    problems: dict[int, str] = {}
    for i, e in enumerate(entries):
        if seen[e.entity] > 1:
            problems[i] = (f"{e.entity!r} appears {seen[e.entity]} times in this change: "
                           "one entry per entity")
        elif not e.ops:
            problems[i] = "no quota to set or remove"
        else:
            bad = sorted(k for k, v in e.ops.items()
                         if v is not None and (isinstance(v, bool)
                                               or not isinstance(v, int | float)
                                               or not math.isfinite(v)))
            if bad:
                problems[i] = f"{', '.join(bad)}: not a finite number"
    return problems


def entity_of(parts: Sequence[Any]) -> Entity:
    return Entity({p.entity_type: p.entity_name for p in parts})


