"""The admin I/O as Spark tasks: a DataFrame of requests in, a DataFrame of results out.

Rows are spread one cluster per partition and sorted by topic; each task hands its
rows to the Kafka room's per-cluster functions (`provisioning.kafka.tasks`,
`provisioning.kafka.snapshot`) and their rows become the output DataFrame. Nothing is
collected on the driver.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from provisioning import names
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.errors import ExecutorsUnfit, ProvisioningError
from provisioning.kafka import snapshot, tasks
from provisioning.kafka.client import ClusterState
from provisioning.run import arrow
from provisioning.transforms.results import without_answer
from schemas import ACL_RESULT, BINDING_KEY, CLUSTER_STATE, SNAPSHOT, TOPIC_RESULT

log = logging.getLogger(__name__)

PartitionWork = Callable[[Iterable[Mapping[str, Any]]], Iterator[tuple[Any, ...]]]


def _task_attempt() -> int:
    """Which attempt of the current Spark task this is (0 outside a task)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return 0 if ctx is None else ctx.attemptNumber()


def _on_executors(requests: DataFrame, work: PartitionWork, clusters: Sequence[ClusterConf],
                  schema: StructType, order: Sequence[Any] = ("cluster", "topic")
                  ) -> DataFrame:
    # One partition per cluster of the run, so clusters go to parallel tasks. Sized from
    # the conf rather than by counting the requests' clusters: that count was one more
    # Spark job (a shuffle) per phase, and a cluster without requests is an empty task.
    n = max(1, len(clusters))
    target = arrow.arrow_schema(schema)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return arrow.record_batches(work(arrow.dict_rows(batches)), target)

    # mapInArrow, not an RDD: the same plan runs on classic Spark and on Spark Connect.
    return (requests.repartition(n, "cluster").sortWithinPartitions(*order)
            .mapInArrow(task, schema))


# What the admin tasks import that a stock PySpark lacks (they are shipped with the job) or
# may lack (pyarrow carries their rows: mapInArrow).
EXECUTOR_MODULES = ("pyarrow", "kafka", "provisioning.kafka.tasks")


def _executor_probe(modules: Sequence[str]) -> Callable[[int], str]:
    """A function for a plain (pickled, not Arrow) Python UDF that imports `modules` in the
    executor's Python and reports which failed. Built in a closure so that cloudpickle ships
    it by value: the executor needs nothing of this package to run it."""

    def probe(_: int) -> str:
        import importlib
        import json
        import sys

        missing = []
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception as exc:  # an import may fail in any way the module's code does
                missing.append(f"{module} ({type(exc).__name__}: {str(exc)[:200]})")
        return json.dumps({"python": sys.executable,
                           "version": ".".join(map(str, sys.version_info[:3])),
                           "missing": missing})

    return probe


def check_executors(spark: SparkSession, clusters: Sequence[ClusterConf]) -> None:
    """Run one small task per admin task slot (one per cluster) that imports what the admin
    tasks need (EXECUTOR_MODULES); raise ExecutorsUnfit (exit 2) naming what is missing, or
    why the executors' Python could not run it. It also starts the Python workers the admin
    tasks will run in, with the Kafka room imported."""
    n = max(1, len(clusters))
    probe = F.udf(_executor_probe(EXECUTOR_MODULES), "string", useArrow=False)
    try:
        answers = [json.loads(r[0]) for r in
                   spark.range(n, numPartitions=n).select(probe(F.col("id"))).collect()]
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:500]
        raise ExecutorsUnfit(
            f"the executors' Python could not run the job's check task: "
            f"{type(exc).__name__}: {first} (README: Where it runs, what executors need)"
        ) from exc
    lacking = {(a["python"], a["version"], m) for a in answers for m in a["missing"]}
    if lacking:
        detail = "; ".join(f"{m} in {p} (Python {v})" for p, v, m in sorted(lacking))
        raise ExecutorsUnfit(
            f"the executors' Python cannot run the admin tasks: missing {detail}. Install "
            "pyarrow on the cluster (it ships with any Spark built for Arrow) or point "
            "spark.pyspark.python at a Python that has it; the job ships kafka-python and "
            "its own package itself (README: Where it runs, what executors need)")
    log.info("the executors run %s; the admin tasks' modules import", ", ".join(
        sorted({f"{a['python']} (Python {a['version']})" for a in answers})))


