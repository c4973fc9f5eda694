"""CreateTopics requests sized by the broker's per-request caps (KIP-4 batching)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TopicRequest:
    """One CreateTopics entry; partitions / replication_factor None = broker default."""

    name: str
    partitions: int | None
    replication_factor: int | None
    replica_assignment: Mapping[int, Sequence[int]] | None
    configs: Mapping[str, str]



def batches(requests: Iterable[TopicRequest], batch_size: int, max_partitions: int,
            max_records: int, partitions_of: Mapping[str, int] | None = None
            ) -> Iterator[list[TopicRequest]]:
    """Split requests so no CreateTopics exceeds the topic, partition or record caps.

    Records per topic = 1 topic record + one per partition + one per config (the
    controller's count); `partitions_of` overrides the count for topics whose
    partitions were left to the broker default (known after validateOnly).
    """
    current: list[TopicRequest] = []
    parts = records = 0
    for r in requests:
        n = _partition_count(r, partitions_of)
        cost = 1 + n + len(r.configs)
        if current and (len(current) >= batch_size or parts + n > max_partitions
                        or records + cost > max_records):
            yield current
            current, parts, records = [], 0, 0
        current.append(r)
        parts += n
        records += cost
    if current:
        yield current


def _partition_count(r: TopicRequest, known: Mapping[str, int] | None) -> int:
    if r.replica_assignment:
        return len(r.replica_assignment)
    if r.partitions is not None:
        return r.partitions
    if known and r.name in known:
        return known[r.name]
    return 1

