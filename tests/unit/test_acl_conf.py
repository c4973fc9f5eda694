"""The ACL keys of the conf: tables, the `acls` section and `policies.acl`, every problem
named at once."""

from __future__ import annotations

from typing import Any

import pytest

from provisioning.conf import PolicySpec
from provisioning.errors import ConfError
from provisioning.kinds.acls.conf import AclsConf
from tests.helpers import parse_conf

EXAMPLE = "tests.unit.custom_policy_example"
TABLES = {"manifests": ["m"], "audit": "a", "runs": "r", "snapshots": "wh/s"}


def _data(tables: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    return {"clusters": {"local": {"bootstrap_servers": "127.0.0.1:9092"}},
            "tables": {**TABLES, **(tables or {})}, **top}


def _problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfError) as err:
        parse_conf(data, "test.yaml")
    return err.value.problems


def test_without_the_keys_no_acl_is_managed_and_the_defaults_hold() -> None:
    acls = parse_conf(_data(), "test.yaml").section(AclsConf)
    assert acls.manifests is None
    assert acls.snapshots == "wh/s_acls"
    assert acls == AclsConf(remove_unlisted=False, cluster_principals=(),
                            max_changes_per_cluster=200, batch_size=1000,
                            revoke_with_deleted_topics=True, owner_scope=False,
                            manifests=None, snapshots="wh/s_acls", policies=())
    assert acls.policies == ()


def test_acl_tables_take_a_name_or_a_list_and_an_explicit_snapshot_table() -> None:
    one = parse_conf(_data({"acl_manifests": "wh/acls"}), "t").section(AclsConf)
    many = parse_conf(_data({"acl_manifests": ["wh/acls", "cat.db.acls"],
                             "acl_snapshots": "wh/live_acls"}), "t").section(AclsConf)
    assert (one.manifests, one.snapshots) == (("wh/acls",), "wh/s_acls")
    assert (many.manifests, many.snapshots) == (("wh/acls", "cat.db.acls"), "wh/live_acls")


def test_the_acls_section_is_read_typed() -> None:
    conf = parse_conf(_data(acls={
        "remove_unlisted": True, "cluster_principals": ["User:platform", "User:CN=ops,O=corp"],
        "max_changes_per_cluster": 0, "batch_size": 50, "revoke_with_deleted_topics": False}),
        "t")
    assert conf.section(AclsConf) == AclsConf(
        remove_unlisted=True, cluster_principals=("User:platform", "User:CN=ops,O=corp"),
        max_changes_per_cluster=0, batch_size=50, revoke_with_deleted_topics=False,
        owner_scope=False, snapshots="wh/s_acls")


def test_every_bad_acl_key_is_reported_at_once() -> None:
    data = _data({"acl_manifests": [], "acl_snapshot": "x"}, acls={
        "remove_unlisted": "yes", "cluster_principals": ["platform", "User:ok", "User: x"],
        "max_changes_per_cluster": -1, "batch_size": 0, "revoke_with_deleted_topics": 1,
        "owner_scope": None, "owners": True})
    assert _problems(data) == [
        "tables.acl_snapshot: unknown key (allowed: manifests, audit, runs, snapshots, locks, "
        "violations, inventory, disks, acl_manifests, acl_snapshots, quota_manifests, "
        "quota_snapshots, user_manifests, user_snapshots, group_manifests, group_snapshots, "
        "offset_resets, offset_snapshots)",
        "tables.acl_manifests: expected a table path or name, or a non-empty list of them",
        "acls.owners: unknown key (allowed: remove_unlisted, cluster_principals, "
        "max_changes_per_cluster, batch_size, revoke_with_deleted_topics, owner_scope)",
        "acls.remove_unlisted: expected a boolean, got a string",
        "acls.cluster_principals[0]: 'platform' is not a principal Type:name "
        "(e.g. User:platform-admin)",
        "acls.cluster_principals[2]: 'User: x' is not a principal Type:name "
        "(e.g. User:platform-admin)",
        "acls.max_changes_per_cluster: must be >= 0, got -1",
        "acls.batch_size: must be > 0, got 0",
        "acls.revoke_with_deleted_topics: expected a boolean, got an integer",
    ]


def test_cluster_principals_must_be_a_list_of_strings() -> None:
    assert _problems(_data(acls={"cluster_principals": "User:platform"})) == [
        "acls.cluster_principals: expected a list of strings"]


def test_acl_policies_load_in_conf_order() -> None:
    acl = [{"name": "principal_pattern", "default": "User:[a-z-]+",
            "by_owner": {"payments": "User:pay-.+"}},
           {"name": "owner_scope", "exempt_owners": ["platform"]},
           {"name": "custom", "callable": f"{EXAMPLE}:refuse_word", "word": "tmp"}]
    conf = parse_conf(_data(policies={"acl": acl}), "t")
    assert conf.section(AclsConf).policies == (
        PolicySpec("principal_pattern", {"default": "User:[a-z-]+",
                                         "by_owner": {"payments": "User:pay-.+"}},
                   "policies.acl[0]"),
        PolicySpec("owner_scope", {"exempt_owners": ["platform"]}, "policies.acl[1]"),
        PolicySpec("custom", {"callable": f"{EXAMPLE}:refuse_word", "word": "tmp"},
                   "policies.acl[2]"),
    )


def test_acls_owner_scope_turns_the_policy_on() -> None:
    conf = parse_conf(_data(acls={"owner_scope": True},
                            policies={"acl": [{"name": "principal_pattern", "default": ".+"}]}),
                      "t")
    assert conf.section(AclsConf).owner_scope is True
    assert conf.section(AclsConf).policies == (
        PolicySpec("principal_pattern", {"default": ".+"}, "policies.acl[0]"),
        PolicySpec("owner_scope", {}, "acls.owner_scope"))


def test_owner_scope_on_in_both_places_is_a_problem() -> None:
    data = _data(acls={"owner_scope": True},
                 policies={"acl": [{"name": "owner_scope", "exempt_owners": ["platform"]}]})
    assert _problems(data) == [
        "acls.owner_scope: owner_scope is also listed at policies.acl[0]; keep one of the two"]


def test_every_bad_acl_policy_block_is_named() -> None:
    acl = [{"name": "owner_scope", "exempt_owners": "platform", "owners": 1},
           {"name": "principal_pattern"},
           {"name": "principal_pattern", "default": "(?P<x>a)", "by_owner": {"t": 3}},
           {"name": "topic_name_pattern", "default": "x"},
           {"name": "custom"}]
    assert _problems(_data(policies={"acl": acl})) == [
        "policies.acl[0].owners: unknown parameter (allowed: exempt_owners)",
        "policies.acl[0].exempt_owners: expected a non-empty list of non-empty strings",
        "policies.acl[1].default: set at least one of default, by_owner",
        "policies.acl[2].default: '(?P<x>a)' uses Python-only (?P...) named groups; Spark "
        "evaluates Java regular expressions: use a plain group",
        "policies.acl[2].by_owner.t: expected a regular expression string, got an integer",
        "policies.acl[3].name: unknown acl policy 'topic_name_pattern' (known: custom, "
        "owner_scope, principal_pattern)",
        "policies.acl[4].callable: required parameter is missing",
    ]
