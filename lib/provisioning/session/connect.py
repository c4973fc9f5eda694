"""Spark Connect: a session on a server, the server's checks, and the code shipped to it.

A Connect server owns its static settings: `connect_session` checks that the server has
what the job cannot run without (Delta, no speculation), sets the job's runtime settings on
the session (`build.runtime_settings`), warns about what will make the job slow (a runtime
setting the server did not let the session take, a static one of `SLOW_SERVER_SETTINGS`)
and ships the job's code to it, zipped in the user's private folder (`artifacts_dir`). Runs
of the same code and settings by one user share one server session, whose id is random
(`shared_session_id`).
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import gc
import hashlib
import importlib.util
import logging
import os
import re
import stat
import tempfile
import threading
import uuid
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from provisioning.errors import ConnectServerUnfit, SparkUnreachable
from provisioning.session.profile import Profile, connect_interceptor
from provisioning.session.remembered import remember_settings
from provisioning.session.settings import DELTA_EXTENSION, is_connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

# What the Python workers of a Connect server import besides pyspark: this package, its
# schemas, kafka-python and tenacity (the admin tasks run there, and resend, wait out
# throttles and poll through the retry layer). Shipped with addArtifacts.
SHIPPED_PACKAGES = ("provisioning", "schemas", "kafka", "tenacity")

def connect_session(remote: str, app_name: str, settings: Mapping[str, str],
                    profile: Profile | None = None) -> SparkSession:
    """A session on the Spark Connect server at `remote`, checked and given the job's code.

    `settings` (the job's runtime settings and the conf's `spark.settings`) are set on the
    session; static ones belong to the server (it was started with them or without them),
    and a setting the session does not take is logged as a warning naming it.

    Unless `remote` names a session (`;session_id=...`), runs share one: a random id this
    user's runs of the same code and settings keep for the UTC day (`shared_session_id`), so
    the server's Python workers, already started and holding the job's code, serve the
    next run too (a new session costs each run 1-2 s to start its Python workers, and on
    Spark 4.2 a Python daemon process the server keeps until it stops). A shared session
    the server has closed (idle for longer than its timeout) is replaced by a new one.
    """
    from pyspark.sql import SparkSession

    def open_session(url: str) -> SparkSession:
        builder: Any
        if profile is None:
            builder = SparkSession.builder.remote(url)
        else:
            # The same channel, its requests timed for the profile (`session.profile`).
            from pyspark.sql.connect.client import DefaultChannelBuilder
            from pyspark.sql.connect.session import SparkSession as ConnectSession

            channel = DefaultChannelBuilder(url)
            channel.add_interceptor(connect_interceptor(profile))
            builder = ConnectSession.builder.channelBuilder(channel)
            # What pyspark's own builder marks a Connect process with (its `remote` path
            # does): functions and UDFs then take the Connect side.
            os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
        builder = builder.appName(app_name)
        for key, value in settings.items():
            builder = builder.config(key, value)
        return builder.create()

    where = redact_remote(remote)
    # A Connect run started by spark-submit (Airflow's SparkSubmitOperator, which always
    # passes a --master) inherits the MASTER spark-submit exports; pyspark refuses a remote
    # session beside it. The server is the master of this run: the local one is dropped.
    master = os.environ.pop("MASTER", None)
    if master:
        log.info("the run is on the Spark Connect server at %s: the master %s that "
                 "spark-submit gave is not used", where, master)
    shared = _SESSION_PARAM not in remote
    # Made (or found, their content read and digested) once: the session's id and the
    # artifacts shipped to it both name them.
    zips = [package_zip(name) for name in SHIPPED_PACKAGES]
    url = (_with_session(remote, shared_session_id(remote, settings, zips)) if shared
           else remote)
    spark = open_session(url)
    try:
        try:
            have = server_settings(spark)
        except Exception as exc:
            if not (shared and "SESSION_CLOSED" in str(exc)):
                raise
            log.info("the shared Spark Connect session was closed by the server; this run "
                     "opens one of its own")
            shared = False
            spark = open_session(_with_session(remote, str(uuid.uuid4())))
            have = server_settings(spark)
        check_server_settings(have, where)
        for warning in slow_settings(have, settings):
            log.warning("the Spark Connect server at %s will make the job slow: %s", where,
                        warning)
    except ConnectServerUnfit:
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise SparkUnreachable(f"cannot reach the Spark Connect server at {where}: "
                               f"{type(exc).__name__}: {first}") from exc
    ship_code(spark, have, zips)
    remember_settings(spark.client)  # type: ignore[attr-defined]
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
_shipped: set[str] = set()
_ship_lock = threading.Lock()


def release_sessions() -> None:
    """End this process's use of the Connect sessions it opened (at exit, or when an
    in-process caller's command is done: `provisioning.cli.run`)."""
    with _ship_lock:
        opened = list(_opened)
        _opened.clear()
    for spark in opened:
        release_session(spark)


