"""The SparkSession: classic or Spark Connect, its settings, job labels and helper threads.

`SESSION_SETTINGS` is what every session of the job needs, however it is
started: `build_session` applies it, `spark-submit.sh` passes it as `--conf`
(it reads this module without importing pyspark), and the Airflow DAG is
tested against it. A Connect server owns its static settings: `connect_session`
checks that the server has what they would have given (Delta, no speculation)
and ships the job's code to it. Never creates a session at import time.

Only APIs that both modes support are used here and in the rest of the package:
job labels are operation tags (`addTag`), cancellation is `interruptTag`, and
helper threads carry the caller's tags over themselves.
"""

from __future__ import annotations

import atexit
import datetime as dt
import gc
import hashlib
import importlib.util
import logging
import os
import re
import signal
import tempfile
import threading
import uuid
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from provisioning.errors import ConnectServerUnfit, RunCancelled, SparkUnreachable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

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

# What the Python workers of a Connect server import besides pyspark: this package, its
# schemas and kafka-python (the admin tasks run there). Shipped with addArtifacts.
SHIPPED_PACKAGES = ("provisioning", "schemas", "kafka")


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


def connect_session(remote: str, app_name: str, settings: Mapping[str, str]) -> SparkSession:
    """A session on the Spark Connect server at `remote`, checked and given the job's code.

    Runtime SQL settings of `settings` are applied to the session; static ones belong to
    the server (it was started with them or without them).

    Unless `remote` names a session (`;session_id=...`), runs share one: its id comes from
    the code shipped, the settings, the user and the UTC day (`shared_session_id`), so
    the server's Python workers, already started and holding the job's code, serve the
    next run too (a new session costs each run 1-2 s to start its Python workers, and on
    Spark 4.2 a Python daemon process the server keeps until it stops). A shared session
    the server has closed (idle for longer than its timeout) is replaced by a new one.
    """
    from pyspark.sql import SparkSession

    def open_session(url: str) -> SparkSession:
        builder = SparkSession.builder.remote(url).appName(app_name)
        for key, value in settings.items():
            builder = builder.config(key, value)
        return builder.create()

    where = redact_remote(remote)
    shared = _SESSION_PARAM not in remote
    url = _with_session(remote, shared_session_id(remote, settings)) if shared else remote
    spark = open_session(url)
    try:
        try:
            check_connect_server(spark, where)
        except Exception as exc:
            if not (shared and "SESSION_CLOSED" in str(exc)):
                raise
            log.info("the shared Spark Connect session was closed by the server; this run "
                     "opens one of its own")
            shared = False
            spark = open_session(_with_session(remote, str(uuid.uuid4())))
            check_connect_server(spark, where)
    except ConnectServerUnfit:
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise SparkUnreachable(f"cannot reach the Spark Connect server at {where}: "
                               f"{type(exc).__name__}: {first}") from exc
    ship_code(spark)
    # A shared session stays open on the server for the next run: only this client's
    # channel closes at exit, after the run's checkpointed data was released (each
    # checkpointed DataFrame releases its server copy when it is collected).
    spark.release_session_on_close = not shared  # type: ignore[attr-defined]
    with _ship_lock:
        if not _opened and not _at_exit:
            atexit.register(release_sessions)
            _at_exit.append(True)
        _opened.append(spark)
    return spark


_opened: list[SparkSession] = []
_at_exit: list[bool] = []


def release_sessions() -> None:
    """End this process's use of the Connect sessions it opened (at exit, or when an
    in-process caller's command is done: `provisioning.cli.run`)."""
    with _ship_lock:
        opened = list(_opened)
        _opened.clear()
    for spark in opened:
        release_session(spark)


_SESSION_PARAM = ";session_id="


def _with_session(remote: str, session_id: str) -> str:
    base = remote if "/;" in remote or remote.endswith("/") else remote + "/"
    return f"{base}{_SESSION_PARAM}{session_id}"


def shared_session_id(remote: str, settings: Mapping[str, str]) -> str:
    """The id of the session that runs of this code, with these Spark settings, by this
    user, on this UTC day, share on the server at `remote` (a UUID of version 4's form)."""
    digest = hashlib.sha256()
    for part in (remote.split(";", 1)[0], os.environ.get("USER", ""),
                 dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
                 *(package_zip(name).name for name in SHIPPED_PACKAGES),
                 *(f"{k}={v}" for k, v in sorted(settings.items()))):
        digest.update(part.encode())
        digest.update(b"\0")
    return str(uuid.UUID(bytes=digest.digest()[:16], version=4))


def release_session(spark: SparkSession) -> None:
    """End this process's use of a Connect session: its checkpointed data is released,
    then the session itself (unless it is shared) and the channel."""
    try:
        gc.collect()  # checkpointed DataFrames left in reference cycles release theirs
        spark.stop()
    except Exception as exc:  # the process is ending: nothing left to tell but a warning
        log.warning("could not end the Spark Connect session: %s", type(exc).__name__)


def check_connect_server(spark: SparkSession, where: str) -> None:
    """Raise ConnectServerUnfit unless the server runs Delta's extension with speculation
    off (both are static: only the server's start can set them)."""
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    speculation = (spark.conf.get("spark.speculation", "false") or "false").lower()
    problems = []
    if DELTA_EXTENSION not in extensions:
        problems.append(f"spark.sql.extensions lacks {DELTA_EXTENSION} (the server has no "
                        "Delta: start it with the Delta jars and Delta's two settings)")
    if speculation == "true":
        problems.append("spark.speculation is true (a speculative admin task would send the "
                        "same CreateTopics twice: start the server with spark.speculation=false)")
    if problems:
        raise ConnectServerUnfit(f"the Spark Connect server at {where} cannot run the job: "
                                 + "; ".join(problems))


