"""The admin I/O as Spark tasks: a DataFrame of requests in, a DataFrame of results out.

Rows are spread one cluster per partition and sorted by their key; each task hands its
rows to a function of the Kafka package (each kind's senders, `run.<kind>.executors`, name
which) and their rows become the output DataFrame. Nothing is collected on the driver.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from provisioning import names
from provisioning.conf import ClusterConf, Credentials
from provisioning.errors import ExecutorsUnfit, ProvisioningError
from provisioning.kafka import timing
from provisioning.kafka.client import ClusterState
from provisioning.run import arrow
from provisioning.session import job_label, profile
from schemas import CLUSTER_STATE

log = logging.getLogger(__name__)

PartitionWork = Callable[[Iterable[Mapping[str, Any]]], Iterator[tuple[Any, ...]]]
# The Kafka room's work on the rows of one cluster in a Spark task, given that cluster and
# its credentials only, by name (as the Kafka room's task functions take them), and what
# else the task is given of that cluster alone (`per_cluster`): -> result rows.
ClusterWork = Callable[..., Iterator[tuple[Any, ...]]]


def task_attempt() -> int:
    """Which attempt of the current Spark task this is (0 outside a task)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return 0 if ctx is None else ctx.attemptNumber()


def on_executors(requests: DataFrame, work: ClusterWork, clusters: Sequence[ClusterConf],
                 credentials: Mapping[str, Credentials], schema: StructType,
                 order: Sequence[Any] = ("cluster", "topic"),
                 per_cluster: Mapping[str, Mapping[str, Any]] | None = None) -> DataFrame:
    """`work(rows, {name: cluster}, {name: its credentials}, **per_cluster[name])` over the
    request rows, one task per cluster, as a DataFrame of `schema`.

    Each cluster's task is a function of its own, holding that cluster's credentials and
    what `per_cluster` gives it (its rows' passwords) and nothing of another cluster's: the
    Python process that runs one cluster's requests never has another's secrets. A row of
    a cluster not in `clusters` fails the job (`_no_cluster`), as the Kafka room fails on a
    cluster it does not know.

    Under `--profile` each task also times its Kafka requests and hands them back in
    REQUESTS, a column of its last row (`materialized` takes it off)."""
    timed = profile.profiled()
    out = StructType([*schema.fields, REQUESTS_FIELD]) if timed else schema
    target = arrow.arrow_schema(out)

    def task_of(cluster: ClusterConf | None) -> Callable[[Iterator[pa.RecordBatch]],
                                                         Iterator[pa.RecordBatch]]:
        named = {} if cluster is None else {cluster.name: cluster}
        own = {n: credentials[n] for n in named if n in credentials}
        extra = dict((per_cluster or {}).get(cluster.name, {})) if cluster else {}

        def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            given = arrow.dict_rows(batches)
            rows = work(given, named, own, **extra) if named else _no_cluster(given)
            return arrow.record_batches(_with_requests(rows) if timed else rows, target)

        return task

    def branch(rows: DataFrame, cluster: ClusterConf | None) -> DataFrame:
        # Each cluster's rows gathered into one task as they are (no shuffle); mapInArrow,
        # not an RDD: the same plan runs on classic Spark and on Spark Connect.
        return rows.coalesce(1).sortWithinPartitions(*order).mapInArrow(task_of(cluster), out)

    if len(clusters) <= 1:
        return branch(requests, clusters[0] if clusters else None)
    names_ = [c.name for c in clusters]
    cluster_col = F.col("cluster")
    branches = [branch(requests.where(cluster_col == c.name), c) for c in clusters]
    branches.append(branch(requests.where(cluster_col.isNull() | ~cluster_col.isin(*names_)),
                           None))
    return functools.reduce(DataFrame.union, branches)


def _no_cluster(rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[Any, ...]]:
    """The task of rows whose cluster is not one of the run's: none is expected."""
    for row in rows:
        raise ValueError(f"an admin request of cluster {row.get('cluster')!r}, which is not "
                         "one of the run's clusters")
    yield from ()


