"""SparkSession construction: Delta configured, settings from conf, never at import time."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from pyspark.sql import SparkSession

DELTA_SETTINGS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

# The admin step talks to Kafka: a speculative duplicate of it would send the same
# CreateTopics twice, so speculation stays off whatever the cluster default is.
SAFETY_SETTINGS = {
    "spark.speculation": "false",
}


def build_session(
    app_name: str,
    settings: Mapping[str, str] = {},
    jars: Sequence[str] = (),
) -> SparkSession:
    """Get or create the session with Delta, `settings` and any extra `jars` (local runs)."""
    builder = SparkSession.builder.appName(app_name)
    merged = {**DELTA_SETTINGS, **settings, **SAFETY_SETTINGS}
    if jars:
        merged["spark.jars"] = ",".join([*jars, *filter(None, [settings.get("spark.jars")])])
    for key, value in merged.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@contextmanager
def job_description(spark: SparkSession, text: str) -> Iterator[None]:
    """Label the Spark jobs started inside the block, so the UI shows the phase."""
    sc = spark.sparkContext
    previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(text)
    try:
        yield
    finally:
        sc.setLocalProperty("spark.job.description", previous)  # type: ignore[arg-type]
