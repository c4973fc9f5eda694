"""The ACL bindings' section of the conf: `acls`, the ACL tables (`tables.acl_manifests`,
`tables.acl_snapshots`) and `policies.acl`, with the models of the ACL policies'
parameter blocks; and the row of an ACL manifest file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from provisioning.conf.model import STRICT, PolicySpec
from provisioning.conf.policies import Custom
from provisioning.conf.section import Given, Section
from provisioning.names.acls import PRINCIPAL_FORMAT

try:  # the loader's side only (conf.model says why)
    from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema

    from provisioning.conf.keys import Count, Flag, Positive, TableList, Text, as_string_list
    from provisioning.conf.manifests import Force
    from provisioning.conf.manifests import Text as Cell
    from provisioning.conf.policies import Regex, RegexMap
    from provisioning.conf.policies import StringList as PolicyStrings
except ImportError:  # pragma: no cover
    if TYPE_CHECKING:
        raise


def _principal(v: str) -> str:
    if not re.match(PRINCIPAL_FORMAT, v):
        raise ValueError(f"{v!r} is not a principal Type:name (e.g. User:platform-admin)")
    return v


if "Field" in globals():  # the loader's side (conf.model says why)
    Principals = Annotated[
        tuple[Annotated[str, AfterValidator(_principal)], ...],
        BeforeValidator(as_string_list),
        WithJsonSchema({"type": "array",
                        "items": {"type": "string", "pattern": PRINCIPAL_FORMAT}})]


@dataclass(frozen=True)
class AclsKeys:
    """The `acls` mapping: how ACL bindings are planned and sent."""

    __pydantic_config__ = STRICT
    remove_unlisted: Annotated[Flag, Field(
        description="Revoke live bindings no ACL manifest names (planned as REVOKE; made "
                    "with revokes allowed).")] = False
    cluster_principals: Annotated[Principals, Field(
        description="The only principals (Type:name) a CLUSTER binding may be granted to, "
                    "unless the row says `force`.")] = ()
    max_changes_per_cluster: Annotated[Count, Field(
        description="Over this many grants and revokes on one cluster in one run, none of "
                    "that cluster's is made.")] = 200
    batch_size: Annotated[Positive, Field(
        description="Bindings per CreateAcls / DeleteAcls request.")] = 1000
    revoke_with_deleted_topics: Annotated[Flag, Field(
        description="A topic this job deletes takes its LITERAL TOPIC bindings with it.")
                                          ] = True
    owner_scope: Annotated[Flag, Field(
        description="Turn on the `owner_scope` ACL policy (the same as listing it in "
                    "`policies.acl`, which then must not list it).")] = False


@dataclass(frozen=True)
class AclTables:
    """The ACL keys of `tables`."""

    __pydantic_config__ = STRICT
    acl_manifests: Annotated[TableList | None, Field(
        description="The ACL manifest tables; left out: the run manages no ACL at all (an "
                    "empty list is refused: every live binding would be unlisted).")] = None
    acl_snapshots: Annotated[Text | None, Field(
        description="Where the live bindings of each run are recorded (left out: "
                    "`<tables.snapshots>_acls`).")] = None


@dataclass(frozen=True)
class AclsConf(AclsKeys):
    # The ACL manifests (`tables.acl_manifests`); None (the key left out): the run manages
    # no ACL at all.
    manifests: tuple[str, ...] | None = None
    # Where the live bindings of each run are recorded (`tables.acl_snapshots`).
    snapshots: str = ""
    # `policies.acl`, in conf order (with `owner_scope` appended when `owner_scope` turns it
    # on).
    policies: tuple[PolicySpec, ...] = ()


@dataclass(frozen=True)
class OwnerScope:
    """A binding's owner may be granted on its own topics and groups only."""

    __pydantic_config__ = STRICT
    exempt_owners: Annotated[PolicyStrings, Field(
        description="Owners the policy does not judge (e.g. platform).")] = None


