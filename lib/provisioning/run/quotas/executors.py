"""The client quotas' admin I/O as Spark tasks (`run.executors`): AlterClientQuotas,
validateOnly or for real, and the read-back."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame

from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.tasks.quotas import quota_results
from provisioning.run.executors import by_name, on_executors
from schemas.quotas import QUOTA_KEY, QUOTA_RESULT

# The columns a quota task reads of a plan row.
REQUEST_COLUMNS = (*QUOTA_KEY, "action", "value")


def send_quotas(requests: DataFrame, clusters: Sequence[ClusterConf],
                credentials: Mapping[str, Credentials], kafka: KafkaConf, kind: str,
                batch_size: int) -> DataFrame:
    """The quota work of `kind` (`kafka.tasks.quotas`: validate, apply, verify) for plan
    rows (REQUEST_COLUMNS): one QUOTA_RESULT row per quota, `batch_size` entities per
    AlterClientQuotas request."""
    named, creds = by_name(clusters), dict(credentials)

    def work(rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[Any, ...]]:
        return quota_results(rows, named, creds, kafka, kind, batch_size)

    return on_executors(requests.select(*REQUEST_COLUMNS), work, clusters, QUOTA_RESULT,
                        order=QUOTA_KEY)
