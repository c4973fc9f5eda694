"""Warm the driver's Spark and Delta paths for `make driver-archive`.

    ./spark-submit.sh jobs/driver_archive.py [MANIFEST.yaml]

Run the driver's Spark and Delta paths once on throwaway tables. Started with
-XX:ArchiveClassesAtExit, the JVM records every class this run loaded in a class-data-sharing
archive; `spark-submit.sh` starts later drivers with it, so they map those classes instead of
loading and verifying them one by one. Nothing here talks to Kafka or touches a table outside
the temp directory.
"""


from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from pyspark.sql.types import StringType, StructField, StructType

from provisioning.conf import parse_conf
from provisioning.delta.lock import RunLock
from provisioning.delta.manifests import write_manifest
from provisioning.delta.tables import TableRef, append
from provisioning.kinds.topics.cli import load_manifest_file
from provisioning.kinds.topics.planning import read_desired
from provisioning.registry import KINDS
from provisioning.run import arrow
from provisioning.session import build_session
from schemas import MANIFEST, column_names


def _echo(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    schema = arrow.arrow_schema(StructType([StructField("cluster", StringType()),
                                            StructField("topic", StringType())]))
    rows = ((r["cluster"], r["topic"]) for r in arrow.dict_rows(batches))
    return arrow.record_batches(rows, schema)


def warm_up(manifest_rows: list[tuple[object, ...]]) -> None:
    """Take a lock, write and read a manifest through the run's chain, append an audit-like
    commit and run a Python task, all on tables in a temp directory."""
    spark = build_session("driver-archive", {"spark.sql.session.timeZone": "UTC"})
    cluster_at = column_names(MANIFEST).index("cluster")
    clusters = sorted({str(r[cluster_at]) for r in manifest_rows if r[cluster_at]}) or ["local"]
    with tempfile.TemporaryDirectory(prefix="driver-archive-") as tmp:
        base = Path(tmp)
        conf = parse_conf({
            "clusters": {c: {"bootstrap_servers": "127.0.0.1:9"} for c in clusters},
            "tables": {"manifests": [str(base / "manifest")], "audit": str(base / "audit"),
                       "runs": str(base / "runs"), "snapshots": str(base / "snapshots")},
        }, "driver-archive", tuple(k.conf for k in KINDS))
        # A lease long enough for a cold JVM's first appends on a loaded machine: the claim
        # is read back after them, and a lease already run out reads as no claim.
        lock = RunLock(spark, conf.tables.locks, clusters, "driver-archive", "apply", 900)
        lock.acquire()
        try:
            write_manifest(spark, manifest_rows, str(base / "manifest"))
            desired = read_desired(spark, conf, clusters, None)
            append(desired, TableRef(conf.tables.audit))
            # The Python side of the admin tasks: mapInArrow through a Python worker.
            desired.select("cluster", "topic").mapInArrow(_echo, "cluster string, topic string"
                                                          ).collect()
        finally:
            lock.release()
    spark.stop()


if __name__ == "__main__":
    warm_up(load_manifest_file(sys.argv[1] if len(sys.argv) > 1
                               else "conf/examples/desired_topics.yaml"))
