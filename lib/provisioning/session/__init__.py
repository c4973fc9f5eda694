"""The SparkSession, classic or Spark Connect, and what every run does with it.

- `settings`: the static settings every run needs and the runtime settings of its workload
  (also read by spark-submit.sh);
- `build`: the session, classic or on a Spark Connect server;
- `connect`: a Spark Connect server's session, its checks (what it cannot run without, what
  will make the job slow), the code shipped to it;
- `tags`: job labels, the run tag and the signals that stop a run;
- `threads`: helper threads carrying the caller's tags, with futures for results.
"""

from provisioning.session.build import build_session, submit_arguments
from provisioning.session.connect import (
    SHIPPED_PACKAGES,
    SLOW_SERVER_SETTINGS,
    check_server_settings,
    connect_session,
    outlives_run,
    package_zip,
    redact_remote,
    release_session,
    release_sessions,
    shared_session_id,
    ship_code,
    slow_settings,
)
from provisioning.session.settings import (
    DELTA_EXTENSION,
    DELTA_SETTINGS,
    SAFETY_SETTINGS,
    SESSION_SETTINGS,
    WORKLOAD_SETTINGS,
    is_connect,
    runtime_settings,
)
from provisioning.session.tags import (
    APPEND_TAG,
    RUN_TAG,
    Stop,
    handling_signals,
    job_label,
    run_tag,
)
from provisioning.session.threads import helper, succeeded

__all__ = [
    "APPEND_TAG",
    "DELTA_EXTENSION",
    "DELTA_SETTINGS",
    "RUN_TAG",
    "SAFETY_SETTINGS",
    "SESSION_SETTINGS",
    "SHIPPED_PACKAGES",
    "SLOW_SERVER_SETTINGS",
    "WORKLOAD_SETTINGS",
    "Stop",
    "build_session",
    "check_server_settings",
    "connect_session",
    "handling_signals",
    "helper",
    "is_connect",
    "job_label",
    "outlives_run",
    "package_zip",
    "redact_remote",
    "release_session",
    "release_sessions",
    "run_tag",
    "runtime_settings",
    "shared_session_id",
    "ship_code",
    "slow_settings",
    "submit_arguments",
    "succeeded",
]
