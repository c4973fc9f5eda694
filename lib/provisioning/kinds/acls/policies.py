"""ACL policies: small named transforms over ACL_PLAN rows that append POLICY_VIOLATION
structs (`with_violation`), as the topic policies do over PLAN rows. A refused row is
`blocked`; a row is allowed when its `policy_violations` stays empty.

Always on, before the configured ones, in this order:

- wildcard_principal: no GRANT to a wildcard principal (`User:*`) of any operation but
  DESCRIBE (lifted by the row's `force`);
- no_all_operation: no GRANT of ALL (lifted by `force`);
- cluster_principals: CLUSTER bindings only for the principals of `acls.cluster_principals`
  (lifted by `force`);
- topic_absent: no GRANT of a LITERAL TOPIC binding whose topic's manifest row is
  `state: absent` (never lifted: the topic is being deleted, and a grant on its name would
  pass to a topic recreated under it).

Configurable (conf `policies.acl: [{name: ..., <params>}]`):

- owner_scope: exempt_owners ([owners], optional). A GRANT or REVOKE a manifest row asks of
  a TOPIC binding must stay within its row owner's topics (see `owner_scope`). Never lifted
  by `force`: the row's author would lift their own scope. `acls.owner_scope: true` turns
  it on without parameters.
- principal_pattern: default (regex), by_owner ({owner: regex}); at least one. The
  principals a GRANT may name.
- custom: callable ("package.module:function"), any other params passed through. Called as
  `fn(plan, context, params) -> DataFrame` with ACL_PLAN rows and the AclPolicyContext;
  it returns the same rows with exactly the ACL_PLAN columns, having appended violations
  with `with_violation` to GRANT / REVOKE rows; no Spark action.

Always last: max_changes_per_cluster (`acls.max_changes_per_cluster`), the entity base's cap
(`transforms.entity`): over the cap, none of the cluster's grants and revokes is made (never
lifted); it counts only the changes every other policy let through.

Policies judge valid rows: the chain (`transforms.entity.EntityModel.judged`) leaves rows
with `row_errors` out and puts them back unjudged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.conf.policies import require_valid
from provisioning.kinds.acls.conf import ACL_POLICY_MODELS
from provisioning.kinds.acls.names import (
    CLUSTER_RESOURCE,
    GRANT,
    LITERAL,
    NOUNS,
    PREFIXED,
    REVOKE,
    TOPIC_RESOURCE,
)
from provisioning.kinds.acls.plan import binding_text
from provisioning.kinds.acls.schema import ACL_PLAN
from provisioning.names import ABSENT
from provisioning.transforms.entity import EntityPolicyContext, Factory, Subject, force_hint
from provisioning.transforms.policies.base import Transform, with_violation
from provisioning.transforms.policies.columns import forced, full_match
from provisioning.transforms.policies.custom import make_custom
from schemas import column_names


@dataclass(frozen=True, kw_only=True)
class AclPolicyContext(EntityPolicyContext):
    """What the ACL policies may read beside the plan: the cap's (`EntityPolicyContext`), and

    topics: the topic manifests' DESIRED rows of the run (cluster, topic, state, owner).
    live_topics: SNAPSHOT rows, every live topic of the run's clusters.
    cluster_principals: `acls.cluster_principals`.
    """

    topics: DataFrame
    live_topics: DataFrame
    cluster_principals: tuple[str, ...] = ()


_FORCE_HINT = force_hint(NOUNS)
# How the policies name a plan row's entity, and the plan's columns they keep.
SUBJECT = Subject("binding", binding_text, ACL_PLAN)


def is_grant() -> Column:
    return F.col("action") == F.lit(GRANT)


def is_change() -> Column:
    return F.col("action").isin(GRANT, REVOKE)


def _topic() -> Column:
    return F.col("resource_type") == F.lit(TOPIC_RESOURCE)


# --- always on ---------------------------------------------------------------------------


def wildcard_principal(params: Mapping[str, Any], context: AclPolicyContext) -> Transform:
    """A wildcard principal (`User:*`) is every client of the cluster: only DESCRIBE may go
    to it."""

    def transform(df: DataFrame) -> DataFrame:
        wildcard = F.col("principal").rlike(r"^[^:]+:\*$")
        refused = (is_grant() & wildcard & (F.col("operation") != F.lit("DESCRIBE"))
                   & ~forced())
        message = SUBJECT.message(
            f"%s is every principal of cluster %s, and only DESCRIBE may be granted to all "
            f"of them; name the principals that need %s, {_FORCE_HINT}",
            F.col("principal"), F.col("cluster"), F.col("operation"))
        return SUBJECT.violated(df, "wildcard_principal", refused, message)

    return transform


def no_all_operation(params: Mapping[str, Any], context: AclPolicyContext) -> Transform:
    """ALL is every operation on the resource, including ones later Kafka releases add."""

    def transform(df: DataFrame) -> DataFrame:
        refused = is_grant() & (F.col("operation") == F.lit("ALL")) & ~forced()
        message = SUBJECT.message(f"ALL is every operation on the resource, present and "
                                  f"future; list the operations needed, {_FORCE_HINT}")
        return SUBJECT.violated(df, "no_all_operation", refused, message)

    return transform


def cluster_principals(params: Mapping[str, Any], context: AclPolicyContext) -> Transform:
    """CLUSTER bindings (create topics, alter the cluster, idempotent writes ...) go only to
    the principals `acls.cluster_principals` lists."""
    allowed = context.cluster_principals

    def transform(df: DataFrame) -> DataFrame:
        listed = F.col("principal").isin(*allowed) if allowed else F.lit(False)
        refused = (is_grant() & (F.col("resource_type") == F.lit(CLUSTER_RESOURCE))
                   & ~listed & ~forced())
        message = SUBJECT.message(
            f"CLUSTER bindings go only to the principals listed in acls.cluster_principals "
            f"(%s); add %s there, {_FORCE_HINT}",
            F.lit(", ".join(allowed) or "none listed"), F.col("principal"))
        return SUBJECT.violated(df, "cluster_principals", refused, message)

    return transform


_TOPIC_ABSENT = "_policy_topic_absent"


def topic_absent(params: Mapping[str, Any], context: AclPolicyContext) -> Transform:
    """No grant on the name of a topic its manifest row wants absent."""

    def transform(df: DataFrame) -> DataFrame:
        absent = (context.topics.where(F.col("state") == F.lit(ABSENT))
                  .select("cluster", F.col("topic").alias("resource_name"),
                          F.lit(True).alias(_TOPIC_ABSENT))
                  .dropDuplicates(["cluster", "resource_name"]))
        facts = df.join(absent, on=["cluster", "resource_name"], how="left")
        refused = (is_grant() & _topic() & (F.col("pattern_type") == F.lit(LITERAL))
                   & F.coalesce(F.col(_TOPIC_ABSENT), F.lit(False)))
        message = SUBJECT.message(
            "topic %s is `state: absent` in the topic manifests, so the job deletes it, and a "
            "grant on its name would pass to any topic recreated under it; drop this ACL row "
            "or the topic's absent row", F.col("resource_name"))
        return SUBJECT.violated(facts, "topic_absent", refused, message)

    return transform


ALWAYS_ON: tuple[tuple[str, Factory], ...] = (
    ("wildcard_principal", wildcard_principal),
    ("no_all_operation", no_all_operation),
    ("cluster_principals", cluster_principals),
    ("topic_absent", topic_absent),
)


# --- configurable ------------------------------------------------------------------------

_OWNED = "_policy_owned_topics"
_FOREIGN = "_policy_foreign_topics"
_SHOWN = 10


def _scope_facts(df: DataFrame, context: AclPolicyContext) -> DataFrame:
    """`df` with, per (cluster, resource_name, pattern_type, owner) of its TOPIC rows: how
    many topics of that owner the pattern covers, and the other topics it covers.

    A topic is the owner's when its topic manifest rows name that owner and no other; a
    live topic no manifest row names is nobody's.
    """
    owners = (context.topics.select("cluster", "topic", "owner")
              .unionByName(context.live_topics.select(
                  "cluster", "topic", F.lit(None).cast("string").alias("owner")))
              .groupBy("cluster", "topic").agg(F.collect_set("owner").alias("_owners")))
    asked = (df.where(_topic() & F.col("owner").isNotNull())
             .select("cluster", "resource_name", "pattern_type", "owner").distinct())
    a, t = asked.alias("a"), owners.alias("t")
    name, topic = F.col("a.resource_name"), F.col("t.topic")
    covers = F.when(F.col("a.pattern_type") == F.lit(PREFIXED), topic.startswith(name)) \
        .when(F.col("a.pattern_type") == F.lit(LITERAL), topic == name)
    pairs = a.join(t, (F.col("a.cluster") == F.col("t.cluster")) & covers, how="left")
    theirs = F.array_contains("t._owners", F.col("a.owner")) & (F.size("t._owners") == 1)
    facts = pairs.groupBy("a.cluster", "a.resource_name", "a.pattern_type", "a.owner").agg(
        F.count(F.when(theirs, F.lit(1))).alias(_OWNED),
        F.array_sort(F.collect_set(F.when(~theirs, topic))).alias(_FOREIGN))
    return df.join(facts, on=["cluster", "resource_name", "pattern_type", "owner"],
                   how="left")


def _some(names: Column) -> Column:
    """The first names of a sorted list, and how many more there are."""
    return F.concat_ws("", F.array_join(F.slice(names, 1, _SHOWN), ", "),
                       F.when(F.size(names) > _SHOWN,
                              F.format_string(" and %d more", F.size(names) - _SHOWN)))


def owner_scope(params: Mapping[str, Any], context: AclPolicyContext) -> Transform:
    """A TOPIC binding a manifest row grants or revokes must stay within the topics of that
    row's owner, as the topic manifests say (rows without a source, e.g. unlisted removals,
    are not judged; nor are the owners `exempt_owners` lists).

    LITERAL name: a topic of the owner (its topic manifest rows name that owner alone).
    PREFIXED prefix: it covers at least one topic of the owner, and no other topic, desired
    or live, of the cluster.
    """
    require_valid(ACL_POLICY_MODELS, "acl", "owner_scope", params)
    exempt: Sequence[str] = params.get("exempt_owners") or ()

    def transform(df: DataFrame) -> DataFrame:
        owner = F.col("owner")
        judged = is_change() & _topic() & F.col("source_table").isNotNull()
        if exempt:
            judged = judged & ~F.coalesce(owner.isin(*exempt), F.lit(False))
        facts = _scope_facts(df, context)
        literal = F.col("pattern_type") == F.lit(LITERAL)
        prefixed = F.col("pattern_type") == F.lit(PREFIXED)
        owned = F.coalesce(F.col(_OWNED), F.lit(0)) > 0
        foreign = F.coalesce(F.size(_FOREIGN), F.lit(0)) > 0
        no_owner = judged & owner.isNull()
        not_theirs = judged & owner.isNotNull() & literal & ~owned
        covers_none = judged & owner.isNotNull() & prefixed & ~owned
        covers_others = judged & owner.isNotNull() & prefixed & foreign
        messages = [
            (no_owner, SUBJECT.message(
                "owner_scope needs the ACL row's owner to tell whose topics it may open, and "
                "the row has none; set `owner` to the team that owns the topic(s)")),
            (not_theirs, SUBJECT.message(
                "topic %s on cluster %s is not a topic of owner %s (no topic manifest row of "
                "that owner alone names it); only a topic's owner grants or revokes access "
                "to it: ask its team to add this row", F.col("resource_name"),
                F.col("cluster"), owner)),
            (covers_none, SUBJECT.message(
                "prefix %s covers no topic of owner %s on cluster %s; a prefix grant must "
                "cover the owner's own topics", F.col("resource_name"), owner,
                F.col("cluster"))),
            (covers_others, SUBJECT.message(
                "prefix %s also covers topic(s) %s on cluster %s, which are not owner %s's; "
                "narrow the prefix to that owner's topics", F.col("resource_name"),
                _some(F.col(_FOREIGN)), F.col("cluster"), owner)),
        ]
        for violated, message in messages:
            facts = with_violation(facts, "owner_scope", violated, message)
        return facts.select(*column_names(ACL_PLAN))

    return transform


def _literal_map(mapping: Mapping[str, str]) -> Column:
    if not mapping:
        return F.lit(None).cast("map<string,string>")
    return F.create_map(*[F.lit(x) for kv in mapping.items() for x in kv])


def principal_pattern(params: Mapping[str, Any], context: AclPolicyContext) -> Transform:
    """The principals a GRANT may name: the owner's regex from `by_owner`, else `default`
    (a row matching neither is not judged)."""
    require_valid(ACL_POLICY_MODELS, "acl", "principal_pattern", params)
    default: str | None = params.get("default")
    by_owner: Mapping[str, str] = params.get("by_owner") or {}

    def transform(df: DataFrame) -> DataFrame:
        own = F.try_element_at(_literal_map(by_owner), F.col("owner"))
        pattern = F.coalesce(own, F.lit(default).cast("string"))
        refused = is_grant() & ~full_match(F.col("principal"), pattern)
        whose = F.when(own.isNotNull(), F.format_string("owner %s", F.col("owner"))) \
            .when(own.isNull(), F.lit("every owner"))
        message = SUBJECT.message(
            "principal %s does not match %s, the pattern policy principal_pattern sets for "
            "%s; name a principal that does, or change the policy", F.col("principal"),
            pattern, whose)
        return SUBJECT.violated(df, "principal_pattern", refused, message)

    return transform


# A team's own ACL policy, named in conf (see the module docstring for its contract).
custom = make_custom("acl", ACL_PLAN, "ACL_PLAN")


# The policies `policies.acl` may name (their parameter checks:
# provisioning.kinds.acls.conf.ACL_POLICY_MODELS, kept equal by a unit test).
ACL_POLICIES: dict[str, Factory] = {
    "owner_scope": owner_scope,
    "principal_pattern": principal_pattern,
    "custom": custom,
}
