"""The job's vocabulary: phases, plan actions, audit outcomes and config sources.

Every module that writes or reads one of these names takes it from here, so a
phase or an outcome is spelled (and ordered) in exactly one place. What only one kind of
resource says (its actions, outcomes and Kafka names) is in that kind's own module of this
package (`names.<kind>`).
"""

from __future__ import annotations

from dataclasses import dataclass

# -- phases: one audit row per topic per phase, in this order ---------------------------
PLAN = "plan"
VALIDATE = "validate"
APPLY = "apply"
VERIFY = "verify"
PHASES = (PLAN, VALIDATE, APPLY, VERIFY)

# -- plan actions -----------------------------------------------------------------------
CREATE = "CREATE"
DELETE = "DELETE"
ALTER = "ALTER"     # change a live topic in place: configs, more partitions
DRIFT = "DRIFT"     # differs in what cannot be changed in place: reported only
NOOP = "NOOP"
ACTIONS = (CREATE, DELETE, ALTER, DRIFT, NOOP)

# -- the changes an apply makes only with their flag (`apply --allow-<change>`): the topics'
# own; each other kind's are its nouns' (`Nouns.removals`) or its names module's -------------
ALLOW_DELETES = "deletes"
ALLOW_ALTER = "alter"


def allow_option(change: str) -> str:
    """The `apply` option that allows `change`: `--allow-<change>`."""
    return f"--allow-{change}"


# -- outcomes ---------------------------------------------------------------------------
PLANNED = "planned"
BLOCKED = "blocked"
VALIDATED = "validated"
REJECTED = "rejected"
CREATED = "created"
DELETED = "deleted"
ALTERED = "altered"
ALREADY_PRESENT = "already_present"
ALREADY_ABSENT = "already_absent"
DRIFTED = "drift"
FAILED = "failed"
UNKNOWN = "unknown"
OUTCOMES = (PLANNED, BLOCKED, VALIDATED, REJECTED, CREATED, DELETED, ALTERED,
            ALREADY_PRESENT, ALREADY_ABSENT, DRIFTED, FAILED, UNKNOWN)


def entity_outcomes(made: str, removed: str) -> tuple[str, ...]:
    """The outcomes of an entity kind's rows: the shared ones, with the kind's own words for
    a change made (`made`) and a removal made (`removed`)."""
    return (PLANNED, BLOCKED, VALIDATED, REJECTED, made, removed, ALREADY_PRESENT,
            ALREADY_ABSENT, FAILED, UNKNOWN)


# Final outcomes that make a run exit 1: somebody has to look at these topics.
ATTENTION = (REJECTED, BLOCKED, FAILED, UNKNOWN)
# Final outcomes that mean "nothing to do": left out of the topic listing of a run.
SETTLED = (ALREADY_PRESENT, ALREADY_ABSENT)
# Plan outcomes that are findings and decisions: a run that changes nothing still records
# the rows that end so (drift found, a policy's or the broker's refusal, a subject the job
# may not see).
FINDINGS = (DRIFTED, BLOCKED, REJECTED, FAILED)

# -- broker error names the job decides on ------------------------------------------------
# CreateTopics for a topic that exists: settled against the manifest row, not failed.
TOPIC_ALREADY_EXISTS = "TOPIC_ALREADY_EXISTS"

# -- the job's own error names, beside Kafka's in the audit's `error_name` ----------------
# A manifest row the job refused (its reasons are the error message).
INVALID_MANIFEST_ROW = "INVALID_MANIFEST_ROW"
# A policy refused the row (its violations are the error message); Kafka uses the same name
# for its own policies' refusals.
POLICY_VIOLATION = "POLICY_VIOLATION"
# A request the run never sent: a signal stopped it first, or another part of the same
# change did not succeed.
NOT_SENT = "NOT_SENT"
# A topic a phase never reached: the run lost its lock first.
LOCK_LOST = "LOCK_LOST"
# `verify` saw no final answer before `kafka.verify_timeout_ms`.
VERIFY_TIMEOUT = "VERIFY_TIMEOUT"
# The job's principal may not do this on the cluster.
CLUSTER_AUTHORIZATION_FAILED = "CLUSTER_AUTHORIZATION_FAILED"

# -- IncrementalAlterConfigs operations (KIP-339) -----------------------------------------
SET = "SET"
DELETE_CONFIG = "DELETE"
# APPEND / SUBTRACT: add values to or remove them from a LIST config.
APPEND = "APPEND"
SUBTRACT = "SUBTRACT"
CONFIG_OPS = {SET: 0, DELETE_CONFIG: 1, APPEND: 2, SUBTRACT: 3}

