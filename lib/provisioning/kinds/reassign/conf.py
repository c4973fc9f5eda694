"""The replica moves' section of the conf: `reassign` (the per-run cap, the throttle, how
long verify waits) and `policies.reassign`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Annotated, ClassVar

from provisioning.conf.model import STRICT, PolicySpec
from provisioning.conf.policies import Custom
from provisioning.conf.section import Given, Section

try:  # the loader's side only (conf.model says why)
    from pydantic import Field

    from provisioning.conf.keys import Count, Positive
except ImportError:  # pragma: no cover
    if TYPE_CHECKING:
        raise


@dataclass(frozen=True)
class ReassignKeys:
    """The `reassign` mapping: how replica moves are capped, throttled and waited for."""

    __pydantic_config__ = STRICT
    max_partitions_per_cluster: Annotated[Count, Field(
        description="Over this many partitions to move on one cluster in one run, none of "
                    "that cluster's moves start.")] = 500
    throttle_bytes_per_second: Annotated[Positive | None, Field(
        description="The replication throttle of a move, bytes per second on each broker "
                    "involved (its leader and follower rates); null: moves are not "
                    "throttled.")] = 52428800
    wait_seconds: Annotated[Count, Field(
        description="How long verify waits for moves to complete; the partitions still "
                    "moving then are recorded `reassigning` and finished by a later run.")
                            ] = 300


@dataclass(frozen=True)
class ReassignConf(ReassignKeys):
    # `policies.reassign`, in conf order (the always-on ones take no conf).
    policies: tuple[PolicySpec, ...] = ()


class ReassignSection(Section):
    kind = "reassign"
    key_models: ClassVar[Mapping[str, type]] = {"reassign": ReassignKeys}
    # The always-on reassign policies take no conf; a team adds its own with custom.
    policy_models: ClassVar[Mapping[str, Mapping[str, type]]] = {
        "reassign": {"custom": Custom}}

    def build(self, given: Given) -> ReassignConf:
        keys: ReassignKeys = given.top.get("reassign", ReassignKeys())
        return ReassignConf(**{f.name: getattr(keys, f.name) for f in fields(ReassignKeys)},
                            policies=given.policies.get("reassign", ()))

    def default(self) -> ReassignConf:
        return ReassignConf()


SECTION = ReassignSection()
