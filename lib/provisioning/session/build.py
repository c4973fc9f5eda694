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
from provisioning.session.settings import (
    DELTA_SETTINGS,
    SAFETY_SETTINGS,
    SESSION_SETTINGS,
    WORKLOAD_SETTINGS,
    runtime_settings,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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