# -- replication throttles (what Kafka's replication tooling sets) ------------------------
# Topic configs, lists of `partition:broker`: the replicas whose replication traffic is
# throttled on the leader side and on the follower side. They belong to whatever moves
# replicas, never to a topic's desired state: never drift, never removed, never imported
# (transforms.drift.managed_config).
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
THROTTLED_REPLICAS_CONFIGS = (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)
# Broker configs, bytes per second: the rate throttled traffic may use on that broker.
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
THROTTLED_RATE_CONFIGS = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE)

# -- manifest states --------------------------------------------------------------------
PRESENT = "present"
ABSENT = "absent"
STATES = (PRESENT, ABSENT)

# -- check: the rules a live topic is judged by, and their severities ---------------------
ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)
# `checks.severity` may also turn a rule off: it is not judged.
OFF = "off"
# Health rules, from the live metadata; always judged unless turned off.
OFFLINE_PARTITION = "offline_partition"
UNDER_REPLICATED = "under_replicated"
BELOW_MIN_ISR = "below_min_isr"
MIN_INSYNC_WITHIN_RF = "min_insync_within_rf"
UNMANAGED = "unmanaged"
DRIFT_RULE = "drift"
LEADER_NOT_PREFERRED = "leader_not_preferred"
HEALTH_RULES = (OFFLINE_PARTITION, UNDER_REPLICATED, BELOW_MIN_ISR, MIN_INSYNC_WITHIN_RF,
                UNMANAGED, DRIFT_RULE, LEADER_NOT_PREFERRED)
# Usage rules, from what `check` measures of each topic and broker log dir (the inventory).
# The disk rules judge a broker, not a topic: their rows have no topic.
IDLE_TOPIC = "idle_topic"
EMPTY_TOPIC = "empty_topic"
DISK_USAGE = "disk_usage"
DISK_FORECAST = "disk_forecast"
USAGE_RULES = (IDLE_TOPIC, EMPTY_TOPIC, DISK_USAGE, DISK_FORECAST)
# The configured create policies a check runs on live topics; `custom` stands for every
# violation a custom policy appends, whatever name it gives it. The capacity policies
# (partition_budget, owner_partition_quota) budget what a run adds and are not among them.
CUSTOM_RULE = "custom"
LIVE_POLICIES = ("topic_name_pattern", "partitions_range", "replication_factor_range",
                 "required_configs", "forbidden_configs", "min_insync_below_rf", CUSTOM_RULE)
CHECK_RULES = (*HEALTH_RULES, *USAGE_RULES, *LIVE_POLICIES)

# -- config sources (KIP-525, DescribeConfigs) ------------------------------------------
# A config somebody set on the topic itself, as opposed to one it inherits.
TOPIC_OVERRIDE = "DYNAMIC_TOPIC_CONFIG"
# Broker-level settings that override Kafka's built-in default; they differ per cluster.
BROKER_OVERRIDES = ("STATIC_BROKER_CONFIG", "DYNAMIC_BROKER_CONFIG",
                    "DYNAMIC_DEFAULT_BROKER_CONFIG")

# Topics no deletion may ever touch, whatever the conf says: Kafka's internal topics,
# the schema registry's and Kafka Connect's.
ALWAYS_PROTECTED = ("__*", "_schemas", "connect-*")


@dataclass(frozen=True)
class Nouns:
    """How the job names an entity kind (`transforms.entity`) in its phases, tables, conf,
    logs and output.

    name: the kind's registered name: its conf mapping, its JSON key, its `--<name>` import.
    prefix: its phases (`<prefix> plan`), its tables' conf keys (`tables.<prefix>_manifests`),
      its policies (`policies.<prefix>`), its saved-plan section (`<prefix>_changes`), the
      change that makes its removals (`apply --allow-<prefix>-removals`) and its per-cluster
      cap (`max_<prefix>_changes_per_cluster`).
    noun: its manifests and snapshots in prose ("the <noun> snapshot").
    one, many: one of its entities, and several, as output and payloads name them.
    title: its entities in headings (plural, lower case but for names).
    old_removals: earlier names of the change its removal flag allows, still taken by
      `apply` with a warning that names the new one.
    flag: the change its `--allow-*` flag allows, when not `<prefix>-removals` (a kind
      whose every change needs the flag names it after what it does).
    manifests: its key of `tables` for its manifests, when not `<prefix>_manifests`.
    """

    name: str
    prefix: str
    noun: str
    one: str
    many: str
    title: str
    old_removals: tuple[str, ...] = ()
    flag: str = ""
    manifests: str = ""

    @property
    def removals(self) -> str:
        """The change `apply --allow-<removals>` allows: the kind's removals."""
        return self.flag or f"{self.prefix}-removals"

    @property
    def manifests_key(self) -> str:
        """Its key of `tables` that names its manifests."""
        return self.manifests or f"{self.prefix}_manifests"

    @property
    def cap(self) -> str:
        """The name of the kind's per-cluster cap policy."""
        return f"max_{self.prefix}_changes_per_cluster"