def outlives_run(spark: SparkSession) -> bool:
    """Whether `spark` is a shared Spark Connect session, which stays open on the server
    for later runs (`connect_session`): state a run leaves in it (temp views, cached data)
    serves the next run. A classic session, and a Connect session of the run's own, end
    with the run's process (`release_session_on_close`)."""
    return is_connect(spark) and not getattr(spark, "release_session_on_close", True)


_SESSION_PARAM = ";session_id="


def _with_session(remote: str, session_id: str) -> str:
    base = remote if "/;" in remote or remote.endswith("/") else remote + "/"
    return f"{base}{_SESSION_PARAM}{session_id}"


# A session id this client keeps is forgotten after this long (one is made per UTC day).
_SESSION_ID_DAYS = 2


def shared_session_id(remote: str, settings: Mapping[str, str],
                      zips: Sequence[Path] | None = None) -> str:
    """The id of the session that this user's runs on this machine, of this code, with these
    Spark settings, on this UTC day, share on the server at `remote`: a random UUID (version
    4), made by the first such run and kept in the user's private folder
    (`artifacts_dir`). Whoever knows a session's id can join it on the server, so it is
    never derived from what another client can know. `zips`: SHIPPED_PACKAGES' zips
    (`package_zip`), when made already."""
    digest = hashlib.sha256()
    for part in (remote.split(";", 1)[0], dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
                 *(z.name for z in (zips or [package_zip(n) for n in SHIPPED_PACKAGES])),
                 *(f"{k}={v}" for k, v in sorted(settings.items()))):
        digest.update(part.encode())
        digest.update(b"\0")
    folder = artifacts_dir()
    kept = folder / f"session-{digest.hexdigest()[:32]}"
    made = str(uuid.uuid4())
    try:
        fd = os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        found = kept.read_text(encoding="ascii").strip()
        with contextlib.suppress(ValueError):
            if uuid.UUID(found).version == 4:
                return found
        kept.unlink()
        return shared_session_id(remote, settings, zips)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(made)
    _forget_old_session_ids(folder)
    return made


def _forget_old_session_ids(folder: Path) -> None:
    oldest = dt.datetime.now(dt.UTC).timestamp() - _SESSION_ID_DAYS * 86400
    for old in folder.glob("session-*"):
        with contextlib.suppress(OSError):
            if old.lstat().st_mtime < oldest:
                old.unlink()


def release_session(spark: SparkSession) -> None:
    """End this process's use of a Connect session: its checkpointed data is released,
    then the session itself (unless it is shared) and the channel."""
    try:
        gc.collect()  # checkpointed DataFrames left in reference cycles release theirs
        spark.stop()
    except Exception as exc:  # the process is ending: nothing left to tell but a warning
        log.warning("could not end the Spark Connect session: %s", type(exc).__name__)


def server_settings(spark: SparkSession) -> dict[str, str]:
    """Every setting the session has a value for: the server's own (what it was started
    with) and the session's (one request)."""
    return dict(spark.conf.getAll)


def check_server_settings(have: Mapping[str, str], where: str) -> None:
    """Raise ConnectServerUnfit unless the server's settings (`server_settings`) have Delta's
    extension and speculation off (both are static: only the server's start can set them)."""
    extensions = have.get("spark.sql.extensions", "") or ""
    speculation = (have.get("spark.speculation", "false") or "false").lower()
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


