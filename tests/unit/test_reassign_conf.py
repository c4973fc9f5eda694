"""The `reassign:` conf section and `policies.reassign`; the cluster facts the plan reads
(CLUSTER_STATE racks and fenced brokers)."""

from __future__ import annotations

from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

from provisioning.conf import PolicySpec
from provisioning.errors import ConfError
from provisioning.kafka.client import ClusterState
from provisioning.kinds.reassign.conf import ReassignConf
from provisioning.run.executors import cluster_states_frame
from schemas import CLUSTER_STATE
from tests.helpers import parse_conf

MINIMAL: dict[str, Any] = {
    "clusters": {"local": {"bootstrap_servers": "127.0.0.1:9092"}},
    "tables": {"manifests": ["m"], "audit": "a", "runs": "r", "snapshots": "s"},
}


def _problems(data: object) -> list[str]:
    with pytest.raises(ConfError) as err:
        parse_conf(data, "test.yaml")
    return err.value.problems


def test_defaults_throttle_at_50_mib_per_second() -> None:
    conf = parse_conf(MINIMAL, "test.yaml")
    assert conf.section(ReassignConf) == ReassignConf(
        max_partitions_per_cluster=500, throttle_bytes_per_second=52428800, wait_seconds=300)
    assert conf.section(ReassignConf).policies == ()


def test_values_are_read_and_null_turns_the_throttle_off() -> None:
    conf = parse_conf({**MINIMAL, "reassign": {"max_partitions_per_cluster": 20,
                                               "throttle_bytes_per_second": None,
                                               "wait_seconds": 0}}, "test.yaml")
    assert conf.section(ReassignConf) == ReassignConf(
        max_partitions_per_cluster=20, throttle_bytes_per_second=None, wait_seconds=0)
    conf = parse_conf({**MINIMAL, "reassign": {"throttle_bytes_per_second": 1048576}},
                      "test.yaml")
    assert conf.section(ReassignConf) == ReassignConf(throttle_bytes_per_second=1048576)


def test_every_problem_of_the_section_is_named_at_once() -> None:
    assert _problems({**MINIMAL, "reassign": {
        "max_partitions_per_cluster": -1, "throttle_bytes_per_second": 0,
        "wait_seconds": "5m", "throttle": 10}}) == [
        "reassign.throttle: unknown key (allowed: max_partitions_per_cluster, "
        "throttle_bytes_per_second, wait_seconds)",
        "reassign.max_partitions_per_cluster: must be >= 0, got -1",
        "reassign.throttle_bytes_per_second: must be > 0, got 0",
        "reassign.wait_seconds: expected an integer, got a string",
    ]


def test_reassign_policies_take_custom_ones_only() -> None:
    conf = parse_conf({**MINIMAL, "policies": {"reassign": [
        {"name": "custom", "callable": "tests.unit.custom_policy_example:refuse_word"}]}},
        "test.yaml")
    assert conf.section(ReassignConf).policies == (PolicySpec(
        name="custom", params={"callable": "tests.unit.custom_policy_example:refuse_word"},
        key="policies.reassign[0]"),)
    assert _problems({**MINIMAL, "policies": {"reassign": [{"name": "min_insync"}]}}) == [
        "policies.reassign[0].name: unknown reassign policy 'min_insync' (known: custom)"]


def test_cluster_states_frame_has_the_racks_and_the_fenced_brokers(spark: SparkSession
                                                                    ) -> None:
    states = {
        "racked": ClusterState(cluster_id="c1", controller_id=2, broker_ids=(1, 2, 3),
                               default_partitions=3, default_replication_factor=2,
                               racks={1: "a", 2: "b", 3: "c"}, fenced_broker_ids=(4,)),
        "plain": ClusterState(cluster_id="c2", controller_id=1, broker_ids=(1,)),
    }
    expected = spark.createDataFrame([
        ("plain", "c2", 1, [1], None, None, None, {}, []),
        ("racked", "c1", 2, [1, 2, 3], 3, 2, None, {1: "a", 2: "b", 3: "c"}, [4]),
    ], CLUSTER_STATE)
    assert_df_equality(cluster_states_frame(spark, states), expected, ignore_row_order=True)