def _by_name(clusters: Sequence[ClusterConf]) -> dict[str, ClusterConf]:
    return {c.name: c for c in clusters}


def send_creates(requests: DataFrame, clusters: Sequence[ClusterConf],
                 credentials: Mapping[str, Credentials], kafka: KafkaConf,
                 validate_only: bool) -> DataFrame:
    """CreateTopics for every request row (validateOnly or for real), batched per cluster.

    `requests` has cluster, topic, partitions, replication_factor, replica_assignment,
    configs and known_partitions (the count validateOnly returned).
    """
    by_name, creds = _by_name(clusters), dict(credentials)

    def work(rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[Any, ...]]:
        return tasks.create_results(rows, by_name, creds, kafka, validate_only,
                                    attempt=_task_attempt())

    return _on_executors(requests, work, clusters, TOPIC_RESULT)


def send_deletes(requests: DataFrame, clusters: Sequence[ClusterConf],
                 credentials: Mapping[str, Credentials], kafka: KafkaConf) -> DataFrame:
    """DeleteTopics (by topic id when known) for every row of (cluster, topic, topic_id)."""
    by_name, creds = _by_name(clusters), dict(credentials)

    def work(rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[Any, ...]]:
        return tasks.delete_results(rows, by_name, creds, kafka, attempt=_task_attempt())

    return _on_executors(requests, work, clusters, TOPIC_RESULT)


def send_alters(requests: DataFrame, clusters: Sequence[ClusterConf],
                credentials: Mapping[str, Credentials], kafka: KafkaConf,
                validate_only: bool) -> DataFrame:
    """IncrementalAlterConfigs and CreatePartitions (validateOnly or for real) for every
    request row (cluster, topic, config_ops, partitions_to, new_assignment)."""
    by_name, creds = _by_name(clusters), dict(credentials)

    def work(rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[Any, ...]]:
        return tasks.alter_results(rows, by_name, creds, kafka, validate_only,
                                   attempt=_task_attempt())

    return _on_executors(requests, work, clusters, TOPIC_RESULT)


def verify(requests: DataFrame, clusters: Sequence[ClusterConf],
           credentials: Mapping[str, Credentials], kafka: KafkaConf) -> DataFrame:
    """Wait until created topics have a leader on every partition, deleted ones are gone and
    altered ones show the change.

    `requests` has cluster, topic, action, config_ops, partitions_to and before_partitions.
    """
    work = functools.partial(tasks.verify_results, clusters=_by_name(clusters),
                             credentials=dict(credentials), kafka=kafka)
    return _on_executors(requests, work, clusters, TOPIC_RESULT)


def send_reassigns(requests: DataFrame, clusters: Sequence[ClusterConf],
                   credentials: Mapping[str, Credentials], kafka: KafkaConf,
                   throttle_rate: int | None) -> DataFrame:
    """Start the replica moves of every request row (cluster, topic, live_topic_id,
    reassignment), throttled at `throttle_rate` bytes per second (None: not throttled)."""
    work = functools.partial(tasks.reassign_results, clusters=_by_name(clusters),
                             credentials=dict(credentials), kafka=kafka,
                             throttle_rate=throttle_rate)
    return _on_executors(requests, work, clusters, TOPIC_RESULT)


def verify_reassigns(requests: DataFrame, clusters: Sequence[ClusterConf],
                     credentials: Mapping[str, Credentials], kafka: KafkaConf,
                     wait_seconds: float, owned_brokers: Mapping[str, Mapping[int, int]]
                     ) -> DataFrame:
    """Wait up to `wait_seconds` for the moves of every request row (as for
    `send_reassigns`), clear the finished ones' throttles and the broker rates the job set
    (`owned_brokers`: cluster -> {broker: rate}) that no move in flight uses any more."""
    work = functools.partial(tasks.reassign_verify_results, clusters=_by_name(clusters),
                             credentials=dict(credentials), kafka=kafka,
                             wait_seconds=wait_seconds,
                             owned_brokers={c: dict(b) for c, b in owned_brokers.items()})
    return _on_executors(requests, work, clusters, TOPIC_RESULT)