def redact_remote(remote: str) -> str:
    """`remote` without the values of its parameters (a token never reaches a log)."""
    return re.sub(r";([^;=/]+)=[^;]*", r";\1=***", remote)


_shipped: set[str] = set()
_ship_lock = threading.Lock()


def ship_code(spark: SparkSession) -> None:
    """Add the packages the admin tasks import (SHIPPED_PACKAGES) to the Connect session as
    Python artifacts, once per session: the server's workers need only pyspark."""
    session_id = str(getattr(spark, "session_id", id(spark)))
    with _ship_lock:
        if session_id in _shipped:
            return
        spark.addArtifacts(*(str(package_zip(name)) for name in SHIPPED_PACKAGES),
                           pyfile=True)
        _shipped.add(session_id)


def package_zip(name: str) -> Path:
    """A zip of the installed package `name` (every file but bytecode), named by its content
    and reused while the content stays the same. Found without importing it: the zip of
    kafka-python is made here, yet only the kafka room imports it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ConnectServerUnfit(f"cannot ship package {name}: it is not installed here")
    root = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(p for p in root.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.relative_to(root).as_posix().encode())
        digest.update(f.read_bytes())
    out_dir = Path(tempfile.gettempdir()) / "topic-provisioning-artifacts"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{name}-{digest.hexdigest()[:16]}.zip"
    if out.exists():
        return out
    tmp = out_dir / f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            info = zipfile.ZipInfo(f"{name}/{f.relative_to(root).as_posix()}",
                                   date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, f.read_bytes())
    tmp.replace(out)
    return out


def _tag(text: str) -> str:
    """An operation tag of `text`: Spark refuses empty tags and commas."""
    return (text.replace(",", ";").strip() or "topic-provisioning")[:200]


@contextmanager
def job_label(spark: SparkSession, text: str) -> Iterator[None]:
    """Tag the Spark operations started inside the block with `text` (the phase), in both
    modes: the Spark UI lists a job's tags, and `interruptTag` cancels them."""
    tag = _tag(text)
    had = tag in spark.getTags()
    spark.addTag(tag)
    try:
        yield
    finally:
        if not had:
            spark.removeTag(tag)


# The tag of a run's own operations (its queries and admin tasks, on the main thread):
# helper threads do not carry it, so cancelling the run never interrupts a commit.
RUN_TAG = "topic-provisioning run "


def run_tag(run_id: str) -> str:
    return f"{RUN_TAG}{run_id}"


@contextmanager
def cancelled_by_signals(spark: SparkSession, run_id: str) -> Iterator[None]:
    """Inside the block, the run's own operations carry its run tag, and SIGTERM or SIGINT
    interrupts them (in both modes: `interruptTag`) and raises RunCancelled in the main
    thread, so the run records what completed (commits in flight land), gives its lock
    back and exits 6. A second signal acts as the default would. Only the main thread can
    take signals: elsewhere the block only carries the tag.
    """
    tag = run_tag(run_id)
    with job_label(spark, tag):
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        with _on_signals(spark, tag):
            yield


@contextmanager
def _on_signals(spark: SparkSession, tag: str) -> Iterator[None]:
    signals = (signal.SIGTERM, signal.SIGINT)
    received: list[str] = []

    def cancelled() -> RunCancelled:
        return RunCancelled(f"cancelled by {received[0]}: the run's Spark operations were "
                            "interrupted; what completed is recorded, a rerun converges")

    def handler(signum: int, _frame: object) -> None:
        for s in signals:
            signal.signal(s, signal.SIG_DFL if s == signal.SIGTERM
                          else signal.default_int_handler)
        received.append(signal.Signals(signum).name)
        threading.Thread(target=_interrupt, args=(spark, tag), name="interrupt",
                         daemon=True).start()
        raise cancelled()

    previous = {s: signal.signal(s, handler) for s in signals}
    try:
        yield
    except RunCancelled:
        raise
    except BaseException as exc:
        # Raised inside a call to Spark, the cancellation may reach here as that call's
        # own error (py4j wraps what interrupts its socket read).
        if received:
            raise cancelled() from exc
        raise
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _interrupt(spark: SparkSession, tag: str) -> None:
    try:
        interrupted = spark.interruptTag(_tag(tag))
    except Exception as exc:  # the run is stopping anyway; its operations may be done
        log.warning("could not interrupt the run's Spark operations: %s", type(exc).__name__)
        return
    log.info("interrupted %d Spark operation(s) of the run", len(interrupted))


class Background:
    """Runs `fn` on a thread of its own while the caller goes on; `join` waits for it and
    raises what `fn` raised. Spark operations it starts carry the caller's tags (a new
    thread starts without any, in both modes), all but the run tag."""

    def __init__(self, fn: Callable[[], object], name: str,
                 spark: SparkSession | None = None) -> None:
        self.name = name
        self._error: BaseException | None = None
        self._ok = False
        tags = sorted(t for t in spark.getTags() if not t.startswith(RUN_TAG)) \
            if spark is not None else []

        def target() -> None:
            try:
                for tag in tags:
                    spark.addTag(tag)  # type: ignore[union-attr]
                fn()
                self._ok = True
            except BaseException as exc:  # handed to whoever joins
                self._error = exc

        self._thread = threading.Thread(target=target, name=name, daemon=True)
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