# The column an admin task's last row carries its timed Kafka requests in (`--profile`).
REQUESTS = "_kafka_requests"
REQUESTS_FIELD = StructField(REQUESTS, ArrayType(StructType([
    StructField("api", StringType()), StructField("count", IntegerType()),
    StructField("seconds", DoubleType())])))


# The entry of REQUESTS that holds the task's own time, first row in to last row out.
TASK_TIME = "(admin task)"


def _with_requests(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """`rows` with REQUESTS appended: null on each but the last, which carries every request
    the task sent while making them (`kafka.timing`) and the task's time (TASK_TIME)."""
    tally = timing.Tally()
    started = time.monotonic()
    held: tuple[Any, ...] | None = None
    with timing.recording(tally):
        for row in rows:
            if held is not None:
                yield (*held, None)
            held = row
    if held is not None:
        yield (*held, [*({"api": a, "count": n, "seconds": s} for a, n, s in tally.rows()),
                       {"api": TASK_TIME, "count": 1, "seconds": time.monotonic() - started}])


def materialized(results: DataFrame) -> DataFrame:
    """An admin job's `results`, computed once (a local checkpoint: Kafka is asked once);
    under `--profile`, the requests its tasks timed go to the profile (one query of the
    profile's own) and their column is dropped."""
    done = results.localCheckpoint(eager=True)
    if REQUESTS not in done.columns:
        return done
    with job_label(done.sparkSession, profile.OWN_TAG):
        timed = (done.where(F.col(REQUESTS).isNotNull())
                 .select(F.explode(REQUESTS).alias("r")).select("r.*").collect())
    for r in timed:
        if r["api"] == TASK_TIME:
            profile.task(float(r["seconds"]))
        else:
            profile.requests(str(r["api"]), int(r["count"]), float(r["seconds"]))
    return done.drop(REQUESTS)


# What the admin tasks import that a stock PySpark lacks (they are shipped with the job) or
# may lack (pyarrow carries their rows: mapInArrow).
EXECUTOR_MODULES = ("pyarrow", "kafka", "tenacity", "provisioning.kafka.tasks.common")


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
    tasks will run in, with the Kafka package imported."""
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


def by_name(clusters: Sequence[ClusterConf]) -> dict[str, ClusterConf]:
    return {c.name: c for c in clusters}


def answered(results: DataFrame, requests: DataFrame, phase: str, lost: str,
             unanswered: Callable[..., DataFrame]) -> DataFrame:
    """The admin job's result rows (a kind's result schema), materialized (Kafka is asked
    once).

    When the job itself fails (a task died: in local mode at once, on a cluster once Spark
    gave up retrying it), the answers it got are lost with it: every request row
    (`requests`, its key columns) is then recorded with the outcome `lost` and the job's
    error: `unknown` for requests that may have changed Kafka (and for verify), which
    `verify` and the next run's snapshot settle; `failed` for validateOnly requests.

    unanswered: how those rows are made (the kind's `without_answer(targets, phase,
      outcome, error_name, message, attempts)`).
    """
    try:
        return materialized(results)
    except ProvisioningError:
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:1500]
        log.error("the admin job of phase %s failed (%s: %s); its rows are recorded %s",
                  phase, type(exc).__name__, first, lost)
        return unanswered(
            requests, phase, lost, type(exc).__name__,
            f"the Spark job sending this request failed, its answers lost with it: {first}",
            attempts=0 if lost == names.FAILED else 1).localCheckpoint(eager=True)


def cluster_states_frame(spark: SparkSession, states: Mapping[str, ClusterState]) -> DataFrame:
    """The preflight result as a small DataFrame (CLUSTER_STATE)."""
    rows = [(name, s.cluster_id, s.controller_id, list(s.broker_ids), s.default_partitions,
             s.default_replication_factor, None, dict(s.racks), list(s.fenced_broker_ids))
            for name, s in sorted(states.items())]
    return spark.createDataFrame(rows, CLUSTER_STATE)
