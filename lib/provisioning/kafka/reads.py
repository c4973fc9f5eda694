"""A kind's live state read from every cluster of a run, on the driver: each cluster's read,
or why it could not be read (its state is unknown then, never "none"), while the other
clusters are still read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.errors import ProvisioningError
from provisioning.kafka.client import ClusterAdmin

T = TypeVar("T")

# Why a cluster's state could not be read: (error name, message).
Problem = tuple[str, str]


class Unreadable(ProvisioningError):
    """A read of a cluster's state failed as a whole (`request`, with Kafka's error name, or
    kafka-python's exception name when no answer came)."""

    def __init__(self, cluster: str, request: str, error: str, message: str | None) -> None:
        self.error_name = error
        super().__init__(f"cluster {cluster}: {request} failed: {error}"
                         + (f": {message}" if message else ""))


def each_cluster(clusters: Sequence[ClusterConf], credentials: Mapping[str, Credentials],
                 kafka: KafkaConf, read: Callable[[ClusterAdmin], T],
                 unread: Callable[[Problem], T],
                 also: tuple[type[Exception], ...] = ()) -> dict[str, T]:
    """cluster -> `read` of its admin, or `unread` of why it raised `Unreadable` (or one of
    `also`, named by its type)."""
    found: dict[str, T] = {}
    for cluster in clusters:
        with ClusterAdmin(cluster, credentials.get(cluster.name), kafka) as admin:
            try:
                found[cluster.name] = read(admin)
            except Unreadable as exc:
                found[cluster.name] = unread((exc.error_name, str(exc)))
            except also as exc:
                found[cluster.name] = unread((type(exc).__name__, str(exc)))
    return found
