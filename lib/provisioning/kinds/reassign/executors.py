"""The replica moves' admin I/O as Spark tasks (`run.executors`): AlterPartitionReassignments,
throttled, and the wait for the moves."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame

from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kinds.reassign.tasks import reassign_results, reassign_verify_results
from provisioning.run.executors import on_executors
from schemas import TOPIC_RESULT


def send_reassigns(requests: DataFrame, clusters: Sequence[ClusterConf],
                   credentials: Mapping[str, Credentials], kafka: KafkaConf,
                   throttle_rate: int | None) -> DataFrame:
    """Start the replica moves of every request row (cluster, topic, live_topic_id,
    reassignment), throttled at `throttle_rate` bytes per second (None: not throttled)."""
    work = functools.partial(reassign_results, kafka=kafka, throttle_rate=throttle_rate)
    return on_executors(requests, work, clusters, credentials, TOPIC_RESULT)


def verify_reassigns(requests: DataFrame, clusters: Sequence[ClusterConf],
                     credentials: Mapping[str, Credentials], kafka: KafkaConf,
                     wait_seconds: float, owned_brokers: Mapping[str, Mapping[int, int]]
                     ) -> DataFrame:
    """Wait up to `wait_seconds` for the moves of every request row (as for
    `send_reassigns`), clear the finished ones' throttles and the broker rates the job set
    (`owned_brokers`: cluster -> {broker: rate}) that no move in flight uses any more."""
    work = functools.partial(reassign_verify_results, kafka=kafka, wait_seconds=wait_seconds,
                             owned_brokers={c: dict(b) for c, b in owned_brokers.items()})
    return on_executors(requests, work, clusters, credentials, TOPIC_RESULT)
