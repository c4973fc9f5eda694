"""The ACL bindings' section of the conf: `acls`, the ACL tables (`tables.acl_manifests`,
`tables.acl_snapshots`) and `policies.acl`, with the models of the ACL policies'
parameter blocks; and the row of an ACL manifest file."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from provisioning.conf.entity import EntityConf, EntitySection
from provisioning.conf.model import STRICT, PolicySpec
from provisioning.conf.policies import Custom
from provisioning.conf.section import Given
from provisioning.kinds.acls.names import NOUNS, PRINCIPAL_FORMAT

try:  # the loader's side only (conf.model says why)
    from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema

    from provisioning.conf.keys import Count, Flag, Positive, as_string_list
    from provisioning.conf.manifests import ForceColumn
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


# The entity kinds' keys (`conf.entity.EntityKeys`) and the ACL bindings' own, in an order of
# their own, which the conf's messages show.
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
class AclsConf(AclsKeys, EntityConf):
    """The ACL bindings' section as built; `policies` has `owner_scope` appended when
    `acls.owner_scope` turns it on."""


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


# ACL policies judge ACL_PLAN rows; their registry (kinds.acls.policies.ACL_POLICIES) is
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
    """One binding of an ACL manifest file (the columns of kinds.acls.schema.ACL_MANIFEST)."""

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
    force: ForceColumn = None


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


class AclsSection(EntitySection):
    nouns, conf_class, keys_class = NOUNS, AclsConf, AclsKeys
    manifest_row = AclManifestRow
    policy_catalogue = ACL_POLICY_MODELS

    def policies(self, given: Given, keys: Any) -> tuple[PolicySpec, ...]:
        return _with_owner_scope(given, keys, given.policies.get("acl", ()))


SECTION = AclsSection()
