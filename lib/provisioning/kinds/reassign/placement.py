"""Where a partition's replicas go when a manifest row gives only a replication factor.

The rules (issue 27), applied the same way to the same live state, whatever the order or
partitioning of the input:

- A partition's leader is its first replica: the current replicas keep their order, the
  first stays first, and the replicas that stay are kept.
- Raising the replication factor appends replicas one at a time, each on a live broker
  that does not hold the partition yet: one in a rack the partition does not use yet when
  there is any, and among those the broker holding the fewest replicas, the lowest broker
  id breaking ties. A broker without a rack counts as a rack of its own.
- Lowering it removes followers (never the first replica), one at a time, from the broker
  holding the most replicas first, the highest broker id breaking ties.
- A broker's load is the number of replicas it holds in the cluster's whole live
  assignment, updated as each partition is placed, topics by name, partitions by number.
  A partition given an explicit target (the row's `replica_assignment`) takes it as it is,
  and its moves count in the load as well.

`place` is the pure core; `with_targets` applies it to each cluster's rows of a DataFrame
(one Arrow group per cluster, on the executors: nothing is collected on the driver).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import ArrayType, IntegerType, StringType, StructField, StructType

# What `with_targets` returns: the target replicas of each partition it placed.
TARGETS = StructType([
    StructField("cluster", StringType(), True),
    StructField("topic", StringType(), True),
    StructField("partition", IntegerType(), True),
    StructField("after", ArrayType(IntegerType(), True), True),
])
_INPUT = ("cluster", "topic", "partition", "current", "replication_factor", "assigned")


@dataclass(frozen=True)
class PartitionSpec:
    """One live partition of a cluster.

    current: its replicas now (for a partition being moved, the target of that move).
    replication_factor: place it to this many replicas; None leaves it as it is (it only
      counts in the load) unless `assigned` is given.
    assigned: an explicit target, taken as it is.
    """

    topic: str
    partition: int
    current: tuple[int, ...]
    replication_factor: int | None = None
    assigned: tuple[int, ...] | None = None


def _rack(broker: int, racks: Mapping[int, str]) -> str:
    # A NUL cannot be in a rack name: a broker without one is a rack no other broker shares.
    return racks.get(broker) or f"\0{broker}"


def replica_load(assignments: Iterable[Sequence[int]]) -> Counter[int]:
    """Replicas per broker over `assignments` (each a partition's replicas)."""
    load: Counter[int] = Counter()
    for replicas in assignments:
        load.update(replicas)
    return load


def raise_replicas(current: Sequence[int], replication_factor: int, brokers: Iterable[int],
                   racks: Mapping[int, str], load: Counter[int]) -> list[int]:
    """`current` followed by the replicas that bring it to `replication_factor` (fewer when
    the live brokers run out); `load` is updated with each replica added.

    Example: raise_replicas([1], 3, [1, 2, 3, 4], {1: "a", 2: "a", 3: "b", 4: "c"},
    Counter({1: 5, 2: 0, 3: 2, 4: 2})) == [1, 3, 4]: broker 2 is idle but in rack a, which
    the partition already uses.
    """
    target = list(current)
    live = sorted(set(brokers))
    while len(target) < replication_factor:
        candidates = [b for b in live if b not in target]
        if not candidates:
            break
        used = {_rack(b, racks) for b in target}
        fresh = [b for b in candidates if _rack(b, racks) not in used]
        chosen = min(fresh or candidates, key=lambda b: (load[b], b))
        target.append(chosen)
        load[chosen] += 1
    return target


def lower_replicas(current: Sequence[int], replication_factor: int, load: Counter[int]
                   ) -> list[int]:
    """`current` without the followers that bring it down to `replication_factor` (never
    below its first replica); `load` is updated with each replica removed.

    Example: lower_replicas([1, 2, 3], 2, Counter({1: 9, 2: 4, 3: 4})) == [1, 2]: broker 1
    holds the most but leads; 2 and 3 tie and the higher id goes.
    """
    target = list(current)
    while len(target) > max(replication_factor, 1):
        chosen = max(target[1:], key=lambda b: (load[b], b))
        target.remove(chosen)
        load[chosen] -= 1
    return target


def target_replicas(current: Sequence[int], replication_factor: int, brokers: Iterable[int],
                    racks: Mapping[int, str], load: Counter[int]) -> list[int]:
    """The replicas of a partition at `replication_factor`, by the rules of this module."""
    if replication_factor > len(current):
        return raise_replicas(current, replication_factor, brokers, racks, load)
    return lower_replicas(current, replication_factor, load)


def place(partitions: Iterable[PartitionSpec], brokers: Iterable[int],
          racks: Mapping[int, str]) -> dict[tuple[str, int], list[int]]:
    """(topic, partition) -> target replicas of every partition of one cluster that has a
    replication factor or an explicit target.

    partitions: every live partition of the cluster (all of them count in the load).
    brokers: the live (unfenced) brokers, the only ones new replicas go to.
    racks: broker id -> rack of the live brokers that have one.
    """
    ordered = sorted(partitions, key=lambda p: (p.topic, p.partition))
    live = sorted(set(brokers))
    load = replica_load(p.current for p in ordered)
    targets: dict[tuple[str, int], list[int]] = {}
    for p in ordered:
        if p.assigned is not None:
            after = list(p.assigned)
            load.subtract(set(p.current) - set(after))
            load.update(set(after) - set(p.current))
        elif p.replication_factor is not None:
            after = target_replicas(p.current, p.replication_factor, live, racks, load)
        else:
            continue
        targets[(p.topic, p.partition)] = after
    return targets


def _place_group(partitions: pa.Table, facts: pa.Table) -> pa.Table:
    """One cluster's rows (the `with_targets` input) and its CLUSTER_STATE row -> TARGETS."""
    rows = partitions.to_pylist()
    cluster_rows: list[dict[str, Any]] = facts.to_pylist(maps_as_pydicts="strict")
    fact = cluster_rows[0] if cluster_rows else {}
    specs = [PartitionSpec(
        topic=r["topic"], partition=int(r["partition"]), current=tuple(r["current"] or ()),
        replication_factor=r["replication_factor"],
        assigned=None if r["assigned"] is None else tuple(r["assigned"]))
        for r in rows]
    targets = place(specs, fact.get("broker_ids") or (), fact.get("racks") or {})
    cluster = rows[0]["cluster"] if rows else None
    placed = sorted(targets.items())
    return pa.table({
        "cluster": pa.array([cluster] * len(placed), pa.string()),
        "topic": pa.array([t for (t, _), _ in placed], pa.string()),
        "partition": pa.array([p for (_, p), _ in placed], pa.int32()),
        "after": pa.array([a for _, a in placed], pa.list_(pa.int32())),
    })


def with_targets(partitions: DataFrame, clusters: DataFrame) -> DataFrame:
    """TARGETS rows (cluster, topic, partition, after) of every partition to place.

    partitions: every live partition of each cluster (they make the load): cluster, topic,
      partition, current (array<int>), replication_factor (int, null: not placed) and
      assigned (array<int>, an explicit target, null: none).
    clusters: CLUSTER_STATE rows, for each cluster's live brokers and racks.
    """
    rows = partitions.select(*_INPUT)
    facts = clusters.select("cluster", "broker_ids", "racks")
    return (rows.groupBy("cluster").cogroup(facts.groupBy("cluster"))
            .applyInArrow(_place_group, TARGETS))
