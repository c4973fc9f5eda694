"""Building the job's SparkSession, classic or Spark Connect, with the settings every run needs.

Two kinds of settings (README: Spark settings):

- `SESSION_SETTINGS` (Delta's extension and catalog, speculation off) are static: they are
  the server's or the driver's, given when it starts. `build_session` gives them to a
  classic driver, `spark-submit.sh` passes them as `--conf` (it reads this module without
  importing pyspark), the Airflow DAG is tested against them, and a Spark Connect server
  is checked for them (`connect.check_server_settings`).
- `WORKLOAD_SETTINGS` are runtime SQL settings sized for the job's own work, which any
  session may set for itself: every session the job opens gets them, classic (spark-submit.sh
  passes them too) or through Spark Connect (set on the session after connecting), whatever
  the cluster's or the server's defaults are. A conf's `spark.settings` entry overrides one.

Never creates a session at import time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from provisioning.session.profile import Profile, classic_settings

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


def build_session(
    app_name: str,
    settings: Mapping[str, str] | None = None,
    jars: Sequence[str] = (),
    remote: str | None = None,
    profile: Profile | None = None,
) -> SparkSession:
    """The job's session: a Spark Connect session on `remote` (sc://HOST:PORT), else the
    classic one (with Delta, WORKLOAD_SETTINGS, `settings` and any extra `jars` for local
    runs); `settings` (the conf's `spark.settings`) override WORKLOAD_SETTINGS. With
    `profile`, the session reports its Spark work to it (`session.profile`)."""
    if remote:
        from provisioning.session.connect import connect_session

        return connect_session(remote, app_name, runtime_settings(settings), profile)
    from pyspark.sql import SparkSession

    settings = settings or {}
    builder = SparkSession.builder.appName(app_name)
    merged = {**DELTA_SETTINGS, **runtime_settings(settings), **SAFETY_SETTINGS,
              **(classic_settings(profile) if profile is not None else {})}
    if jars:
        merged["spark.jars"] = ",".join([*jars, *filter(None, [settings.get("spark.jars")])])
    for key, value in merged.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def submit_arguments() -> list[str]:
    """SESSION_SETTINGS and WORKLOAD_SETTINGS as spark-submit arguments (`--conf key=value`
    ...)."""
    return [part for key, value in {**SESSION_SETTINGS, **WORKLOAD_SETTINGS}.items()
            for part in ("--conf", f"{key}={value}")]
