"""The ACL bindings' admin I/O as Spark tasks (`run.executors`): the authority check,
CreateAcls, DeleteAcls and their read-back."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame

from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.tasks.acls import acl_results
from provisioning.run.executors import by_name, on_executors, task_attempt
from schemas import ACL_RESULT, BINDING_KEY


def send_acls(requests: DataFrame, clusters: Sequence[ClusterConf],
              credentials: Mapping[str, Credentials], kafka: KafkaConf, kind: str,
              batch_size: int) -> DataFrame:
    """The ACL work of `kind` (`kafka.tasks.acls`: authority, grant, revoke, verify) for
    binding rows (cluster and the binding columns; `action` for verify): one ACL_RESULT row
    per binding, `batch_size` bindings per CreateAcls / DeleteAcls request."""
    named, creds = by_name(clusters), dict(credentials)

    def work(rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[Any, ...]]:
        return acl_results(rows, named, creds, kafka, kind, batch_size,
                           attempt=task_attempt())

    return on_executors(requests, work, clusters, ACL_RESULT, order=BINDING_KEY)
