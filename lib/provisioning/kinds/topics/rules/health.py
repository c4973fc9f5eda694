"""Health rules: what the live metadata says about a topic, whatever a manifest wants.

Judged on every topic `check` judges (`live.judged`: described, not internal), unless
`checks.severity` turns a rule off. Each rule is a transform to (cluster, topic, rule,
detail) rows, one per topic that breaks it, whose detail says what is and what the rule
wants:

- offline_partition: a partition has no leader (SNAPSHOT.partition_states);
- under_replicated: a partition's ISR is smaller than its replica set;
- below_min_isr: a partition's ISR is smaller than the topic's effective
  min.insync.replicas (its override, else what the broker reports), so acks=all producers
  are refused. A partition with fewer replicas than that is left to min_insync_within_rf:
  one cause, one rule;
- min_insync_within_rf: min.insync.replicas above the replication factor: the always-on
  create policy of that name (`kinds.topics.policies.create.min_insync_within_rf`), run on
  the topic as `live.as_created` shows it;
- unmanaged: no manifest row names the topic (`kinds.topics.plan.unmanaged`);
- leader_not_preferred: a partition is led by a replica other than its first (the
  preferred one), so leadership, and its load, is not where the assignment put it;
- drift: a managed topic differs from its manifest row in any way (`transforms.drift`,
  through `kinds.topics.plan.build_plan`: what an ALTER would change and what it would
  not), or is live while its row says `absent`. Only valid rows (no row_errors) are
  compared: an invalid or duplicated row asks for nothing definite.

A value the snapshot lacks (partition states, configs) leaves the topic unjudged by the
rules that need it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.kinds.topics.plan import build_plan
from provisioning.kinds.topics.plan import unmanaged as unmanaged_topics
from provisioning.kinds.topics.policies.create import min_insync_within_rf as within_rf_policy
from provisioning.kinds.topics.rules.live import (
    MIN_INSYNC,
    as_created,
    findings_of,
    judged,
    no_findings,
    reported_configs,
    reported_value,
)
from provisioning.names import (
    ALTER,
    BELOW_MIN_ISR,
    DELETE,
    DRIFT,
    DRIFT_RULE,
    HEALTH_RULES,
    LEADER_NOT_PREFERRED,
    MIN_INSYNC_WITHIN_RF,
    OFFLINE_PARTITION,
    UNDER_REPLICATED,
    UNMANAGED,
)
from provisioning.transforms.drift import drift_text
from provisioning.transforms.policies import PolicyContext

# Partitions a detail names at most; the rest are counted.
MAX_LISTED = 10


def _brokers(ids: Column) -> Column:
    """Broker ids as "1,2,3" ("none" for an empty list)."""
    return F.when(F.size(ids) > 0, F.array_join(ids.cast("array<string>"), ",")
                  ).otherwise(F.lit("none"))


def _partitions_text(parts: Column, one: Callable[[Column], Column]) -> Column:
    """The first MAX_LISTED of `parts`, each described by `one`, and how many more."""
    shown = F.array_join(F.transform(F.slice(parts, 1, MAX_LISTED), one), "; ")
    more = F.when(F.size(parts) > MAX_LISTED, F.format_string(
        " (and %d more partitions)", F.size(parts) - MAX_LISTED))
    return F.concat_ws("", shown, more)


def _finding(live: DataFrame, rule: str, violated: Column, detail: Column) -> DataFrame:
    return live.where(judged() & violated).select(
        "cluster", "topic", F.lit(rule).alias("rule"), detail.alias("detail"))


def offline_partition(live: DataFrame) -> DataFrame:
    """Topics with a partition that has no leader (error by default)."""
    offline = F.filter("partition_states", lambda p: p["leader"].isNull() | (p["leader"] < 0))
    detail = F.concat(
        _partitions_text(offline, lambda p: F.format_string(
            "partition %d has no leader (replicas %s)", p["partition"],
            _brokers(p["replicas"]))),
        F.lit("; every partition needs a leader: bring one of its replicas' brokers back"))
    return _finding(live, OFFLINE_PARTITION, F.size(offline) > 0, detail)


def under_replicated(live: DataFrame) -> DataFrame:
    """Topics with a partition whose ISR is smaller than its replica set (warning)."""
    under = F.filter("partition_states", lambda p: F.size(p["isr"]) < F.size(p["replicas"]))
    detail = F.concat(
        _partitions_text(under, lambda p: F.format_string(
            "partition %d has in-sync replicas %s of replicas %s", p["partition"],
            _brokers(p["isr"]), _brokers(p["replicas"]))),
        F.lit("; every replica should be in sync"))
    return _finding(live, UNDER_REPLICATED, F.size(under) > 0, detail)


def leader_not_preferred(live: DataFrame) -> DataFrame:
    """Topics with a partition led by a replica other than its first (info)."""
    moved = F.filter("partition_states", lambda p: (p["leader"] >= 0)
                     & (p["leader"] != F.try_element_at(p["replicas"], F.lit(1))))
    detail = F.concat(
        _partitions_text(moved, lambda p: F.format_string(
            "partition %d is led by broker %d, not its preferred replica %d",
            p["partition"], p["leader"], F.try_element_at(p["replicas"], F.lit(1)))),
        F.lit("; a preferred leader election (kafka-leader-election.sh --election-type "
              "PREFERRED) moves leadership back"))
    return _finding(live, LEADER_NOT_PREFERRED, F.size(moved) > 0, detail)


def below_min_isr(live: DataFrame) -> DataFrame:
    """Topics with a partition whose ISR is below the effective min.insync.replicas, though
    its replicas could reach it (error)."""
    min_isr = reported_value(reported_configs(), MIN_INSYNC).try_cast("int")
    below = F.filter("partition_states", lambda p: (F.size(p["isr"]) < min_isr)
                     & (F.size(p["replicas"]) >= min_isr))
    detail = F.concat(
        _partitions_text(below, lambda p: F.format_string(
            "partition %d has %d in-sync replica(s) (%s)", p["partition"],
            F.size(p["isr"]), _brokers(p["isr"]))),
        F.format_string("; min.insync.replicas is %d: acks=all producers are refused until "
                        "that many replicas are in sync", min_isr))
    return _finding(live, BELOW_MIN_ISR, F.size(below) > 0, detail)


def min_insync_within_rf(live: DataFrame, context: PolicyContext) -> DataFrame:
    """Topics whose min.insync.replicas exceeds their replication factor (error): the
    always-on create policy of that name, on the topic as its own CREATE."""
    judged_rows = as_created(live, (MIN_INSYNC,)).transform(within_rf_policy({}, context))
    return findings_of(judged_rows).where(F.col("rule") == MIN_INSYNC_WITHIN_RF)


def unmanaged(live: DataFrame, desired: DataFrame) -> DataFrame:
    """Topics no DESIRED row names (info)."""
    topics = unmanaged_topics(live.where(judged()), desired)
    detail = F.format_string(
        "no manifest row names topic %s of cluster %s; every topic should have one: adopt "
        "it with `import`, or delete it", F.col("topic"), F.col("cluster"))
    return _finding(topics, UNMANAGED, F.lit(True), detail)


def drift(live: DataFrame, desired: DataFrame) -> DataFrame:
    """Managed topics whose live state differs from their valid manifest row (warning)."""
    valid = desired.where(F.coalesce(F.size("row_errors") == 0, F.lit(True)))
    plan = build_plan(valid, live.where(judged()))
    action = F.col("action")
    detail = F.when(action == DELETE, F.lit(
        "the topic is live; its manifest row wants it absent (state absent)")).otherwise(
        F.concat(F.lit("differs from its manifest row (live -> manifest): "),
                 drift_text(F.col("drift"))))
    return plan.where(action.isin(ALTER, DRIFT, DELETE)).select(
        "cluster", "topic", F.lit(DRIFT_RULE).alias("rule"), detail.alias("detail"))


def health_findings(live: DataFrame, desired: DataFrame, context: PolicyContext,
                    rules: Collection[str] = HEALTH_RULES) -> DataFrame:
    """(cluster, topic, rule, detail) of every health rule in `rules` a judged live topic
    breaks.

    live: SNAPSHOT rows; desired: DESIRED rows (validated, in scope); context: as for a
    plan (its CLUSTER_STATE rows).
    """
    found: dict[str, Callable[[], DataFrame]] = {
        OFFLINE_PARTITION: lambda: offline_partition(live),
        UNDER_REPLICATED: lambda: under_replicated(live),
        BELOW_MIN_ISR: lambda: below_min_isr(live),
        MIN_INSYNC_WITHIN_RF: lambda: min_insync_within_rf(live, context),
        UNMANAGED: lambda: unmanaged(live, desired),
        DRIFT_RULE: lambda: drift(live, desired),
        LEADER_NOT_PREFERRED: lambda: leader_not_preferred(live),
    }
    frames = [make() for rule, make in found.items() if rule in rules]
    if not frames:
        return no_findings(live)
    return functools.reduce(DataFrame.unionByName, frames)
