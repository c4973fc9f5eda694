"""The topics' section of the conf: deletes, alters and the create, delete and alter
policies (`policies.create`, `policies.delete`, `policies.alter`), with the checks of
their parameter blocks; and the row of a topic manifest file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from provisioning.conf.model import STRICT, PolicySpec
from provisioning.conf.policies import Check, Params, check_custom
from provisioning.conf.section import Given, Section
from provisioning.names import ALWAYS_PROTECTED, CHECK_RULES

try:  # the loader's side only (conf.model says why)
    from pydantic import BeforeValidator, Field, WithJsonSchema

    from provisioning.conf.keys import Count, Flag, StringList
    from provisioning.conf.manifests import Force, Integer, Text
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


# -- the checks of the topic policies' parameter blocks ----------------------------------

def check_topic_name_pattern(params: Mapping[str, Any]) -> list[str]:
    p = Params(params, ("default", "by_owner"))
    p.regex("default")
    p.regex_map("by_owner")
    p.at_least_one("default", "by_owner")
    return p.problems


def check_range(params: Mapping[str, Any]) -> list[str]:
    p = Params(params, ("min", "max"))
    p.integer("min", 1)
    p.integer("max", 1)
    p.at_least_one("min", "max")
    p.ordered("min", "max")
    return p.problems


def check_required_configs(params: Mapping[str, Any]) -> list[str]:
    p = Params(params, ("configs",))
    configs = p.regex_map("configs", required=True, nullable_values=True)
    if configs is not None and not params["configs"]:
        p.problem("configs", "name at least one config")
    return p.problems


def _one_list(name: str) -> Check:
    """The check of a policy whose only parameter is a required list of strings."""
    def check(params: Mapping[str, Any]) -> list[str]:
        p = Params(params, (name,))
        p.string_list(name, required=True)
        return p.problems

    return check


check_forbidden_configs = _one_list("configs")
check_protected_patterns = _one_list("patterns")


def check_no_params(params: Mapping[str, Any]) -> list[str]:
    return Params(params, ()).problems


def check_partition_budget(params: Mapping[str, Any]) -> list[str]:
    p = Params(params, ("max_partitions",))
    p.integer("max_partitions", 1, required=True)
    return p.problems


def check_owner_partition_quota(params: Mapping[str, Any]) -> list[str]:
    p = Params(params, ("quotas", "default"))
    p.int_map("quotas", 0)
    p.integer("default", 0)
    p.at_least_one("quotas", "default")
    return p.problems


CREATE_CHECKS: dict[str, Check] = {
    "topic_name_pattern": check_topic_name_pattern,
    "partitions_range": check_range,
    "replication_factor_range": check_range,
    "required_configs": check_required_configs,
    "forbidden_configs": check_forbidden_configs,
    "min_insync_below_rf": check_no_params,
    "partition_budget": check_partition_budget,
    "owner_partition_quota": check_owner_partition_quota,
    "custom": check_custom,
}
# Alter policies: the create policies that judge a topic's shape, applied to the topic as
# it will be after the alter (transforms.policies.alter.AFTER_ALTER), and custom.
ALTER_CHECKS: dict[str, Check] = {
    **{name: CREATE_CHECKS[name] for name in (
        "required_configs", "forbidden_configs", "min_insync_below_rf", "partitions_range",
        "partition_budget", "owner_partition_quota")},
    "custom": check_custom,
}
DELETE_CHECKS: dict[str, Check] = {
    "protected_patterns": check_protected_patterns,
    "custom": check_custom,
}


# -- a row of a topic manifest file (the columns of schemas.MANIFEST) --------------------

def _configs(v: Any) -> Any:
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise ValueError("expected a mapping of config name -> value")
    # Kafka configs are strings on the wire; YAML may have read 604800000 as a number.
    return {str(k): _config_text(x) for k, x in v.items()}


def _config_text(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _assignment(v: Any) -> Any:
    if v is None:
        return None
    try:
        return {int(k): [int(b) for b in brokers] for k, brokers in v.items()}
    except (AttributeError, TypeError, ValueError):
        raise ValueError("expected partition -> [broker ids]") from None


if "Field" in globals():  # the loader's side (conf.model says why)
    Configs = Annotated[dict[str, str | None] | None, BeforeValidator(_configs), WithJsonSchema(
        {"type": ["object", "null"],
         "additionalProperties": {"type": ["string", "number", "boolean", "null"]}})]
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
    force: Annotated[Force, Field(description="Lift the policies that allow it for this "
                                  "row.")] = None


class TopicsSection(Section):
    kind = "topics"
    key_models: ClassVar[Mapping[str, type]] = {"deletes": DeletesConf, "alters": AltersConf}
    keys = ("deletes", "alters")
    policy_keys = ("create", "delete", "alter")
    check_rules = CHECK_RULES
    manifest_row = TopicManifestRow
    policy_checks: ClassVar[Mapping[str, Mapping[str, Check]]] = {
       "create": CREATE_CHECKS, "delete": DELETE_CHECKS, "alter": ALTER_CHECKS}

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


KIND = TopicsSection()
