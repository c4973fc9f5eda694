"""The topics' section of the conf: deletes, alters and the create, delete and alter
policies (`policies.create`, `policies.delete`, `policies.alter`), with the models of
their parameter blocks; and the row of a topic manifest file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from provisioning.conf.model import STRICT, PolicySpec
from provisioning.conf.policies import Custom, keyed, optional, regex, required
from provisioning.conf.section import Given, Section
from provisioning.names import ALWAYS_PROTECTED, CHECK_RULES

try:  # the loader's side only (conf.model says why)
    from pydantic import BeforeValidator, Field, WithJsonSchema

    from provisioning.conf.keys import Count, Flag, StringList
    from provisioning.conf.manifests import Configs, ForceColumn, Integer, Text
    from provisioning.conf.policies import AtLeast0, AtLeast1, Regex, RegexMap, RequiredStringList
except ImportError:  # pragma: no cover
    if TYPE_CHECKING:
        raise

DEFAULT_PROTECTED_TOPICS = ALWAYS_PROTECTED


@dataclass(frozen=True)
class DeletesConf:
    """The `deletes` mapping: how deletes are capped and which topics they never touch."""

    __pydantic_config__ = STRICT
    max_per_cluster: Annotated[Count, Field(
        description="Over this many deletes on one cluster in one run, none of that "
                    "cluster's is made.")] = 10
    protected: Annotated[StringList, Field(
        description="Topic names or glob patterns never deleted, added to the built-in "
                    f"ones ({', '.join(DEFAULT_PROTECTED_TOPICS)}), which always stay.")
                         ] = DEFAULT_PROTECTED_TOPICS
    deny_list: Annotated[StringList, Field(
        description="Topic names or glob patterns whose deletion is refused.")] = ()
    prune: Annotated[Flag, Field(
        description="Delete live topics no manifest lists (else they are left alone).")
                     ] = False
    in_use_days: Annotated[Count, Field(
        description="A topic with a record newer than this many days is in use for the "
                    "delete policy; 0 turns the write check off.")] = 7


@dataclass(frozen=True)
class AltersConf:
    """The `alters` mapping: how alters of live topics are capped and how far they go."""

    __pydantic_config__ = STRICT
    max_per_cluster: Annotated[Count, Field(
        description="Over this many alters on one cluster in one run, none of that "
                    "cluster's is made.")] = 50
    remove_unlisted_configs: Annotated[Flag, Field(
        description="Remove a live config override the manifest row does not list (back to "
                    "the broker's default).")] = False


@dataclass(frozen=True)
class TopicsConf:
    deletes: DeletesConf = DeletesConf()
    alters: AltersConf = AltersConf()
    create_policies: tuple[PolicySpec, ...] = ()
    delete_policies: tuple[PolicySpec, ...] = ()
    alter_policies: tuple[PolicySpec, ...] = ()


# -- the models of the topic policies' parameter blocks -----------------------------------

@dataclass(frozen=True)
class TopicNamePattern:
    """Topic names must fully match their owner's rule, else the default rule."""

    __pydantic_config__ = STRICT
    at_least_one: ClassVar[tuple[str, ...]] = ("default", "by_owner")
    default: Annotated[Regex, Field(description="The rule of an owner without its own (a "
                                    "regular expression the whole name must match).")] = None
    by_owner: Annotated[RegexMap, Field(description="owner -> the rule of that owner's "
                                        "topics.")] = None


@dataclass(frozen=True)
class Range:
    """The value the topic will get must lie within `min` and `max`."""

    __pydantic_config__ = STRICT
    at_least_one: ClassVar[tuple[str, ...]] = ("min", "max")
    ordered: ClassVar[tuple[str, str]] = ("min", "max")
    min: Annotated[AtLeast1 | None, Field(description="The least value allowed.")] = None
    max: Annotated[AtLeast1 | None, Field(description="The greatest value allowed.")] = None


if "Field" in globals():  # the loader's side (conf.model says why)
    def _config_patterns(v: Any) -> Any:
        configs = keyed(v)
        if not configs:
            raise ValueError("name at least one config")
        return configs

    ConfigPatterns = Annotated[
        dict[str, Annotated[str | None, BeforeValidator(optional(regex))]],
        BeforeValidator(required(_config_patterns)),
        WithJsonSchema({"type": "object", "minProperties": 1, "additionalProperties": {
            "type": ["string", "null"], "format": "regex"}})]


@dataclass(frozen=True)
class RequiredConfigs:
    """The topic must set these configs (to a value matching their rule)."""

    __pydantic_config__ = STRICT
    configs: Annotated[ConfigPatterns, Field(description="config name -> the regular "
                                             "expression its value must match (null: any "
                                             "value).")]


@dataclass(frozen=True)
class ForbiddenConfigs:
    """The topic must not set these configs."""

    __pydantic_config__ = STRICT
    configs: Annotated[RequiredStringList, Field(description="The config names refused.")]


@dataclass(frozen=True)
class NoParameters:
    """A policy that takes no parameters."""

    __pydantic_config__ = STRICT


