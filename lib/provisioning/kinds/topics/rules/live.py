"""How a live topic enters the configured create policies: as the CREATE of itself.

`check` judges every live topic (managed or not) with the create policies the conf
configures: the same factories a plan runs (`kinds.topics.policies.registry`, through
`with_create_policies`), on the values the topic really has. Each judged SNAPSHOT row
(`judged`: described and not internal) becomes one PLAN row, judged as if the topic were
created now in its current shape (`as_created`):

- action CREATE, state present; partitions and replication_factor as live (so the
  policies never fall back to a broker default); no replica_assignment;
- configs: the topic's own overrides (source DYNAMIC_TOPIC_CONFIG; not the
  throttled-replicas lists, `transforms.drift.own_override`), plus, for each config
  the policies read (`read_configs`: min.insync.replicas and the names required_configs
  lists), the value the broker reports when the topic does not override it (a broker
  setting or Kafka's default). forbidden_configs judges what is set on the topic, so its
  names are never filled in. Values the broker hides (sensitive) are left out;
- owner: the owner of the manifest row naming the topic (`manifest_owners`), else null;
- source_table `live` (LIVE_SOURCE), source_version null, row_errors empty;
- live_*: the snapshot's view of the topic, with live_configs every config entry the
  broker reports for it (SNAPSHOT.configs, then SNAPSHOT.default_configs; each with its
  source), null when its configs could not be read; live_error null;
- drift, policy_violations and config_ops empty.

Only the configured policies `names.LIVE_POLICIES` names run (not the always-on checks of
a create, nor partition_budget and owner_partition_quota, which budget what a run adds):
each POLICY_VIOLATION becomes a finding whose rule is the violation's policy name. A topic
whose configs the broker would not show (SNAPSHOT.configs or default_configs null) keeps
configs null and gets no finding from the policies that read configs (CONFIG_POLICIES):
unknown is not a violation.

Custom create policies see these rows as they see a plan's CREATE rows (contract in
`transforms.policies.custom`). A row made here is a live topic, not a request: it has
`source_table` = 'live' and its live_* columns set. A custom policy that must judge only
real creates leaves such rows alone (`F.col("source_table") != LIVE_SOURCE`); one that
judges a topic's shape judges them like any CREATE, and `check` reports what it appends.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType

from provisioning.conf import PolicySpec
from provisioning.kinds.topics.policies import with_create_policies
from provisioning.names import CREATE, LIVE_POLICIES, PRESENT
from provisioning.transforms.drift import own_override
from provisioning.transforms.policies import Cut, PolicyContext
from provisioning.transforms.shape import to_schema
from schemas import CONFIG_ENTRY, PLAN

# `source_table` of a PLAN row made from a live topic.
LIVE_SOURCE = "live"
MIN_INSYNC = "min.insync.replicas"
# Policies whose verdict depends on the topic's configs: not judged where they are unknown.
CONFIG_POLICIES = ("required_configs", "forbidden_configs", "min_insync_below_rf",
                   "min_insync_within_rf")

_ENTRIES = ArrayType(CONFIG_ENTRY, True)


def judged() -> Column:
    """SNAPSHOT rows `check` judges: topics it could describe that are not internal."""
    return F.col("error_name").isNull() & ~F.coalesce(F.col("internal"), F.lit(False))


def manifest_owners(desired: DataFrame) -> DataFrame:
    """(cluster, topic, owner, managed = true) for every (cluster, topic) a DESIRED row names.

    owner: the owner of the topic's valid row (no row_errors), else the owner all its rows
    agree on, else null (duplicate rows naming different owners).
    """
    valid = F.coalesce(F.size("row_errors") == 0, F.lit(True))
    owners = F.array_sort(F.collect_set("owner"))
    return (desired.where(F.col("cluster").isNotNull() & F.col("topic").isNotNull())
            .groupBy("cluster", "topic")
            .agg(F.coalesce(F.max(F.when(valid, F.col("owner"))),
                            F.when(F.size(owners) == 1, owners[0])).alias("owner"))
            .select("cluster", "topic", "owner", F.lit(True).alias("managed")))


def read_configs(specs: Sequence[PolicySpec]) -> tuple[str, ...]:
    """The configs whose reported value a live topic's row carries even when the topic does
    not override them: min.insync.replicas and the names required_configs lists, less
    the names forbidden_configs lists (a config is forbidden when the topic sets it)."""
    names = [MIN_INSYNC]
    for spec in specs:
        if spec.name == "required_configs":
            names += [str(n) for n in spec.params.get("configs") or {}]
    forbidden = {str(n) for spec in specs if spec.name == "forbidden_configs"
                 for n in spec.params.get("configs") or ()}
    return tuple(n for n in dict.fromkeys(names) if n not in forbidden)


def reported_configs() -> Column:
    """Every config entry the broker reports for a SNAPSHOT row's topic (what it sets, then
    what it inherits); null when either part is unknown."""
    known = F.col("configs").isNotNull() & F.col("default_configs").isNotNull()
    return F.when(known, F.concat(F.col("configs"), F.col("default_configs")))


def reported_value(entries: Column, name: str) -> Column:
    """The value of config `name` among CONFIG_ENTRY `entries`; null when not reported."""
    return F.try_element_at(F.filter(entries, lambda c: c["name"] == F.lit(name)),
                            F.lit(1))["value"]


def _created_configs(filled: Sequence[str]) -> Column:
    wanted = (F.array(*[F.lit(n) for n in filled]) if filled
              else F.array().cast("array<string>"))
    shown = F.filter(reported_configs(), lambda c: (
        own_override(c) | F.array_contains(wanted, c["name"]))
        & c["value"].isNotNull() & ~F.coalesce(c["sensitive"], F.lit(False)))
    return F.map_from_entries(F.transform(
        shown, lambda c: F.struct(c["name"].alias("key"), c["value"].alias("value"))))


def as_created(live: DataFrame, filled: Sequence[str], owners: DataFrame | None = None
               ) -> DataFrame:
    """PLAN rows: each judged SNAPSHOT row as the CREATE of the topic in its current shape
    (see the module's docstring).

    filled: configs whose reported value `configs` carries when the topic does not override
      them (`read_configs`).
    owners: `manifest_owners` rows; None leaves every owner null.
    """
    rows = live.where(judged())
    if owners is not None:
        rows = rows.join(owners.select("cluster", "topic", F.col("owner")),
                         on=["cluster", "topic"], how="left")
    else:
        rows = rows.withColumn("owner", F.lit(None).cast("string"))

    def typed_null(name: str) -> Column:
        return F.lit(None).cast(PLAN[name].dataType).alias(name)

    def empty(name: str) -> Column:
        return F.array().cast(PLAN[name].dataType).alias(name)

    return rows.select(
        "cluster", "topic",
        F.lit(CREATE).alias("action"),
        F.lit(PRESENT).alias("state"),
        "partitions",
        "replication_factor",
        typed_null("replica_assignment"),
        _created_configs(filled).alias("configs"),
        "owner",
        typed_null("force"),
        F.lit(LIVE_SOURCE).alias("source_table"),
        typed_null("source_version"),
        empty("row_errors"),
        F.col("topic_id").alias("live_topic_id"),
        F.col("internal").alias("live_internal"),
        F.col("partitions").alias("live_partitions"),
        F.col("replication_factor").alias("live_replication_factor"),
        F.col("replica_assignment").alias("live_replica_assignment"),
        reported_configs().alias("live_configs"),
        F.col("consumer_groups").alias("live_consumer_groups"),
        typed_null("live_error"),
        empty("drift"),
        empty("policy_violations"),
        empty("config_ops"),
    ).transform(lambda df: to_schema(df, PLAN))


def no_findings(df: DataFrame) -> DataFrame:
    """An empty (cluster, topic, rule, detail) frame (Spark plans it as an empty relation)."""
    return df.select("cluster", "topic", F.lit(None).cast("string").alias("rule"),
                     F.lit(None).cast("string").alias("detail")).where(F.lit(False))


def findings_of(plan: DataFrame) -> DataFrame:
    """(cluster, topic, rule, detail): one per POLICY_VIOLATION of `as_created` rows, the
    rule being the violation's policy name; none of CONFIG_POLICIES where the topic's
    configs are unknown."""
    configs_known = F.col("live_configs").isNotNull()
    return (plan.select("cluster", "topic", configs_known.alias("_known"),
                        F.explode("policy_violations").alias("_v"))
            .where(F.col("_known") | ~F.col("_v.policy").isin(*CONFIG_POLICIES))
            .select("cluster", "topic", F.col("_v.policy").alias("rule"),
                    F.col("_v.message").alias("detail")))


def policy_findings(live: DataFrame, desired: DataFrame, specs: Sequence[PolicySpec],
                    context: PolicyContext, cut: Cut | None = None) -> DataFrame:
    """(cluster, topic, rule, detail) of every configured create policy a judged live topic
    breaks, judged by the registry's own transforms on `as_created` rows.

    specs: the conf's `policies.create`; those `names.LIVE_POLICIES` leaves out are skipped.
    context: as for a plan (CLUSTER_STATE rows and the live topics).
    cut: as for `with_create_policies` (Spark Connect's plan depth).
    """
    judged_specs = [s for s in specs if s.name in LIVE_POLICIES]
    if not judged_specs:
        return no_findings(live)
    rows = as_created(live, read_configs(judged_specs), manifest_owners(desired))
    return findings_of(with_create_policies(rows, judged_specs, context, cut, always_on=()))