@dataclass(frozen=True)
class SlowSetting:
    """A static setting of a server that makes the job slow when `slow(value)` (the value
    the server has, or `default` when it was started without it)."""

    key: str
    default: str
    slow: Callable[[str], bool]
    why: str
    wanted: str


# Static settings that only the server's start sets and that cost the job much of a run
# when left as they are (BENCHMARKS.md: Spark settings); read at connect time.
SLOW_SERVER_SETTINGS = (
    SlowSetting("spark.python.worker.reuse", "true", lambda v: v.strip().lower() == "false",
                "every admin task starts a new Python worker, which imports pyarrow and the "
                "job's code again", "true"),
)


def slow_settings(have: Mapping[str, str], wanted: Mapping[str, str]) -> list[str]:
    """What in the session's settings (`server_settings`) will make the job slow: each of
    the `wanted` runtime settings the session does not have (the server did not let it set
    one), then each static setting of SLOW_SERVER_SETTINGS the server has a slow value
    of; one sentence each, naming the setting and what to start the server with."""
    found = []
    for key, value in wanted.items():
        now = have.get(key)
        if now is None or now.strip().lower() != value.strip().lower():
            found.append(f"the session could not set {key}={value} (it is "
                         f"{'unset' if now is None else now}: the server does not let a "
                         f"session change it); start the server with {key}={value}")
    for setting in SLOW_SERVER_SETTINGS:
        now = have.get(setting.key, setting.default)
        if setting.slow(now):
            found.append(f"{setting.key} is {now} ({setting.why}); start the server with "
                         f"{setting.key}={setting.wanted}")
    return found


def redact_remote(remote: str) -> str:
    """`remote` without the values of its parameters (a token never reaches a log)."""
    return re.sub(r";([^;=/]+)=[^;]*", r";\1=***", remote)




# The session setting that names the zips a session was given (`ship_code`): a shared
# session keeps its artifacts, and later runs of the same code need not send them again.
SHIPPED_KEY = "spark.topic_provisioning.shipped"


def ship_code(spark: SparkSession, have: Mapping[str, str] | None = None,
              zips: Sequence[Path] | None = None) -> None:
    """Add the packages the admin tasks import (SHIPPED_PACKAGES) to the Connect session as
    Python artifacts, once per session: the server's workers need only pyspark.

    have: the session's settings (`server_settings`), when read already: a session whose
      SHIPPED_KEY names these very zips (a shared one an earlier run gave them) is left as
      it is.
    zips: SHIPPED_PACKAGES' zips (`package_zip`), when made already."""
    session_id = str(getattr(spark, "session_id", id(spark)))
    zips = list(zips or [package_zip(name) for name in SHIPPED_PACKAGES])
    marker = ",".join(z.name for z in zips)
    with _ship_lock:
        if session_id in _shipped:
            return
        if (have or {}).get(SHIPPED_KEY) != marker:
            spark.addArtifacts(*(str(z) for z in zips), pyfile=True)
            spark.conf.set(SHIPPED_KEY, marker)
        _shipped.add(session_id)


# The folder of a user's zips and kept session ids, under the system's temp dir: per user,
# made 0700, and checked to be so before each use (`artifacts_dir`).
ARTIFACTS_DIR = "topic-provisioning-artifacts"
# The folder of this process's own, once the shared one was found not private.
_own_folder: list[Path] = []


def artifacts_dir() -> Path:
    """This user's private folder for the zips shipped to Spark (`package_zip`) and the
    session ids it keeps: `<temp dir>/topic-provisioning-artifacts-<uid>`, made with mode
    0700. The code in it runs on the executors and on a Connect server that holds every
    secret, so it is used only while it is a directory (not a link) this user owns that
    nobody else may read, write or enter; otherwise (another local user made it first) a
    new private folder of this process's own is used, and a warning names the other."""
    if _own_folder:
        return _own_folder[0]
    folder = Path(tempfile.gettempdir()) / f"{ARTIFACTS_DIR}-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    why = _not_private(folder)
    if why is None:
        return folder
    log.warning("not using %s for the code shipped to Spark: %s; this process uses a "
                "private folder of its own (remove that one to share zips between runs "
                "again)", folder, why)
    _own_folder.append(Path(tempfile.mkdtemp(prefix=f"{ARTIFACTS_DIR}-{os.getuid()}-")))
    return _own_folder[0]


