"""The client quotas' section of the conf (KIP-546): `quotas`, the quota tables
(`tables.quota_manifests`, `tables.quota_snapshots`) and `policies.quota`, with the models of
the quota policies' parameter blocks; and the row of a quota manifest file."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from provisioning.conf.entity import EntityConf, EntityKeys, EntitySection
from provisioning.conf.errors import type_name
from provisioning.conf.model import STRICT
from provisioning.conf.policies import Custom, optional, required
from provisioning.kinds.quotas.names import KEYS, NOUNS, UNMANAGED_QUOTA

try:  # the loader's side only (conf.model says why)
    from pydantic import BeforeValidator, Field, WithJsonSchema

    from provisioning.conf.keys import Positive
    from provisioning.conf.manifests import ForceColumn
    from provisioning.conf.manifests import Text as Cell
except ImportError:  # pragma: no cover
    if TYPE_CHECKING:
        raise


@dataclass(frozen=True)
class QuotasKeys(EntityKeys):
    """The `quotas` mapping: how client quotas are planned and sent."""

    __pydantic_config__ = STRICT
    batch_size: Annotated[Positive, Field(
        description="Entities per AlterClientQuotas request.")] = 200


@dataclass(frozen=True)
class QuotasConf(QuotasKeys, EntityConf):
    """The client quotas' section as built."""


def _quota_key(v: Any) -> str:
    if not isinstance(v, str) or v not in KEYS:
        raise ValueError(f"{v!r} is not a quota key (known: {', '.join(KEYS)})")
    return v


def _bound(v: Any) -> float:
    """A finite number > 0 (never a boolean)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ValueError(f"expected a number, got {type_name(v)}")
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"must be a finite number > 0 (a quota is never 0), got {v}")
    return float(v)


if "Field" in globals():  # the loader's side (conf.model says why)
    QuotaKey = Annotated[str, BeforeValidator(required(_quota_key)),
                         WithJsonSchema({"enum": list(KEYS)})]
    Bound = Annotated[float | None, BeforeValidator(optional(_bound)),
                      WithJsonSchema({"type": "number", "exclusiveMinimum": 0})]


@dataclass(frozen=True)
class QuotaRange:
    """A quota key's value must lie within `min` and `max`."""

    __pydantic_config__ = STRICT
    at_least_one: ClassVar[tuple[str, ...]] = ("min", "max")
    ordered: ClassVar[tuple[str, str]] = ("min", "max")
    key: Annotated[QuotaKey, Field(description="The quota key judged.")]
    min: Annotated[Bound, Field(description="The least value allowed.")] = None
    max: Annotated[Bound, Field(description="The greatest value allowed.")] = None


# Quota policies judge QUOTA_PLAN rows; their registry
# (kinds.quotas.policies.QUOTA_POLICIES) is kept equal to this one by a unit test.
QUOTA_POLICY_MODELS: dict[str, type] = {
    "quota_range": QuotaRange,
    "custom": Custom,
}


def _quota_map(v: Any) -> Any:
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise ValueError("expected a mapping of quota key -> number")
    return {str(k): x for k, x in v.items()}


def _quota_value(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(float(v)):
        raise ValueError(f"expected a number, got {v!r}")
    return float(v)


if "Field" in globals():  # the loader's side (conf.model says why)
    QuotaValues = Annotated[
        dict[str, Annotated[float, BeforeValidator(_quota_value)]] | None,
        BeforeValidator(_quota_map),
        WithJsonSchema({"type": ["object", "null"], "additionalProperties": {"type": "number"}})]


@dataclass(frozen=True)
class QuotaManifestRow:
    """One entity's quotas in a quota manifest file (the columns of
    kinds.quotas.schema.QUOTA_MANIFEST)."""

    __pydantic_config__ = STRICT
    cluster: Annotated[Cell, Field(description="The cluster (a name under `clusters`).")
                       ] = None
    entity_user: Annotated[Cell, Field(description="The entity's user (`<default>`: the "
                                       "default user; left out: not part of the entity).")
                           ] = None
    entity_client_id: Annotated[Cell, Field(
        description="The entity's client id (`<default>`: the default client id; left out: "
                    "not part of the entity).")] = None
    entity_ip: Annotated[Cell, Field(description="The entity's IP address (`<default>`: the "
                                     "default IP; left out: not part of the entity).")
                         ] = None
    quotas: Annotated[QuotaValues, Field(
        description="quota key -> value: producer_byte_rate, consumer_byte_rate, "
                    "request_percentage, controller_mutation_rate (user and client-id "
                    "entities), connection_creation_rate (ip entities).")] = None
    state: Annotated[Cell, Field(description="`present` (left out: present) or `absent`: "
                                 "removes the keys it lists, or every key when it lists "
                                 "none.")] = None
    owner: Annotated[Cell, Field(description="The team that owns the quotas.")] = None
    force: ForceColumn = None


class QuotasSection(EntitySection):
    nouns, conf_class, keys_class = NOUNS, QuotasConf, QuotasKeys
    policy_catalogue = QUOTA_POLICY_MODELS
    check_rules = (UNMANAGED_QUOTA,)
    manifest_row = QuotaManifestRow


SECTION = QuotasSection()
