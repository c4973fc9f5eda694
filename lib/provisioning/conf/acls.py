"""The ACL bindings' section of the conf: `acls`, the ACL tables (`tables.acl_manifests`,
`tables.acl_snapshots`) and `policies.acl`, with the checks of the ACL policies'
parameter blocks."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from provisioning.conf.model import PolicySpec
from provisioning.conf.policies import Check, Params, check_custom
from provisioning.conf.reader import Reader, at_least_zero, positive, string_list, table_list
from provisioning.conf.section import Given, Section
from provisioning.names.acls import PRINCIPAL_FORMAT


@dataclass(frozen=True)
class AclsConf:
    # Revoke live bindings no ACL manifest names (planned as REVOKE; made with revokes).
    remove_unlisted: bool = False
    # The only principals a CLUSTER binding may be granted to (unless the row says `force`).
    cluster_principals: tuple[str, ...] = ()
    # Over this many grants and revokes on one cluster in one run, none of that cluster's
    # is made.
    max_changes_per_cluster: int = 200
    # Bindings per CreateAcls / DeleteAcls request.
    batch_size: int = 1000
    # A topic this job deletes takes its LITERAL TOPIC bindings with it.
    revoke_with_deleted_topics: bool = True
    # Turn on the `owner_scope` ACL policy (the same as listing it in `policies.acl`).
    owner_scope: bool = False
    # The ACL manifests (`tables.acl_manifests`); None (the key left out): the run manages
    # no ACL at all.
    manifests: tuple[str, ...] | None = None
    # Where the live bindings of each run are recorded (`tables.acl_snapshots`, default
    # `<tables.snapshots>_acls`).
    snapshots: str = ""
    # `policies.acl`, in conf order (with `owner_scope` appended when `owner_scope` turns it
    # on).
    policies: tuple[PolicySpec, ...] = ()


def check_owner_scope(params: Mapping[str, Any]) -> list[str]:
    p = Params(params, ("exempt_owners",))
    p.string_list("exempt_owners")
    return p.problems


def check_principal_pattern(params: Mapping[str, Any]) -> list[str]:
    p = Params(params, ("default", "by_owner"))
    p.regex("default")
    p.regex_map("by_owner")
    p.at_least_one("default", "by_owner")
    return p.problems


# ACL policies judge ACL_PLAN rows; their registry (transforms.acls.policies.ACL_POLICIES) is
# kept equal to this one by a unit test.
ACL_PARAMETER_CHECKS: dict[str, Check] = {
    "owner_scope": check_owner_scope,
    "principal_pattern": check_principal_pattern,
    "custom": check_custom,
}
_KEYS = ("remove_unlisted", "cluster_principals", "max_changes_per_cluster", "batch_size",
         "revoke_with_deleted_topics", "owner_scope")


class AclsSection(Section):
    kind = "acls"
    keys = ("acls",)
    table_keys = ("acl_manifests", "acl_snapshots")
    policy_keys = ("acl",)
    policy_checks: ClassVar[Mapping[str, Mapping[str, Check]]] = {"acl": ACL_PARAMETER_CHECKS}

    def read(self, r: Reader, given: Given) -> AclsConf:
        tables = given.tables
        # Left out (or null): ACLs are not managed. An empty list is a mistake, not a way to
        # say so: it would read as "every live binding is unlisted".
        manifests = (table_list(r, tables, "tables", "acl_manifests")
                     if tables.get("acl_manifests") is not None else None)
        snapshots = r.value(tables, "tables", "acl_snapshots", str,
                            f"{given.shared_tables.snapshots}_acls")
        acls = _read_acls(r, r.section(given.top, "acls"))
        return AclsConf(
            remove_unlisted=acls.remove_unlisted,
            cluster_principals=acls.cluster_principals,
            max_changes_per_cluster=acls.max_changes_per_cluster,
            batch_size=acls.batch_size,
            revoke_with_deleted_topics=acls.revoke_with_deleted_topics,
            owner_scope=acls.owner_scope,
            manifests=manifests,
            snapshots=snapshots,
            policies=_with_owner_scope(r, acls, given.policies.get("acl", ())),
        )

    def default(self) -> AclsConf:
        return AclsConf()


def _read_acls(r: Reader, body: Mapping[str, Any] | None) -> AclsConf:
    acls = AclsConf()
    if body is None:
        return acls
    key = "acls"
    r.no_unknown(body, key, _KEYS)
    principals = string_list(r, body, key, "cluster_principals", ())
    for i, principal in enumerate(principals):
        if not re.match(PRINCIPAL_FORMAT, principal):
            r.problem(f"{key}.cluster_principals[{i}]",
                      f"{principal!r} is not a principal Type:name (e.g. User:platform-admin)")
    return AclsConf(
        remove_unlisted=r.value(body, key, "remove_unlisted", bool, acls.remove_unlisted),
        cluster_principals=principals,
        max_changes_per_cluster=r.value(body, key, "max_changes_per_cluster", int,
                                        acls.max_changes_per_cluster, at_least_zero),
        batch_size=r.value(body, key, "batch_size", int, acls.batch_size, positive),
        revoke_with_deleted_topics=r.value(body, key, "revoke_with_deleted_topics", bool,
                                           acls.revoke_with_deleted_topics),
        owner_scope=r.value(body, key, "owner_scope", bool, acls.owner_scope),
    )


def _with_owner_scope(r: Reader, acls: AclsConf, specs: tuple[PolicySpec, ...]
                      ) -> tuple[PolicySpec, ...]:
    """`policies.acl`, plus owner_scope when `acls.owner_scope` turns it on; on in both
    places is a problem (which parameters would count is not to be guessed)."""
    if not acls.owner_scope:
        return specs
    listed = [s.key for s in specs if s.name == "owner_scope"]
    if listed:
        r.problem("acls.owner_scope", f"owner_scope is also listed at {', '.join(listed)}; "
                  "keep one of the two")
        return specs
    return (*specs, PolicySpec(name="owner_scope", params={}, key="acls.owner_scope"))


KIND = AclsSection()
