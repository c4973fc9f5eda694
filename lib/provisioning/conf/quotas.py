"""The client quotas' section of the conf (KIP-546): `quotas`, the quota tables
(`tables.quota_manifests`, `tables.quota_snapshots`) and `policies.quota`, with the checks of
the quota policies' parameter blocks."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from provisioning.conf.model import PolicySpec
from provisioning.conf.policies import Check, Params, check_custom
from provisioning.conf.reader import Reader, at_least_zero, positive, table_list, type_name
from provisioning.conf.section import Given, Section
from provisioning.names.quotas import KEYS, UNMANAGED_QUOTA


@dataclass(frozen=True)
class QuotasConf:
    # Plan the live quotas no quota manifest lists as REMOVE (else they are left alone).
    remove_unlisted: bool = False
    # Over this many SET and REMOVE on one cluster in one run, none of that cluster's is
    # made (never lifted by `force`).
    max_changes_per_cluster: int = 200
    # Entities per AlterClientQuotas request.
    batch_size: int = 200
    # The quota manifests (`tables.quota_manifests`); None (the key left out): the run
    # manages no quota at all.
    manifests: tuple[str, ...] | None = None
    # Where the live quotas of each run are recorded (`tables.quota_snapshots`, default
    # `<tables.snapshots>_quotas`).
    snapshots: str = ""
    # `policies.quota`, in conf order.
    policies: tuple[PolicySpec, ...] = ()


def _bound(p: Params, name: str) -> float | None:
    """`name`: a finite number > 0 (never a boolean), or None when absent or refused."""
    raw = p.params.get(name)
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        p.problem(name, f"expected a number, got {type_name(raw)}")
        return None
    if not math.isfinite(raw) or raw <= 0:
        p.problem(name, f"must be a finite number > 0 (a quota is never 0), got {raw}")
        return None
    return float(raw)


def check_quota_range(params: Mapping[str, Any]) -> list[str]:
    """`key` (a known quota key) and at least one of `min`, `max` (numbers > 0, min <= max)."""
    p = Params(params, ("key", "min", "max"))
    key = params.get("key")
    if key is None:
        p.problem("key", "required parameter is missing")
    elif not isinstance(key, str) or key not in KEYS:
        p.problem("key", f"{key!r} is not a quota key (known: {', '.join(KEYS)})")
    low, high = _bound(p, "min"), _bound(p, "max")
    p.at_least_one("min", "max")
    if low is not None and high is not None and low > high:
        p.problem("min", f"must be <= max ({params['min']} > {params['max']})")
    return p.problems


# Quota policies judge QUOTA_PLAN rows; their registry
# (transforms.quotas.policies.QUOTA_POLICIES) is kept equal to this one by a unit test.
QUOTA_PARAMETER_CHECKS: dict[str, Check] = {
    "quota_range": check_quota_range,
    "custom": check_custom,
}
_KEYS = ("remove_unlisted", "max_changes_per_cluster", "batch_size")


class QuotasSection(Section):
    kind = "quotas"
    keys = ("quotas",)
    table_keys = ("quota_manifests", "quota_snapshots")
    policy_keys = ("quota",)
    policy_checks: ClassVar[Mapping[str, Mapping[str, Check]]] = {
        "quota": QUOTA_PARAMETER_CHECKS}
    check_rules = (UNMANAGED_QUOTA,)

    def read(self, r: Reader, given: Given) -> QuotasConf:
        tables = given.tables
        # Left out (or null): quotas are not managed. An empty list is a mistake, not a way
        # to say so: it would read as "every live quota is unlisted".
        manifests = (table_list(r, tables, "tables", "quota_manifests")
                     if tables.get("quota_manifests") is not None else None)
        snapshots = r.value(tables, "tables", "quota_snapshots", str,
                            f"{given.shared_tables.snapshots}_quotas")
        quotas = _read_quotas(r, r.section(given.top, "quotas"))
        return QuotasConf(
            remove_unlisted=quotas.remove_unlisted,
            max_changes_per_cluster=quotas.max_changes_per_cluster,
            batch_size=quotas.batch_size,
            manifests=manifests,
            snapshots=snapshots,
            policies=given.policies.get("quota", ()),
        )

    def default(self) -> QuotasConf:
        return QuotasConf()


def _read_quotas(r: Reader, body: Mapping[str, Any] | None) -> QuotasConf:
    quotas = QuotasConf()
    if body is None:
        return quotas
    key = "quotas"
    r.no_unknown(body, key, _KEYS)
    return QuotasConf(
        remove_unlisted=r.value(body, key, "remove_unlisted", bool, quotas.remove_unlisted),
        max_changes_per_cluster=r.value(body, key, "max_changes_per_cluster", int,
                                        quotas.max_changes_per_cluster, at_least_zero),
        batch_size=r.value(body, key, "batch_size", int, quotas.batch_size, positive),
    )


KIND = QuotasSection()
