"""The SparkSession: its settings (the one list of them), job labels and helper threads.

`SESSION_SETTINGS` is what every session of the job needs, however it is
started: `build_session` applies it, `spark-submit.sh` passes it as `--conf`
(it reads this module without importing pyspark), and the Airflow DAG is
tested against it. Never creates a session at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

SESSION_SETTINGS = {**DELTA_SETTINGS, **SAFETY_SETTINGS}


def build_session(
    app_name: str,
    settings: Mapping[str, str] | None = None,
    jars: Sequence[str] = (),
) -> SparkSession:
    """Get or create the session with Delta, `settings` and any extra `jars` (local runs)."""
    from pyspark.sql import SparkSession

    settings = settings or {}
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


class Background:
    """Runs `fn` on a thread of its own while the caller goes on; `join` waits for it and
    raises what `fn` raised. Spark jobs it starts keep the caller's job description."""

    def __init__(self, fn: Callable[[], None], name: str) -> None:
        from pyspark import InheritableThread

        self.name = name
        self._error: BaseException | None = None
        self._ok = False

        def target() -> None:
            try:
                fn()
                self._ok = True
            except BaseException as exc:  # handed to whoever joins
                self._error = exc

        self._thread = InheritableThread(target=target, name=name, daemon=True)
        self._thread.start()

    def join(self) -> None:
        self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def succeeded(self) -> bool:
        """Wait for `fn`; True when it returned (its error, if any, is not raised here)."""
        self._thread.join()
        return self._ok

    def error(self) -> BaseException | None:
        """Wait for `fn`; what it raised, or None."""
        self._thread.join()
        return self._error


def submit_arguments() -> list[str]:
    """`SESSION_SETTINGS` as spark-submit arguments (`--conf key=value` ...)."""
    return [part for key, value in SESSION_SETTINGS.items()
            for part in ("--conf", f"{key}={value}")]
