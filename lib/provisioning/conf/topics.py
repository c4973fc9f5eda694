"""The topics' section of the conf: deletes, alters and the create, delete and alter
policies (`policies.create`, `policies.delete`, `policies.alter`), with the checks of
their parameter blocks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from provisioning.conf.model import PolicySpec
from provisioning.conf.policies import Check, Params, check_custom
from provisioning.conf.reader import Reader, at_least_zero, string_list
from provisioning.conf.section import Given, Section
from provisioning.names import ALWAYS_PROTECTED, CHECK_RULES

DEFAULT_PROTECTED_TOPICS = ALWAYS_PROTECTED


@dataclass(frozen=True)
class DeletesConf:
    max_per_cluster: int = 10
    protected: tuple[str, ...] = DEFAULT_PROTECTED_TOPICS
    deny_list: tuple[str, ...] = ()
    prune: bool = False
    # A topic with a record newer than this many days is in use: not deleted unless its
    # row says `force` (0: only consumer groups' committed offsets count).
    in_use_days: int = 7


@dataclass(frozen=True)
class AltersConf:
    # Over this many alters on one cluster in one run, none of that cluster's is made.
    max_per_cluster: int = 50
    # Remove a live override the manifest row does not list (DELETE: back to the default).
    remove_unlisted_configs: bool = False


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


class TopicsSection(Section):
    kind = "topics"
    keys = ("deletes", "alters")
    policy_keys = ("create", "delete", "alter")
    check_rules = CHECK_RULES
    policy_checks: ClassVar[Mapping[str, Mapping[str, Check]]] = {
       "create": CREATE_CHECKS, "delete": DELETE_CHECKS, "alter": ALTER_CHECKS}

    def read(self, r: Reader, given: Given) -> TopicsConf:
        return TopicsConf(
            deletes=_read_deletes(r, r.section(given.top, "deletes")),
            alters=_read_alters(r, r.section(given.top, "alters")),
            create_policies=given.policies.get("create", ()),
            delete_policies=given.policies.get("delete", ()),
            alter_policies=given.policies.get("alter", ()),
        )

    def default(self) -> TopicsConf:
        return TopicsConf()


def _read_deletes(r: Reader, body: Mapping[str, Any] | None) -> DeletesConf:
    deletes = DeletesConf()
    if body is None:
        return deletes
    r.no_unknown(body, "deletes", ("max_per_cluster", "protected", "deny_list", "prune",
                                   "in_use_days"))
    return DeletesConf(
        max_per_cluster=r.value(body, "deletes", "max_per_cluster", int,
                                deletes.max_per_cluster, at_least_zero),
        # The built-in protections always stay; conf can only add to them.
        protected=tuple(dict.fromkeys(
            DEFAULT_PROTECTED_TOPICS + string_list(r, body, "deletes", "protected", ()))),
        deny_list=string_list(r, body, "deletes", "deny_list", ()),
        prune=r.value(body, "deletes", "prune", bool, False),
        in_use_days=r.value(body, "deletes", "in_use_days", int, deletes.in_use_days,
                            at_least_zero),
    )


def _read_alters(r: Reader, body: Mapping[str, Any] | None) -> AltersConf:
    alters = AltersConf()
    if body is None:
        return alters
    r.no_unknown(body, "alters", ("max_per_cluster", "remove_unlisted_configs"))
    return AltersConf(
        max_per_cluster=r.value(body, "alters", "max_per_cluster", int,
                                alters.max_per_cluster, at_least_zero),
        remove_unlisted_configs=r.value(body, "alters", "remove_unlisted_configs", bool,
                                        False),
    )


KIND = TopicsSection()
