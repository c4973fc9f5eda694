"""`report --reassignments`: the rows of the partitions being moved, per cluster, and their
rendering; a cluster that cannot be read is an error of its own."""

from __future__ import annotations

from typing import Any

import kafka.errors as Errors
import pytest

from provisioning.conf import ClusterConf, KafkaConf
from provisioning.errors import ClusterUnreachable
from provisioning.kinds.reassign import in_flight as reassign_in_flight
from provisioning.kinds.reassign.in_flight import reassignment_rows, reassignments_in_flight
from provisioning.kinds.reassign.requests import Ongoing
from provisioning.kinds.reassign.view import reassignments_view, render_reassignments

# orders-0 goes from 1,2 to 2,3 (3 added, 1 removed); ledger-4 from 1 to 1,2 (RF 1 -> 2).
MOVES = {
    ("orders", 0): Ongoing(replicas=(2, 3, 1), adding=(3,), removing=(1,)),
    ("ledger", 4): Ongoing(replicas=(1, 2), adding=(2,), removing=()),
}


def row(topic: str, partition: int, replicas: list[int], adding: list[int],
        removing: list[int], target: list[int], bytes_left: int | None,
        cluster: str = "local") -> dict[str, Any]:
    return {"cluster": cluster, "topic": topic, "partition": partition, "replicas": replicas,
            "adding": adding, "removing": removing, "target": target,
            "bytes_left": bytes_left}


def test_a_row_per_moving_partition_with_its_target_and_bytes_left() -> None:
    got = reassignment_rows("local", MOVES, {("orders", 0): 1_048_576, ("ledger", 4): None})
    assert got == [
        row("ledger", 4, [1, 2], [2], [], [1, 2], None),
        row("orders", 0, [2, 3, 1], [3], [1], [2, 3], 1_048_576),
    ]


def test_bytes_left_is_null_where_no_broker_said() -> None:
    assert reassignment_rows("local", {("orders", 0): MOVES[("orders", 0)]}, {}) == [
        row("orders", 0, [2, 3, 1], [3], [1], [2, 3], None)]


def test_the_topics_glob_keeps_the_matching_partitions_of_every_cluster() -> None:
    blocks = [
        {"cluster": "local", "error": None, "partitions": reassignment_rows("local", MOVES, {})},
        {"cluster": "east", "error": "cluster east at b:9092 is unreachable (NoBrokersAvailable)",
         "partitions": []},
    ]
    assert reassignments_view(blocks, "ord*") == {"reassignments": [
        {"cluster": "local", "error": None,
         "partitions": [row("orders", 0, [2, 3, 1], [3], [1], [2, 3], None)]},
        blocks[1],
    ]}


def test_rendered_as_a_table_per_cluster_with_each_error_on_its_line() -> None:
    payload = {"reassignments": [
        {"cluster": "local", "error": None, "partitions": reassignment_rows(
            "local", MOVES, {("orders", 0): 1_048_576})},
        {"cluster": "east", "error": "cluster east at b:9092 is unreachable (NoBrokersAvailable)",
         "partitions": []},
        {"cluster": "west", "error": None, "partitions": []},
    ]}
    assert render_reassignments(payload) == [
        "partition reassignments in flight (read live from each cluster)",
        "cluster local: 2 partition(s) moving",
        "  topic   partition  replicas  adding  removing  target  bytes left",
        "  ledger  4          1,2       2       -         1,2     unknown",
        "  orders  0          2,3,1     3       1         2,3     1048576",
        "cluster east: error: cluster east at b:9092 is unreachable (NoBrokersAvailable)",
        "cluster west: none",
    ]


class FakeAdmin:
    """A ClusterAdmin that connects to nothing; `down` clusters are unreachable."""

    down = frozenset({"east"})

    def __init__(self, cluster: ClusterConf, _credentials: Any, _kafka: KafkaConf) -> None:
        self.cluster = cluster

    def __enter__(self) -> FakeAdmin:
        if self.cluster.name in self.down:
            raise ClusterUnreachable(f"cluster {self.cluster.name} at "
                                     f"{self.cluster.bootstrap_servers} is unreachable "
                                     "(NoBrokersAvailable)")
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def test_a_cluster_that_cannot_be_read_is_an_error_and_the_others_are_listed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def listed(admin: FakeAdmin, with_bytes_left: bool = True) -> list[dict[str, Any]]:
        if admin.cluster.name == "west":
            raise Errors.ClusterAuthorizationFailedError("not allowed")
        return reassignment_rows(admin.cluster.name, MOVES, {})

    monkeypatch.setattr(reassign_in_flight, "ClusterAdmin", FakeAdmin)
    monkeypatch.setattr(reassign_in_flight, "cluster_in_flight", listed)
    clusters = [ClusterConf(name=n, bootstrap_servers=f"{n}:9092")
                for n in ("local", "east", "west")]

    assert reassignments_in_flight(clusters, {}, KafkaConf()) == [
        {"cluster": "local", "error": None,
         "partitions": reassignment_rows("local", MOVES, {})},
        {"cluster": "east", "partitions": [],
         "error": "cluster east at east:9092 is unreachable (NoBrokersAvailable)"},
        {"cluster": "west", "partitions": [],
         "error": "cluster west: reassignments not listed "
                  "([Error 31] ClusterAuthorizationFailedError: not allowed)"},
    ]
