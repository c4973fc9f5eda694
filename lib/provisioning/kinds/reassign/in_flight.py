"""The one listing of the partition reassignments in flight on each cluster, read live: what
a run plans its replica moves on, and `report --reassignments`.

Per cluster, once its identity is checked (the conf's `cluster_id`):
ListPartitionReassignments (`reassign.list_reassignments`), and, for the report, how much
each move still has to copy (`reassign.bytes_left`, null where a broker does not say).
Every reassignment is listed, whoever started it. A cluster that cannot be read is one
block with its error; the other clusters are still read.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import kafka.errors as Errors

from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.errors import ClusterUnreachable, ProvisioningError
from provisioning.kafka.client import ClusterAdmin
from provisioning.kinds.reassign import requests as reassign
from provisioning.kinds.reassign.requests import Ongoing, Partition

log = logging.getLogger(__name__)


def reassignment_rows(cluster: str, moves: Mapping[Partition, Ongoing],
                      left: Mapping[Partition, int | None]) -> list[dict[str, Any]]:
    """One row per moving partition, sorted by topic and partition: cluster, topic,
    partition, replicas (the target, then the replicas being removed), adding, removing,
    target, bytes_left (None where `left` has no answer)."""
    return [{"cluster": cluster, "topic": topic, "partition": partition,
             "replicas": list(o.replicas), "adding": list(o.adding),
             "removing": list(o.removing), "target": list(o.target),
             "bytes_left": left.get((topic, partition))}
            for (topic, partition), o in sorted(moves.items())]


def cluster_in_flight(admin: ClusterAdmin, with_bytes_left: bool = True
                      ) -> list[dict[str, Any]]:
    """`reassignment_rows` of the cluster `admin` is connected to (`bytes_left` null
    unless `with_bytes_left`). Raises ClusterUnreachable, or the request's KafkaError."""
    cluster = admin.cluster
    if cluster.cluster_id:
        answered = admin.cluster_state().cluster_id
        if answered != cluster.cluster_id:
            raise ClusterUnreachable(
                f"cluster {cluster.name}: expected cluster id {cluster.cluster_id} but "
                f"{cluster.bootstrap_servers} answers as {answered}")
    moves = reassign.list_reassignments(admin)
    left = reassign.bytes_left(admin, moves) if moves and with_bytes_left else {}
    return reassignment_rows(cluster.name, moves, left)


def reassignments_in_flight(clusters: Sequence[ClusterConf],
                            credentials: Mapping[str, Credentials], kafka: KafkaConf,
                            with_bytes_left: bool = True) -> list[dict[str, Any]]:
    """One block per cluster, in the given order: {"cluster", "error", "partitions"}, with
    `partitions` its `reassignment_rows` and `error` null, or `partitions` empty and `error`
    saying why the cluster could not be read.

    with_bytes_left: ask each broker how much each move still has to copy (the report).
    """
    blocks: list[dict[str, Any]] = []
    for cluster in clusters:
        try:
            with ClusterAdmin(cluster, credentials.get(cluster.name), kafka) as admin:
                rows = cluster_in_flight(admin, with_bytes_left)
        except ProvisioningError as exc:  # unreachable, refused login, another identity
            blocks.append({"cluster": cluster.name, "error": str(exc), "partitions": []})
            continue
        except (Errors.KafkaError, OSError) as exc:
            log.debug("cluster %s: ListPartitionReassignments failed", cluster.name,
                      exc_info=exc)
            blocks.append({"cluster": cluster.name, "error": _not_listed(cluster.name, exc),
                           "partitions": []})
            continue
        blocks.append({"cluster": cluster.name, "error": None, "partitions": rows})
    return blocks


def _not_listed(cluster: str, exc: BaseException) -> str:
    # A KafkaError names itself (and its code); an OSError does not.
    text = str(exc) if isinstance(exc, Errors.KafkaError) else f"{type(exc).__name__}: {exc}"
    return (f"cluster {cluster}: reassignments not listed "
            f"({(text.strip().splitlines() or [''])[0][:300]})")


def in_flight(clusters: Sequence[ClusterConf], credentials: Mapping[str, Credentials],
              kafka: KafkaConf) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """What a run plans its moves on: every partition being reassigned on each cluster
    (REASSIGNMENT_IN_FLIGHT rows, as dicts), and cluster -> why it could not be listed
    (say the job's principal may not describe the cluster): the plan then starts no move
    there, since it cannot tell which partitions are moving already."""
    rows: list[dict[str, Any]] = []
    problems: dict[str, str] = {}
    for block in reassignments_in_flight(clusters, credentials, kafka, with_bytes_left=False):
        if block["error"]:
            problems[block["cluster"]] = block["error"]
            continue
        rows += [{k: r[k] for k in ("cluster", "topic", "partition", "replicas", "adding",
                                    "removing")} for r in block["partitions"]]
    return rows, problems