@dataclass(frozen=True)
class PartitionBudget:
    """A cluster's partitions after the run stay within a budget."""

    __pydantic_config__ = STRICT
    max_partitions: Annotated[AtLeast1, Field(description="The most partitions a cluster "
                                              "may hold.")]


@dataclass(frozen=True)
class OwnerPartitionAllowance:
    """An owner's partitions on a cluster stay within its allowance."""

    __pydantic_config__ = STRICT
    at_least_one: ClassVar[tuple[str, ...]] = ("quotas", "default")
    # The parameter's name is the conf's API (test_architecture.API_WORDS).
    quotas: Annotated[dict[str, AtLeast0] | None, BeforeValidator(optional(keyed)),
                      Field(description="owner -> the most partitions it may hold on a "
                                        "cluster.")] = None
    default: Annotated[AtLeast0 | None, Field(description="The allowance of an owner "
                                              "without its own.")] = None


@dataclass(frozen=True)
class ProtectedPatterns:
    """Topics matching these are never deleted."""

    __pydantic_config__ = STRICT
    patterns: Annotated[RequiredStringList, Field(description="Topic names or glob "
                                                  "patterns.")]


CREATE_POLICIES: dict[str, type] = {
    "topic_name_pattern": TopicNamePattern,
    "partitions_range": Range,
    "replication_factor_range": Range,
    "required_configs": RequiredConfigs,
    "forbidden_configs": ForbiddenConfigs,
    "min_insync_below_rf": NoParameters,
    "partition_budget": PartitionBudget,
    "owner_partition_quota": OwnerPartitionAllowance,
    "custom": Custom,
}
# Alter policies: the create policies that judge a topic's shape, applied to the topic as
# it will be after the alter (kinds.topics.policies.alter.AFTER_ALTER), and custom.
ALTER_POLICIES: dict[str, type] = {
    **{name: CREATE_POLICIES[name] for name in (
        "required_configs", "forbidden_configs", "min_insync_below_rf", "partitions_range",
        "partition_budget", "owner_partition_quota")},
    "custom": Custom,
}
DELETE_POLICIES: dict[str, type] = {
    "protected_patterns": ProtectedPatterns,
    "custom": Custom,
}


# -- a row of a topic manifest file (the columns of schemas.MANIFEST) --------------------

def _assignment(v: Any) -> Any:
    if v is None:
        return None
    try:
        return {int(k): [int(b) for b in brokers] for k, brokers in v.items()}
    except (AttributeError, TypeError, ValueError):
        raise ValueError("expected partition -> [broker ids]") from None


if "Field" in globals():  # the loader's side (conf.model says why)
    # YAML reads `0:` as an integer key, JSON writes "0": both are partition numbers.
    Assignment = Annotated[dict[int, list[int]] | None, BeforeValidator(_assignment),
                           WithJsonSchema({"type": ["object", "null"], "additionalProperties": {
                               "type": "array", "items": {"type": "integer"}}})]


@dataclass(frozen=True)
class TopicManifestRow:
    """One topic of a manifest file: the topic a cluster should have (or not have)."""

    __pydantic_config__ = STRICT
    cluster: Annotated[Text, Field(description="The cluster (a name under `clusters`).")
                       ] = None
    topic: Annotated[Text, Field(description="The topic's name.")] = None
    state: Annotated[Text, Field(description="`present` (left out: present) or `absent` "
                                 "(deleted with deletes allowed).")] = None
    partitions: Annotated[Integer, Field(description="The partition count (left out: the "
                                         "broker's default).")] = None
    replication_factor: Annotated[Integer, Field(
        description="The replication factor (left out: the broker's default).")] = None
    replica_assignment: Annotated[Assignment, Field(
        description="partition -> broker ids, instead of partitions and "
                    "replication_factor.")] = None
    configs: Annotated[Configs, Field(description="Topic configs (name -> value; a number "
                                      "or a boolean is read as its text).")] = None
    owner: Annotated[Text, Field(description="The team that owns the topic.")] = None
    force: ForceColumn = None


class TopicsSection(Section):
    kind = "topics"
    key_models: ClassVar[Mapping[str, type]] = {"deletes": DeletesConf, "alters": AltersConf}
    check_rules = CHECK_RULES
    manifest_row = TopicManifestRow
    policy_models: ClassVar[Mapping[str, Mapping[str, type]]] = {
        "create": CREATE_POLICIES, "delete": DELETE_POLICIES, "alter": ALTER_POLICIES}

    def build(self, given: Given) -> TopicsConf:
        deletes = given.top.get("deletes", DeletesConf())
        return TopicsConf(
            # The built-in protections always stay; conf can only add to them.
            deletes=replace(deletes, protected=tuple(dict.fromkeys(
                DEFAULT_PROTECTED_TOPICS + deletes.protected))),
            alters=given.top.get("alters", AltersConf()),
            create_policies=given.policies.get("create", ()),
            delete_policies=given.policies.get("delete", ()),
            alter_policies=given.policies.get("alter", ()),
        )

    def default(self) -> TopicsConf:
        return TopicsConf()


SECTION = TopicsSection()
