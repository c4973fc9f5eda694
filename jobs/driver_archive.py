"""Run the driver's Spark and Delta paths once on throwaway tables (`make driver-archive`).

Started with -XX:ArchiveClassesAtExit, the JVM records every class this run
loaded in a class-data-sharing archive; `spark-submit.sh` starts later drivers
with it, so they map those classes instead of loading and verifying them one by
one. Nothing here talks to Kafka or touches a table outside the temp directory.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from provisioning.delta_io import TableRef, append
from provisioning.lock import RunLock
from provisioning.manifest_file import load_manifest_file
from provisioning.manifests import read_manifests, write_manifest
from provisioning.plan import in_scope
from provisioning.spark import build_session
from provisioning.validation import with_duplicate_errors, with_row_errors


def main(example: str) -> None:
    spark = build_session("driver-archive", {"spark.sql.session.timeZone": "UTC"})
    rows = load_manifest_file(example)
    with tempfile.TemporaryDirectory(prefix="driver-archive-") as tmp:
        base = Path(tmp)
        lock = RunLock(spark, str(base / "locks"), ["local"], "driver-archive", "apply", 60)
        lock.acquire()
        try:
            write_manifest(spark, rows, str(base / "manifest"))
            desired = (read_manifests(spark, [str(base / "manifest")])
                       .transform(with_row_errors(("local",)))
                       .transform(with_duplicate_errors)
                       .transform(in_scope(("local",), None, ("local",)))
                       .localCheckpoint(eager=True))
            append(desired, TableRef(str(base / "audit")))
            # The Python side of the admin tasks: a Python RDD through a worker.
            spark.sparkContext.parallelize(range(4), 2).mapPartitions(
                lambda part: [sum(part)]).collect()
        finally:
            lock.release()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "conf/examples/desired_topics.yaml")
