"""Building the job's SparkSession, classic or Spark Connect, with the settings every run needs.

`SESSION_SETTINGS` is what every session of the job needs, however it is started:
`build_session` applies it, `spark-submit.sh` passes it as `--conf` (it reads this module
without importing pyspark), and the Airflow DAG is tested against it. Never creates a
session at import time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


def is_connect(spark: SparkSession) -> bool:
    """Whether `spark` is a Spark Connect session (the job is a thin client of a server)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def build_session(
    app_name: str,
    settings: Mapping[str, str] | None = None,
    jars: Sequence[str] = (),
    remote: str | None = None,
) -> SparkSession:
    """The job's session: a Spark Connect session on `remote` (sc://HOST:PORT), else the
    classic one (with Delta, `settings` and any extra `jars` for local runs)."""
    if remote:
        from provisioning.session.connect import connect_session

        return connect_session(remote, app_name, settings or {})
    from pyspark.sql import SparkSession

    settings = settings or {}
    builder = SparkSession.builder.appName(app_name)
    merged = {**DELTA_SETTINGS, **settings, **SAFETY_SETTINGS}
    if jars:
        merged["spark.jars"] = ",".join([*jars, *filter(None, [settings.get("spark.jars")])])
    for key, value in merged.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()

def submit_arguments() -> list[str]:
    """`SESSION_SETTINGS` as spark-submit arguments (`--conf key=value` ...)."""
    return [part for key, value in SESSION_SETTINGS.items()
            for part in ("--conf", f"{key}={value}")]
