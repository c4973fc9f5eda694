"""The offset resets' section of the conf: `offsets`, the requests tables
(`tables.offset_resets`), `tables.offset_snapshots` and `policies.offset`; and the row of an
offset resets file (`load_manifest --kind offset-resets`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from provisioning.conf.entity import EntityConf, EntityKeys, EntitySection
from provisioning.conf.model import STRICT
from provisioning.conf.policies import Custom
from provisioning.kinds.offsets.names import NOUNS

try:  # the loader's side only (conf.model says why)
    from pydantic import AfterValidator, Field

    from provisioning.conf.keys import Flag
    from provisioning.conf.manifests import Text as Cell
except ImportError:  # pragma: no cover
    if TYPE_CHECKING:
        raise


def _not_on(value: bool) -> bool:
    if value:
        raise ValueError("offset resets remove nothing unlisted (a request names what it "
                         "changes): leave the key out")
    return value


@dataclass(frozen=True)
class OffsetsKeys(EntityKeys):
    """The `offsets` mapping: how offset reset requests are planned and sent (its
    `max_changes_per_cluster` caps the partitions reset or deleted on one cluster in one
    run). `remove_unlisted` has no use here (a request names what it changes): a conf that
    turns it on is refused rather than left believing it does something."""

    __pydantic_config__ = STRICT
    remove_unlisted: Annotated[Flag, AfterValidator(_not_on), Field(
        description="Not used by offset resets: a request names what it changes, and "
                    "nothing unlisted is removed. Only `false` is taken.",
        json_schema_extra={"const": False})] = False


@dataclass(frozen=True)
class OffsetsConf(OffsetsKeys, EntityConf):
    """The offset resets' section as built."""


@dataclass(frozen=True)
class ReasonRequired:
    """The policy reset_requires_reason: a request without a reason is refused."""

    __pydantic_config__ = STRICT


# Offset policies judge OFFSET_PLAN rows; their registry (kinds.offsets.policies.
# OFFSET_POLICIES) is kept equal to this one by a unit test.
OFFSET_POLICY_MODELS: dict[str, type] = {"custom": Custom,
                                         "reset_requires_reason": ReasonRequired}


@dataclass(frozen=True)
class OffsetResetRow:
    """One request of an offset resets file (the columns of
    kinds.offsets.schema.OFFSET_RESET_MANIFEST)."""

    __pydantic_config__ = STRICT
    request_id: Annotated[Cell, Field(description="The request's id, unique across the "
                                      "requests tables.")] = None
    cluster: Annotated[Cell, Field(description="The cluster (a name under `clusters`).")
                       ] = None
    group: Annotated[Cell, Field(description="The consumer group id.")] = None
    topic: Annotated[Cell, Field(description="The topic.")] = None
    partitions: Annotated[list[int] | None, Field(
        description="The partitions to reset; left out: every partition.")] = None
    to: Annotated[Cell, Field(description="earliest, latest, timestamp, duration, shift, "
                              "offset or delete.")] = None
    value: Annotated[Cell, Field(description="An ISO-8601 time with its zone (timestamp), "
                                 "an ISO-8601 duration back from now (duration, PT1H), a "
                                 "signed shift, an offset; none for earliest, latest and "
                                 "delete.")] = None
    requested_by: Annotated[Cell, Field(description="Who asked.")] = None
    reason: Annotated[Cell, Field(description="Why.")] = None


class OffsetsSection(EntitySection):
    nouns, conf_class, keys_class = NOUNS, OffsetsConf, OffsetsKeys
    policy_catalogue = OFFSET_POLICY_MODELS
    manifest_row = OffsetResetRow
    file_kind = "offset-resets"


SECTION = OffsetsSection()