@dataclass(frozen=True)
class PrincipalPattern:
    """Principals must fully match their owner's rule, else the default rule."""

    __pydantic_config__ = STRICT
    at_least_one: ClassVar[tuple[str, ...]] = ("default", "by_owner")
    default: Annotated[Regex, Field(description="The rule of an owner without its own (a "
                                    "regular expression the whole principal must match).")
                       ] = None
    by_owner: Annotated[RegexMap, Field(description="owner -> the rule of that owner's "
                                        "principals.")] = None


# ACL policies judge ACL_PLAN rows; their registry (transforms.acls.policies.ACL_POLICIES) is
# kept equal to this one by a unit test.
ACL_POLICY_MODELS: dict[str, type] = {
    "owner_scope": OwnerScope,
    "principal_pattern": PrincipalPattern,
    "custom": Custom,
}


def _operations(v: Any) -> Any:
    if isinstance(v, str):
        return [v]
    if v is not None and not (isinstance(v, list) and all(isinstance(o, str) for o in v)):
        raise ValueError("expected a list of operation names")
    return v


if "Field" in globals():  # the loader's side (conf.model says why)
    Operations = Annotated[list[str] | None, BeforeValidator(_operations), WithJsonSchema(
        {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}},
                   {"type": "null"}]})]


@dataclass(frozen=True)
class AclManifestRow:
    """One binding of an ACL manifest file (the columns of schemas.ACL_MANIFEST)."""

    __pydantic_config__ = STRICT
    cluster: Annotated[Cell, Field(description="The cluster (a name under `clusters`).")
                       ] = None
    principal: Annotated[Cell, Field(description="Who is granted: Type:name (e.g. "
                                     "User:orders-app).")] = None
    host: Annotated[Cell, Field(description="The host it is granted from (left out: any, "
                                "`*`).")] = None
    resource_type: Annotated[Cell, Field(description="TOPIC, GROUP, CLUSTER, "
                                         "TRANSACTIONAL_ID or DELEGATION_TOKEN.")] = None
    resource_name: Annotated[Cell, Field(description="The resource's name (or prefix).")
                             ] = None
    pattern_type: Annotated[Cell, Field(description="LITERAL or PREFIXED (left out: "
                                        "LITERAL).")] = None
    operations: Annotated[Operations, Field(description="The operations granted (one "
                                            "binding each), a name or a list.")] = None
    permission: Annotated[Cell, Field(description="ALLOW or DENY (left out: ALLOW).")
                          ] = None
    state: Annotated[Cell, Field(description="`present` (left out: present) or `absent` "
                                 "(revoked with revokes allowed).")] = None
    owner: Annotated[Cell, Field(description="The team that owns the binding.")] = None
    force: Annotated[Force, Field(description="Lift the policies that allow it for this "
                                  "row.")] = None


class AclsSection(Section):
    kind = "acls"
    key_models: ClassVar[Mapping[str, type]] = {"acls": AclsKeys}
    tables_model = AclTables
    manifest_row = AclManifestRow
    policy_models: ClassVar[Mapping[str, Mapping[str, type]]] = {"acl": ACL_POLICY_MODELS}

    def build(self, given: Given) -> AclsConf:
        tables: AclTables = given.tables
        acls: AclsKeys = given.top.get("acls", AclsKeys())
        return AclsConf(
            **{f.name: getattr(acls, f.name) for f in fields(AclsKeys)},
            manifests=tables.acl_manifests,
            snapshots=tables.acl_snapshots or f"{given.shared_tables.snapshots}_acls",
            policies=_with_owner_scope(given, acls, given.policies.get("acl", ())),
        )

    def default(self) -> AclsConf:
        return AclsConf()


def _with_owner_scope(given: Given, acls: AclsKeys, specs: tuple[PolicySpec, ...]
                      ) -> tuple[PolicySpec, ...]:
    """`policies.acl`, plus owner_scope when `acls.owner_scope` turns it on; on in both
    places is a problem (which parameters would count is not to be guessed)."""
    if not acls.owner_scope:
        return specs
    listed = [s.key for s in specs if s.name == "owner_scope"]
    if listed:
        given.problem("acls.owner_scope", f"owner_scope is also listed at "
                      f"{', '.join(listed)}; keep one of the two")
        return specs
    return (*specs, PolicySpec(name="owner_scope", params={}, key="acls.owner_scope"))


KIND = AclsSection()