def send_acls(requests: DataFrame, clusters: Sequence[ClusterConf],
              credentials: Mapping[str, Credentials], kafka: KafkaConf, kind: str,
              batch_size: int) -> DataFrame:
    """The ACL work of `kind` (`kafka.tasks.acls`: authority, grant, revoke, verify) for
    binding rows (cluster and the binding columns; `action` for verify): one ACL_RESULT row
    per binding, `batch_size` bindings per CreateAcls / DeleteAcls request."""
    by_name, creds = _by_name(clusters), dict(credentials)

    def work(rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[Any, ...]]:
        return tasks.acl_results(rows, by_name, creds, kafka, kind, batch_size,
                                 attempt=_task_attempt())

    return _on_executors(requests, work, clusters, ACL_RESULT, order=BINDING_KEY)


def answered(results: DataFrame, requests: DataFrame, phase: str, lost: str,
             unanswered: Callable[..., DataFrame] | None = None) -> DataFrame:
    """The admin job's result rows (TOPIC_RESULT, or ACL_RESULT), materialized (Kafka is
    asked once).

    When the job itself fails (a task died: in local mode at once, on a cluster once Spark
    gave up retrying it), the answers it got are lost with it: every request row
    (`requests`: cluster, topic) is then recorded with the outcome `lost` and the job's
    error: `unknown` for requests that may have changed Kafka (and for verify), which
    `verify` and the next run's snapshot settle; `failed` for validateOnly requests.

    unanswered: how those rows are made (default: topic rows, `without_answer`; ACL
      bindings: `acl_without_answer`, with `requests` the binding rows).
    """
    try:
        return results.localCheckpoint(eager=True)
    except ProvisioningError:
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:1500]
        log.error("the admin job of phase %s failed (%s: %s); its rows are recorded %s",
                  phase, type(exc).__name__, first, lost)
        targets = (requests.select("cluster", "topic") if unanswered is None else requests)
        return (unanswered or without_answer)(
            targets, phase, lost, type(exc).__name__,
            f"the Spark job sending this request failed, its answers lost with it: {first}",
            attempts=0 if lost == names.FAILED else 1).localCheckpoint(eager=True)


def snapshot_topics(
    spark: SparkSession,
    clusters: Sequence[ClusterConf],
    credentials: Mapping[str, Credentials],
    kafka: KafkaConf,
    run_id: str,
    cluster_ids: Mapping[str, str | None],
    wanted: DataFrame | None = None,
) -> DataFrame:
    """Every live topic of every cluster (SNAPSHOT), one Spark task per cluster.

    wanted: (cluster, topic) rows, the manifests' topics. A listing shows a
      principal only the topics it may describe, so each wanted topic the listing
      lacks is described by name: absent ones leave no row, and one the principal
      may not see gets a row with `error_name` (TOPIC_AUTHORIZATION_FAILED) rather
      than passing for absent.
    """
    if not clusters:
        return spark.createDataFrame([], SNAPSHOT)
    names = [c.name for c in clusters]
    # One marker row per cluster, so a cluster no wanted row names is still listed.
    work_rows = spark.createDataFrame([(n, None) for n in names], "cluster string, topic string")
    if wanted is not None:
        work_rows = work_rows.unionByName(
            wanted.where(F.col("cluster").isin(*names) & F.col("topic").isNotNull())
            .select("cluster", "topic").distinct())
    work = functools.partial(
        snapshot.snapshot_results,
        clusters=_by_name(clusters),
        credentials=dict(credentials),
        kafka=kafka,
        run_id=run_id,
        cluster_ids=dict(cluster_ids),
        taken_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
    )
    return _on_executors(work_rows, work, clusters, SNAPSHOT,
                         order=("cluster", F.col("topic").asc_nulls_first()))


def cluster_states_frame(spark: SparkSession, states: Mapping[str, ClusterState]) -> DataFrame:
    """The preflight result as a small DataFrame (CLUSTER_STATE)."""
    rows = [(name, s.cluster_id, s.controller_id, list(s.broker_ids), s.default_partitions,
             s.default_replication_factor, None, dict(s.racks), list(s.fenced_broker_ids))
            for name, s in sorted(states.items())]
    return spark.createDataFrame(rows, CLUSTER_STATE)
