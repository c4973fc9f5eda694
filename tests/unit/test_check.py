"""`check`'s transforms: a live topic as the CREATE of itself through the configured create
policies, the health rules, and the VIOLATIONS rows with their severities."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from provisioning.conf import PolicySpec
from provisioning.kinds.topics.rules import violations
from provisioning.kinds.topics.rules.health import (
    below_min_isr,
    drift,
    health_findings,
    min_insync_within_rf,
    offline_partition,
    under_replicated,
    unmanaged,
)
from provisioning.kinds.topics.rules.live import (
    as_created,
    manifest_owners,
    policy_findings,
    read_configs,
)
from provisioning.names import FOLLOWER_THROTTLED_REPLICAS, LEADER_THROTTLED_REPLICAS
from provisioning.transforms.policies import PolicyContext
from schemas import VIOLATIONS
from tests.builders import (
    cluster_states_df,
    config_entry,
    desired_df,
    partition_state,
    plan_df,
    snapshot_df,
)

AT = dt.datetime(2026, 11, 22, 3, 0, 0)
RECORDED = dt.datetime(2026, 11, 22, 3, 5, 0)
LOCAL = {"cluster": "local", "cluster_id": "c-local", "broker_ids": [1, 2, 3],
         "default_partitions": 1, "default_replication_factor": 1}
# What a broker reports for configs a topic does not set (a few of them).
INHERITED = (config_entry("cleanup.policy", "delete", "DEFAULT_CONFIG"),
             config_entry("compression.type", "producer", "DEFAULT_CONFIG"),
             config_entry("min.insync.replicas", "1", "DEFAULT_CONFIG"),
             config_entry("unclean.leader.election.enable", "false", "DEFAULT_CONFIG"))
FINDING = "cluster string, topic string, rule string, detail string"


def live(topic: str, partitions: int = 1, rf: int = 1,
         overrides: Mapping[str, str] | None = None,
         inherited: Sequence[dict[str, Any]] = INHERITED,
         states: list[dict[str, Any]] | None = None, **cols: Any) -> dict[str, Any]:
    """A SNAPSHOT row of cluster local: replicas 1..rf on every partition, all in sync."""
    overrides = overrides or {}
    replicas = list(range(1, rf + 1))
    return {"run_id": "snap-1", "cluster": "local", "cluster_id": "c-local", "topic": topic,
            "topic_id": f"id-{topic}", "internal": False, "partitions": partitions,
            "replication_factor": rf,
            "replica_assignment": {p: replicas for p in range(partitions)},
            "configs": [config_entry(k, v) for k, v in sorted(overrides.items())],
            "consumer_groups": [], "error_name": None, "snapshot_at": AT,
            "partition_states": (states if states is not None else
                                 [partition_state(p, 1, replicas) for p in range(partitions)]),
            "default_configs": [e for e in inherited if e["name"] not in overrides],
            **cols}


# Never judged: an internal topic and one the job may not describe, both looking broken.
NOT_JUDGED = (
    live("__consumer_offsets", 50, internal=True, overrides={"min.insync.replicas": "3"},
         states=[partition_state(p, None, [1], []) for p in range(50)]),
    {**live("hidden"), "partitions": None, "replication_factor": None,
     "replica_assignment": None, "configs": None, "default_configs": None,
     "partition_states": None, "consumer_groups": None,
     "error_name": "TOPIC_AUTHORIZATION_FAILED"},
)


def context(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> PolicyContext:
    return PolicyContext(clusters=cluster_states_df(spark, [LOCAL]),
                         live=snapshot_df(spark, rows))


def assert_findings(actual: DataFrame, spark: SparkSession,
                    rows: list[tuple[str, str, str, str]]) -> None:
    assert_df_equality(actual, spark.createDataFrame(rows, FINDING), ignore_row_order=True,
                       ignore_nullable=True)


def spec(i: int, name: str, **params: Any) -> PolicySpec:
    return PolicySpec(name=name, params=params, key=f"policies.create[{i}]")


# --- a live topic as the CREATE of itself ------------------------------------------------


def test_a_live_topic_becomes_the_create_of_itself(spark: SparkSession) -> None:
    orders = live("a.orders", 3, 2, overrides={"retention.ms": "3600000"},
                  inherited=[config_entry("min.insync.replicas", "2", "STATIC_BROKER_CONFIG"),
                             config_entry("cleanup.policy", "delete", "DEFAULT_CONFIG")],
                  consumer_groups=["readers"])
    # broker-level (not the topic's own) and hidden values sit in SNAPSHOT.configs too
    orders["configs"] += [config_entry("max.message.bytes", "2000000", "DYNAMIC_BROKER_CONFIG"),
                          config_entry("x.secret", None, sensitive=True)]
    loose = live("loose.topic")
    snapshot = snapshot_df(spark, [orders, loose, *NOT_JUDGED])
    owners = desired_df(spark, [{"cluster": "local", "topic": "a.orders", "owner": "team-a"}])
    rows = as_created(snapshot, ("min.insync.replicas", "max.message.bytes"),
                      manifest_owners(owners))

    def created(row: dict[str, Any], configs: dict[str, str], owner: str | None
                ) -> dict[str, Any]:
        return {"cluster": "local", "topic": row["topic"], "action": "CREATE",
                "state": "present", "partitions": row["partitions"],
                "replication_factor": row["replication_factor"], "configs": configs,
                "owner": owner, "source_table": "live", "row_errors": [],
                "live_topic_id": row["topic_id"], "live_internal": False,
                "live_partitions": row["partitions"],
                "live_replication_factor": row["replication_factor"],
                "live_replica_assignment": row["replica_assignment"],
                "live_configs": row["configs"] + row["default_configs"],
                "live_consumer_groups": row["consumer_groups"], "drift": [],
                "policy_violations": [], "config_ops": []}

    expected = plan_df(spark, [
        created(orders, {"retention.ms": "3600000", "min.insync.replicas": "2",
                         "max.message.bytes": "2000000"}, "team-a"),
        created(loose, {"min.insync.replicas": "1"}, None),
    ])
    assert_df_equality(rows, expected, ignore_row_order=True, ignore_nullable=True)


def test_the_configs_the_policies_read_are_filled_in_but_never_a_forbidden_one() -> None:
    specs = [spec(0, "required_configs", configs={"retention.ms": None,
                                                  "cleanup.policy": "delete"}),
             spec(1, "forbidden_configs", configs=["cleanup.policy", "segment.bytes"]),
             spec(2, "required_configs", configs={"retention.ms": "[0-9]+"})]
    assert read_configs(specs) == ("min.insync.replicas", "retention.ms")
    assert read_configs([]) == ("min.insync.replicas",)


POLICIES = [
    spec(0, "topic_name_pattern", default="[a-z]+(\\.[a-z]+)+",
         by_owner={"team-a": "a\\.[a-z.]+"}),
    spec(1, "partitions_range", max=6),
    spec(2, "required_configs", configs={"cleanup.policy": "compact|delete",
                                         "min.insync.replicas": "[2-9]"}),
    spec(3, "forbidden_configs", configs=["unclean.leader.election.enable"]),
    spec(4, "custom", callable="tests.unit.custom_policy_example:refuse_word", word="tmp"),
    # budgets what a run adds: never judged on live topics (it would refuse every one here)
    spec(5, "partition_budget", max_partitions=1),
]


def test_live_topics_run_through_the_configured_create_policies(spark: SparkSession) -> None:
    two = {"min.insync.replicas": "2"}
    rows = [
        live("a.orders", 3, 3, overrides=two),                       # compliant
        live("Bad_Name"),                                            # name; min.insync 1
        live("big.stream", 12, 3, overrides={**two, "cleanup.policy": "compact,delete"}),
        live("tmp.scratch", overrides={**two, "unclean.leader.election.enable": "true"}),
        live("quiet.topic", overrides=two),      # inherits unclean.leader...: not "set"
        # configs not readable: only what needs no config is judged
        live("blind_topic", configs=None, default_configs=None),
        *NOT_JUDGED,
    ]
    desired = desired_df(spark, [{"cluster": "local", "topic": "a.orders", "owner": "team-a"}])

    found = policy_findings(snapshot_df(spark, rows), desired, POLICIES, context(spark, rows))

    assert_findings(found, spark, [
        ("local", "Bad_Name", "topic_name_pattern",
         "topic Bad_Name does not match [a-z]+(\\.[a-z]+)+, the default naming rule; rename "
         "the topic"),
        ("local", "Bad_Name", "required_configs",
         "config min.insync.replicas=1 does not match the required pattern [2-9]"),
        ("local", "big.stream", "partitions_range",
         "partitions 12 exceeds the maximum of 6 allowed on create"),
        ("local", "big.stream", "required_configs",
         "config cleanup.policy=compact,delete does not match the required pattern "
         "compact|delete"),
        ("local", "tmp.scratch", "forbidden_configs",
         "config(s) unclean.leader.election.enable may not be set on create; remove them "
         "from the topic's configs"),
        ("local", "tmp.scratch", "no_word", "topic tmp.scratch contains the word 'tmp'"),
        ("local", "blind_topic", "topic_name_pattern",
         "topic blind_topic does not match [a-z]+(\\.[a-z]+)+, the default naming rule; "
         "rename the topic"),
    ])


def test_an_owners_naming_rule_applies_to_the_topics_its_manifest_rows_give_it(
        spark: SparkSession) -> None:
    rows = [live("a.orders"), live("b.orders")]
    desired = desired_df(spark, [
        {"cluster": "local", "topic": "a.orders", "owner": "team-a"},
        {"cluster": "local", "topic": "b.orders", "owner": "team-a"}])

    found = policy_findings(snapshot_df(spark, rows), desired, POLICIES[:1],
                            context(spark, rows))

    assert_findings(found, spark, [
        ("local", "b.orders", "topic_name_pattern",
         "topic b.orders does not match a\\.[a-z.]+, the naming rule of owner team-a; rename "
         "the topic")])


def test_no_configured_policy_means_no_policy_finding(spark: SparkSession) -> None:
    rows = [live("Bad_Name", overrides={"min.insync.replicas": "9"})]
    found = policy_findings(snapshot_df(spark, rows), desired_df(spark, []), [],
                            context(spark, rows))
    assert_findings(found, spark, [])


# --- health rules --------------------------------------------------------------------------


def test_offline_partition_names_each_partition_without_a_leader(spark: SparkSession) -> None:
    rows = [
        live("half.down", 3, 3, states=[partition_state(0, 1, [1, 2, 3]),
                                        partition_state(1, None, [3, 1, 2], [3]),
                                        partition_state(2, -1, [2, 3, 1], [])]),
        live("all.down", 12, 1, states=[partition_state(p, None, [2]) for p in range(12)]),
        live("healthy", 3, 3),
        live("legacy.row", partition_states=None),   # written before partition states
        *NOT_JUDGED,
    ]

    found = offline_partition(snapshot_df(spark, rows))

    fix = "; every partition needs a leader: bring one of its replicas' brokers back"
    assert_findings(found, spark, [
        ("local", "half.down", "offline_partition",
         "partition 1 has no leader (replicas 3,1,2); partition 2 has no leader (replicas "
         f"2,3,1){fix}"),
        ("local", "all.down", "offline_partition",
         "; ".join(f"partition {p} has no leader (replicas 2)" for p in range(10))
         + f" (and 2 more partitions){fix}"),
    ])


def test_under_replicated_compares_the_isr_with_the_replicas(spark: SparkSession) -> None:
    rows = [
        live("lagging", 2, 3, states=[partition_state(0, 1, [1, 2, 3], [1, 2]),
                                      partition_state(1, 2, [2, 3, 1], [2])]),
        live("offline", 1, 2, states=[partition_state(0, None, [1, 2], [])]),
        live("healthy", 3, 3),
        *NOT_JUDGED,
    ]

    found = under_replicated(snapshot_df(spark, rows))

    assert_findings(found, spark, [
        ("local", "lagging", "under_replicated",
         "partition 0 has in-sync replicas 1,2 of replicas 1,2,3; partition 1 has in-sync "
         "replicas 2 of replicas 2,3,1; every replica should be in sync"),
        ("local", "offline", "under_replicated",
         "partition 0 has in-sync replicas none of replicas 1,2; every replica should be in "
         "sync"),
    ])


def test_below_min_isr_reads_the_effective_min_insync_replicas(spark: SparkSession) -> None:
    broker_two = [*INHERITED[:2], config_entry("min.insync.replicas", "2",
                                               "STATIC_BROKER_CONFIG")]
    rows = [
        # its own override
        live("strict", 2, 3, overrides={"min.insync.replicas": "3"},
             states=[partition_state(0, 1, [1, 2, 3], [1, 2]), partition_state(1, 2, [2, 3, 1])]),
        # the broker's setting, reported for the topic
        live("inherits", 1, 3, inherited=broker_two,
             states=[partition_state(0, 1, [1, 2, 3], [1])]),
        live("enough", 1, 3, inherited=broker_two,
             states=[partition_state(0, 1, [1, 2, 3], [1, 3])]),
        # fewer replicas than min.insync.replicas: min_insync_within_rf's, not this rule's
        live("unwritable", 1, 1, overrides={"min.insync.replicas": "2"}),
        # configs unknown: not judged
        live("blind", 1, 3, configs=None, default_configs=None,
             states=[partition_state(0, 1, [1, 2, 3], [1])]),
        *NOT_JUDGED,
    ]

    found = below_min_isr(snapshot_df(spark, rows))

    assert_findings(found, spark, [
        ("local", "strict", "below_min_isr",
         "partition 0 has 2 in-sync replica(s) (1,2); min.insync.replicas is 3: acks=all "
         "producers are refused until that many replicas are in sync"),
        ("local", "inherits", "below_min_isr",
         "partition 0 has 1 in-sync replica(s) (1); min.insync.replicas is 2: acks=all "
         "producers are refused until that many replicas are in sync"),
    ])


def test_min_insync_within_rf_is_the_always_on_create_policy(spark: SparkSession) -> None:
    rows = [
        live("unwritable", 1, 1, overrides={"min.insync.replicas": "2"}),
        live("broker.says.three", 1, 2, inherited=[
            config_entry("min.insync.replicas", "3", "DYNAMIC_DEFAULT_BROKER_CONFIG")]),
        live("fits", 1, 3, overrides={"min.insync.replicas": "3"}),
        live("blind", 1, 1, configs=None, default_configs=None),
        *NOT_JUDGED,
    ]

    found = min_insync_within_rf(snapshot_df(spark, rows), context(spark, rows))

    tail = ("; acks=all producers could never write: lower min.insync.replicas or raise the "
            "replication factor")
    assert_findings(found, spark, [
        ("local", "unwritable", "min_insync_within_rf",
         f"min.insync.replicas 2 exceeds the replication factor 1{tail}"),
        ("local", "broker.says.three", "min_insync_within_rf",
         f"min.insync.replicas 3 exceeds the replication factor 2{tail}"),
    ])


def test_unmanaged_topics_are_the_ones_no_manifest_row_names(spark: SparkSession) -> None:
    rows = [live("managed"), live("invalid.but.named"), live("stray"), *NOT_JUDGED]
    desired = desired_df(spark, [
        {"cluster": "local", "topic": "managed"},
        {"cluster": "local", "topic": "invalid.but.named", "row_errors": ["partitions: < 1"]},
        {"cluster": "other", "topic": "stray"}])

    found = unmanaged(snapshot_df(spark, rows), desired)

    assert_findings(found, spark, [
        ("local", "stray", "unmanaged",
         "no manifest row names topic stray of cluster local; every topic should have one: "
         "adopt it with `import`, or delete it")])


def test_drift_is_any_difference_the_plan_sees(spark: SparkSession) -> None:
    rows = [
        live("grow", 3, 1),
        live("shrink", 6, 1),
        live("rf", 1, 1),
        live("configs", overrides={"retention.ms": "3600000", "segment.ms": "600000"}),
        live("unlisted.ignored", overrides={"retention.ms": "3600000"}),
        live("gone", 1, 1),
        live("same", 2, 1, overrides={"retention.ms": "3600000"}),
        live("invalid", 2, 1),
        live("unmanaged"),
        *NOT_JUDGED,
    ]
    desired = desired_df(spark, [
        {"cluster": "local", "topic": "grow", "partitions": 6},
        {"cluster": "local", "topic": "shrink", "partitions": 3},
        {"cluster": "local", "topic": "rf", "replication_factor": 3},
        {"cluster": "local", "topic": "configs", "configs": {"retention.ms": "7200000"}},
        # configs null: the row does not manage configs
        {"cluster": "local", "topic": "unlisted.ignored", "partitions": 1},
        {"cluster": "local", "topic": "gone", "state": "absent"},
        {"cluster": "local", "topic": "same", "partitions": 2,
         "configs": {"retention.ms": "3600000"}},
        {"cluster": "local", "topic": "invalid", "partitions": 9, "row_errors": ["duplicate"]},
        {"cluster": "local", "topic": "missing", "partitions": 1},
    ])

    found = drift(snapshot_df(spark, rows), desired)

    head = "differs from its manifest row (live -> manifest): "
    assert_findings(found, spark, [
        ("local", "grow", "drift", f"{head}partitions: 3 -> 6"),
        ("local", "shrink", "drift", f"{head}partitions: 6 -> 3"),
        ("local", "rf", "drift", f"{head}replication_factor: 1 -> 3"),
        ("local", "configs", "drift", f"{head}config retention.ms: 3600000 -> 7200000; "
                                      "config segment.ms: 600000 -> (not set)"),
        ("local", "gone", "drift",
         "the topic is live; its manifest row wants it absent (state absent)"),
    ])


def test_health_findings_run_only_the_rules_asked_for(spark: SparkSession) -> None:
    rows = [live("stray", 1, 2, states=[partition_state(0, None, [1, 2], [1])])]
    snapshot = snapshot_df(spark, rows)

    found = health_findings(snapshot, desired_df(spark, []), context(spark, rows),
                            rules=("offline_partition",))
    nothing = health_findings(snapshot, desired_df(spark, []), context(spark, rows), rules=())

    assert_findings(found, spark, [
        ("local", "stray", "offline_partition",
         "partition 0 has no leader (replicas 1,2); every partition needs a leader: bring one "
         "of its replicas' brokers back")])
    assert_findings(nothing, spark, [])


# --- VIOLATIONS rows -----------------------------------------------------------------------

CHECK_POLICIES = [
    spec(0, "partitions_range", max=6),
    spec(1, "required_configs", configs={"cleanup.policy": "delete",
                                         "compression.type": "zstd|lz4"}),
    spec(2, "custom", callable="tests.unit.custom_policy_example:refuse_word", word="tmp"),
]
GOOD = {"compression.type": "zstd"}


def check_rows() -> list[dict[str, Any]]:
    return [
        # managed, compliant but drifted
        live("a.orders", 3, 1, overrides=GOOD),
        # unmanaged, unwritable with acks=all
        live("loose.topic", overrides={**GOOD, "min.insync.replicas": "2"}),
        # managed without owner: too many partitions, two required configs broken
        live("big.stream", 12, 1, overrides={"cleanup.policy": "compact"}),
        # managed: a partition offline, one under-replicated and below its min.insync
        live("sick.topic", 2, 3, overrides={**GOOD, "min.insync.replicas": "2"},
             states=[partition_state(0, None, [1, 2, 3], [1]),
                     partition_state(1, 2, [2, 3, 1], [1, 2])]),
        live("tmp.scratch", overrides=GOOD),
        *NOT_JUDGED,
    ]


def check_desired(spark: SparkSession) -> DataFrame:
    return desired_df(spark, [
        {"cluster": "local", "topic": "a.orders", "partitions": 3, "owner": "team-a",
         "configs": {"compression.type": "zstd", "retention.ms": "86400000"}},
        {"cluster": "local", "topic": "big.stream", "partitions": 12,
         "configs": {"cleanup.policy": "compact"}},
        {"cluster": "local", "topic": "sick.topic", "owner": "team-b"},
        {"cluster": "local", "topic": "tmp.scratch", "owner": "team-b"},
    ])


def expected_violations(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    return spark.createDataFrame(
        [("check-1", "local", *r, AT, RECORDED) for r in rows], VIOLATIONS)


def run_check(spark: SparkSession, severity: Mapping[str, str] | None = None) -> DataFrame:
    rows = check_rows()
    return violations(snapshot_df(spark, rows), check_desired(spark), CHECK_POLICIES,
                      context(spark, rows), "check-1", RECORDED, severity)


UNWRITABLE = ("min.insync.replicas 2 exceeds the replication factor 1; acks=all producers "
              "could never write: lower min.insync.replicas or raise the replication factor")
STRAY = ("no manifest row names topic loose.topic of cluster local; every topic should have "
         "one: adopt it with `import`, or delete it")
OFFLINE = ("partition 0 has no leader (replicas 1,2,3); every partition needs a leader: bring "
           "one of its replicas' brokers back")
UNDER = ("partition 0 has in-sync replicas 1 of replicas 1,2,3; partition 1 has in-sync "
         "replicas 1,2 of replicas 2,3,1; every replica should be in sync")
BELOW = ("partition 0 has 1 in-sync replica(s) (1); min.insync.replicas is 2: acks=all "
         "producers are refused until that many replicas are in sync")
DRIFTED = ("differs from its manifest row (live -> manifest): config retention.ms: (not set) "
           "-> 86400000")
TOO_BIG = "partitions 12 exceeds the maximum of 6 allowed on create"
# one row for the topic's two required_configs violations, their messages sorted
MISSING = ("config cleanup.policy=compact does not match the required pattern delete; "
           "config compression.type=producer does not match the required pattern zstd|lz4")
TMP = "topic tmp.scratch contains the word 'tmp'"


def test_violations_are_one_row_per_topic_and_rule(spark: SparkSession) -> None:
    found = run_check(spark)

    assert_df_equality(found, expected_violations(spark, [
        ("a.orders", "drift", "warning", DRIFTED, True, "team-a"),
        ("loose.topic", "min_insync_within_rf", "error", UNWRITABLE, False, None),
        ("loose.topic", "unmanaged", "info", STRAY, False, None),
        ("big.stream", "partitions_range", "error", TOO_BIG, True, None),
        ("big.stream", "required_configs", "error", MISSING, True, None),
        ("sick.topic", "offline_partition", "error", OFFLINE, True, "team-b"),
        ("sick.topic", "under_replicated", "warning", UNDER, True, "team-b"),
        ("sick.topic", "below_min_isr", "error", BELOW, True, "team-b"),
        ("tmp.scratch", "no_word", "error", TMP, True, "team-b"),
    ]), ignore_row_order=True, ignore_nullable=True)


def test_severities_are_overridden_and_rules_turned_off(spark: SparkSession) -> None:
    found = run_check(spark, {"unmanaged": "off", "drift": "error", "partitions_range": "off",
                              "custom": "warning", "below_min_isr": "off",
                              "offline_partition": "info"})

    assert_df_equality(found, expected_violations(spark, [
        ("a.orders", "drift", "error", DRIFTED, True, "team-a"),
        ("loose.topic", "min_insync_within_rf", "error", UNWRITABLE, False, None),
        ("big.stream", "required_configs", "error", MISSING, True, None),
        ("sick.topic", "offline_partition", "info", OFFLINE, True, "team-b"),
        ("sick.topic", "under_replicated", "warning", UNDER, True, "team-b"),
        ("tmp.scratch", "no_word", "warning", TMP, True, "team-b"),
    ]), ignore_row_order=True, ignore_nullable=True)


def test_a_custom_policy_turned_off_is_not_run(spark: SparkSession) -> None:
    found = run_check(spark, {"custom": "off", "unmanaged": "off", "drift": "off",
                              "under_replicated": "off", "offline_partition": "off",
                              "below_min_isr": "off", "min_insync_within_rf": "off",
                              "required_configs": "info"})

    assert_df_equality(found, expected_violations(spark, [
        ("big.stream", "partitions_range", "error", TOO_BIG, True, None),
        ("big.stream", "required_configs", "info", MISSING, True, None),
    ]), ignore_row_order=True, ignore_nullable=True)


def test_the_owner_of_duplicate_rows_is_the_one_they_agree_on(spark: SparkSession) -> None:
    rows = [live("dup.same"), live("dup.split"), live("dup.fixed")]
    desired = desired_df(spark, [
        {"cluster": "local", "topic": "dup.same", "owner": "team-a", "row_errors": ["dup"]},
        {"cluster": "local", "topic": "dup.same", "owner": "team-a", "row_errors": ["dup"]},
        {"cluster": "local", "topic": "dup.split", "owner": "team-a", "row_errors": ["dup"]},
        {"cluster": "local", "topic": "dup.split", "owner": "team-b", "row_errors": ["dup"]},
        {"cluster": "local", "topic": "dup.fixed", "owner": "team-a", "row_errors": ["x"]},
        {"cluster": "local", "topic": "dup.fixed", "owner": "team-c"},
    ])

    found = violations(snapshot_df(spark, rows), desired,
                       [spec(0, "topic_name_pattern", default="[a-z]+")],
                       context(spark, rows), "check-1", RECORDED)

    def misnamed(topic: str) -> str:
        return (f"topic {topic} does not match [a-z]+, the default naming rule; rename the "
                "topic")
    assert_df_equality(found, expected_violations(spark, [
        ("dup.same", "topic_name_pattern", "error", misnamed("dup.same"), True, "team-a"),
        ("dup.split", "topic_name_pattern", "error", misnamed("dup.split"), True, None),
        ("dup.fixed", "topic_name_pattern", "error", misnamed("dup.fixed"), True, "team-c"),
    ]), ignore_row_order=True, ignore_nullable=True)


# --- a replica move's throttled-replicas lists: the move's own, never judged -------------

THROTTLES = {LEADER_THROTTLED_REPLICAS: "0:1", FOLLOWER_THROTTLED_REPLICAS: "0:2"}


def test_a_moves_throttled_replicas_are_not_among_the_configs_policies_judge(
        spark: SparkSession) -> None:
    moving = live("a.moving", overrides={"retention.ms": "3600000", **THROTTLES})
    rows = as_created(snapshot_df(spark, [moving]), ("min.insync.replicas",),
                      manifest_owners(desired_df(spark, [])))
    expected = spark.createDataFrame(
        [("local", "a.moving", {"retention.ms": "3600000", "min.insync.replicas": "1"})],
        "cluster string, topic string, configs map<string, string>")
    assert_df_equality(rows.select("cluster", "topic", "configs"), expected,
                       ignore_nullable=True)


def test_a_moves_throttled_replicas_are_not_drift(spark: SparkSession) -> None:
    rows = [live("a.moving", overrides={"retention.ms": "3600000", **THROTTLES})]
    desired = desired_df(spark, [
        {"cluster": "local", "topic": "a.moving", "configs": {"retention.ms": "3600000"}}])

    assert_findings(drift(snapshot_df(spark, rows), desired), spark, [])
