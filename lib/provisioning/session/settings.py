"""The settings every session of the job gets (Delta's, the safety ones) and the runtime
settings of its workload, and how a session tells which mode it runs in.

Read without a session: `build` starts one with them, `connect` checks a Spark Connect
server's against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_SETTINGS = {
    "spark.sql.extensions": DELTA_EXTENSION,
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

# The admin step talks to Kafka: a speculative duplicate of it would send the same
# CreateTopics twice, so speculation stays off whatever the cluster default is.
SAFETY_SETTINGS = {
    "spark.speculation": "false",
}

SESSION_SETTINGS = {**DELTA_SETTINGS, **SAFETY_SETTINGS}

# The job's DataFrames are thousands of rows (a plan, an audit commit) and its Delta tables
# small: Spark's defaults are sized for large data and cost it most of a run (BENCHMARKS.md:
# Spark settings). A shuffle needs a few partitions, not 200; Delta rebuilds a small table's
# state (each commit, each read of a new version) in a few tasks, not 50; a listing of a
# table's files (VACUUM) in a few tasks, not 10,000; and adaptive execution, which plans a
# query again after each of its stages, costs queries this small more than it saves.
# Generated code pays off over millions of rows; the job's queries are many and small, and
# each new one compiled Java (whole-stage and per-expression code) that the JVM then compiled
# again: evaluated as they are, a 10-change run over 1,000 topics took a warm Connect server
# about half the CPU (BENCHMARKS.md: the job's queries without generated code).
WORKLOAD_SETTINGS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # Strings upper- and lower-cased by the JVM's case mappings, not ICU's: the names the job
    # cases are ASCII, where both agree, and the first use of ICU's cost a new JVM about 2 s
    # (BENCHMARKS.md: case mappings).
    "spark.sql.icu.caseMappings.enabled": "false",
}


def runtime_settings(settings: Mapping[str, str] | None = None) -> dict[str, str]:
    """The runtime settings a session of the job gets: WORKLOAD_SETTINGS, overridden by the
    conf's `spark.settings`."""
    return {**WORKLOAD_SETTINGS, **(settings or {})}


def is_connect(spark: SparkSession) -> bool:
    """Whether `spark` is a Spark Connect session (the job is a thin client of a server)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")
