"""`check`: every live topic (managed or not, internal ones aside) judged against the
configured create policies and Kafka's health rules, as VIOLATIONS rows.

- `live`: a live topic as the CREATE of itself, run through the configured create
  policies (the registry's own transforms);
- `health`: the always-on health rules from the live metadata;
- `violations`: both, one row per (cluster, topic, rule), with each rule's severity
  (DEFAULT_SEVERITY, overridden or turned off by `checks.severity`);
- `usage`: what `check` measures of each topic and broker log dir (the inventory), and
  the usage rules judged from it;
- `trend`: the history the VIOLATIONS table holds: counts per rule per day, and when each
  topic started and stopped breaking a rule.

Pure transforms: no action, no I/O; the run package reads the snapshot and the manifests and
writes the rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.conf import PolicySpec
from provisioning.kinds.topics.rules.health import health_findings
from provisioning.kinds.topics.rules.live import judged, manifest_owners, policy_findings
from provisioning.names import (
    BELOW_MIN_ISR,
    CUSTOM_RULE,
    DISK_FORECAST,
    DISK_USAGE,
    DRIFT_RULE,
    EMPTY_TOPIC,
    ERROR,
    HEALTH_RULES,
    IDLE_TOPIC,
    INFO,
    LEADER_NOT_PREFERRED,
    LIVE_POLICIES,
    MIN_INSYNC_WITHIN_RF,
    OFF,
    OFFLINE_PARTITION,
    UNDER_REPLICATED,
    UNMANAGED,
    WARNING,
)
from provisioning.transforms.policies import Cut, PolicyContext
from schemas import VIOLATIONS, column_names

__all__ = ["DEFAULT_SEVERITY", "severities", "violations"]

# Each rule's severity unless `checks.severity` says otherwise. A configured create policy
# is an error: the job would refuse to create such a topic.
DEFAULT_SEVERITY: dict[str, str] = {
    OFFLINE_PARTITION: ERROR,
    UNDER_REPLICATED: WARNING,
    BELOW_MIN_ISR: ERROR,
    MIN_INSYNC_WITHIN_RF: ERROR,
    UNMANAGED: INFO,
    DRIFT_RULE: WARNING,
    LEADER_NOT_PREFERRED: INFO,
    IDLE_TOPIC: WARNING,
    EMPTY_TOPIC: INFO,
    DISK_USAGE: ERROR,
    DISK_FORECAST: WARNING,
    **dict.fromkeys(LIVE_POLICIES, ERROR),
}


def severities(overrides: Mapping[str, str]) -> dict[str, str]:
    """Every rule's level (error, warning, info or off): DEFAULT_SEVERITY, then `overrides`
    (the conf's `checks.severity`, already checked when the conf loaded)."""
    return {**DEFAULT_SEVERITY, **overrides}


def _severity(levels: Mapping[str, str]) -> Column:
    """A finding's level: its rule's, else `custom`'s (a custom policy names its own
    violations)."""
    table = F.create_map(*[F.lit(x) for kv in sorted(levels.items()) for x in kv])
    return F.coalesce(F.try_element_at(table, F.col("rule")), F.lit(levels[CUSTOM_RULE]))


def violations(live: DataFrame, desired: DataFrame, specs: Sequence[PolicySpec],
               context: PolicyContext, run_id: str, recorded_at: dt.datetime,
               severity: Mapping[str, str] | None = None, cut: Cut | None = None,
               usage: DataFrame | None = None, brokers: DataFrame | None = None
               ) -> DataFrame:
    """VIOLATIONS rows: one per (cluster, topic, rule) a judged live topic breaks.

    live: SNAPSHOT rows of the clusters and topics in scope (internal and undescribed
      topics are not judged); desired: DESIRED rows (validated, in scope).
    specs: the conf's `policies.create` (those `names.LIVE_POLICIES` names run).
    context: as for a plan: CLUSTER_STATE rows and the live topics.
    severity: the conf's `checks.severity`; a rule at `off` is not judged.
    cut: as for `with_create_policies` (Spark Connect's plan depth).
    usage: (cluster, topic, rule, detail) of the usage rules a topic breaks (`usage`);
      brokers: the same with a null topic and the `snapshot_at` of the disks judged, for
      the rules that judge a broker's log dirs.
    Several violations of one rule on one topic (required_configs, one per config) make
    one row whose detail joins theirs, sorted, with "; ".
    """
    levels = severities(severity or {})
    health = [rule for rule in HEALTH_RULES if levels[rule] != OFF]
    judged_specs = [s for s in specs if levels.get(s.name, levels[CUSTOM_RULE]) != OFF]
    findings = policy_findings(live, desired, judged_specs, context, cut).unionByName(
        health_findings(live, desired, context, health))
    if usage is not None:
        findings = findings.unionByName(usage)
    merged = findings.groupBy("cluster", "topic", "rule").agg(
        F.array_join(F.array_sort(F.collect_list("detail")), "; ").alias("detail"))
    topics = live.where(judged()).select("cluster", "topic", "snapshot_at")
    rows = (merged.join(topics, on=["cluster", "topic"], how="inner")
            .join(manifest_owners(desired), on=["cluster", "topic"], how="left"))
    if brokers is not None:
        rows = rows.unionByName(brokers.select(
            "cluster", "topic", "rule", "detail", "snapshot_at",
            F.lit(None).cast("string").alias("owner"),
            F.lit(None).cast("boolean").alias("managed")))
    return (rows
            .withColumn("severity", _severity(levels))
            .where(F.col("severity") != F.lit(OFF))
            .select(
                F.lit(run_id).alias("run_id"), "cluster", "topic", "rule", "severity",
                "detail", F.coalesce(F.col("managed"), F.lit(False)).alias("managed"),
                "owner", "snapshot_at",
                F.lit(recorded_at).cast("timestamp").alias("recorded_at"))
            .select(*column_names(VIOLATIONS)))
