"""The replica moves' section of the conf: `reassign` (the per-run cap, the throttle, how
long verify waits) and `policies.reassign`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from provisioning.conf.model import PolicySpec
from provisioning.conf.policies import Check, check_custom
from provisioning.conf.reader import Reader, at_least_zero, positive
from provisioning.conf.section import Given, Section


@dataclass(frozen=True)
class ReassignConf:
    # Over this many partitions to move on one cluster in one run, none of that cluster's
    # moves start.
    max_partitions_per_cluster: int = 500
    # The replication throttle of a move, bytes per second on each broker involved (its
    # leader and follower rates); None: moves are not throttled.
    throttle_bytes_per_second: int | None = 52428800
    # How long `verify` waits for moves to complete; the partitions still moving then are
    # recorded `reassigning` and finished by a later run.
    wait_seconds: int = 300
    # `policies.reassign`, in conf order (the always-on ones take no conf).
    policies: tuple[PolicySpec, ...] = ()


_KEYS = ("max_partitions_per_cluster", "throttle_bytes_per_second", "wait_seconds")


class ReassignSection(Section):
    kind = "reassign"
    keys = ("reassign",)
    policy_keys = ("reassign",)
    # The always-on reassign policies take no conf; a team adds its own with custom.
    policy_checks: ClassVar[Mapping[str, Mapping[str, Check]]] = {
       "reassign": {"custom": check_custom}}

    def read(self, r: Reader, given: Given) -> ReassignConf:
        reassign = ReassignConf(policies=given.policies.get("reassign", ()))
        body = r.section(given.top, "reassign")
        if body is None:
            return reassign
        r.no_unknown(body, "reassign", _KEYS)
        # An explicit null turns the throttle off; a missing key keeps the default.
        throttle = (None if "throttle_bytes_per_second" in body
                    and body["throttle_bytes_per_second"] is None
                    else r.value(body, "reassign", "throttle_bytes_per_second", int,
                                 reassign.throttle_bytes_per_second, positive))
        return ReassignConf(
            max_partitions_per_cluster=r.value(body, "reassign", "max_partitions_per_cluster",
                                               int, reassign.max_partitions_per_cluster,
                                               at_least_zero),
            throttle_bytes_per_second=throttle,
            wait_seconds=r.value(body, "reassign", "wait_seconds", int,
                                 reassign.wait_seconds, at_least_zero),
            policies=reassign.policies,
        )

    def default(self) -> ReassignConf:
        return ReassignConf()


KIND = ReassignSection()