def _not_private(folder: Path) -> str | None:
    """Why `folder` is not this user's private folder, or None."""
    found = folder.lstat()
    if not stat.S_ISDIR(found.st_mode):
        return "it is not a directory"
    if found.st_uid != os.getuid():
        return f"it is owned by uid {found.st_uid}"
    if found.st_mode & 0o077:
        return f"its mode {stat.S_IMODE(found.st_mode):04o} lets other users in"
    return None


def package_zip(name: str) -> Path:
    """A zip of the installed package `name` (every file but bytecode), named by its content
    and reused while the content stays the same, in this user's private folder
    (`artifacts_dir`). A zip found there under its name is reused only when its entries are
    the package's files (their digest checked); else it is made again. Found without
    importing the package: the zip of kafka-python is made here, yet only the kafka package
    imports it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ConnectServerUnfit(f"cannot ship package {name}: it is not installed here")
    files = _package_files(name, Path(next(iter(spec.submodule_search_locations))))
    digest = _digest(files)
    out_dir = artifacts_dir()
    out = out_dir / f"{name}-{digest[:16]}.zip"
    if out.exists():
        if _verified(out, name) == digest:
            return out
        log.warning("the zip %s does not hold what its name says: made again", out)
    tmp = out_dir / f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for relative, content in files:
            info = zipfile.ZipInfo(f"{name}/{relative}", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, content)
    tmp.replace(out)
    return out


def _digest(files: list[tuple[str, bytes]]) -> str:
    digest = hashlib.sha256()
    for relative, content in files:
        digest.update(relative.encode())
        digest.update(content)
    return digest.hexdigest()


# Zips this process checked: path -> (inode, size, mtime) when checked, and their digest.
_checked: dict[Path, tuple[tuple[int, int, int], str]] = {}


def _verified(path: Path, name: str) -> str | None:
    """The digest of what the zip at `path` holds of package `name` (as `_digest` of the
    package's files), or None when it is not a readable zip of regular entries."""
    try:
        found = path.lstat()
        if not stat.S_ISREG(found.st_mode):
            return None
        key = (found.st_ino, found.st_size, found.st_mtime_ns)
        if path in _checked and _checked[path][0] == key:
            return _checked[path][1]
        prefix = f"{name}/"
        with zipfile.ZipFile(path) as z:
            held = [i for i in z.infolist() if not i.is_dir()]
            if any(not i.filename.startswith(prefix) for i in held):
                return None
            entries = sorted((i.filename[len(prefix):], z.read(i)) for i in held)
    except (OSError, zipfile.BadZipFile):
        return None
    digest = _digest(entries)
    _checked[path] = (key, digest)
    return digest


def _package_files(name: str, root: Path) -> list[tuple[str, bytes]]:
    """Every file of the package at `root` but bytecode, as (its path under the package,
    its bytes), sorted: from the package's directory, or from the zip it was imported from
    (`spark-submit --py-files provisioning.zip`, as Airflow's SparkSubmitOperator runs it:
    `root` is then a path inside that zip)."""
    def kept(parts: tuple[str, ...]) -> bool:
        return "__pycache__" not in parts and not parts[-1].endswith(".pyc")

    if root.is_dir():
        return sorted((f.relative_to(root).as_posix(), f.read_bytes()) for f in root.rglob("*")
                      if f.is_file() and kept(f.parts))
    archive = next((p for p in root.parents if p.is_file()), None)
    if archive is None or not zipfile.is_zipfile(archive):
        raise ConnectServerUnfit(f"cannot ship package {name}: {root} is neither a directory "
                                 "nor inside a zip")
    inner = root.relative_to(archive).as_posix() + "/"
    with zipfile.ZipFile(archive) as z:
        return sorted((entry[len(inner):], z.read(entry)) for entry in z.namelist()
                      if entry.startswith(inner) and not entry.endswith("/")
                      and kept(tuple(entry.split("/"))))
