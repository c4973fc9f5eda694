"""Where a run's time goes (`--profile`): per step, its wall time, the Spark work it ran, the
Delta commits it made and the Kafka requests it sent, with the run's totals.

A `Profile` is installed for one command (`installed`) and fed from where each thing
happens, by time: the engine marks the end of each step (`mark`, with `run.engine.Steps`),
the Delta package reports each commit (`commit`), the run package reports the Kafka requests its
admin tasks timed on the executors (`requests`), and the Kafka package's own clock on the
driver reports the requests it sends there. Something is counted in the step during which
it started (executors' requests: the step that received their answers).

The Spark work is measured where each mode can see it, without `sparkContext` or py4j:

- classic Spark: the Spark jobs themselves, from the driver's event log (the session is
  built with `spark.eventLog.enabled` and a directory of the profile's own: `classic_settings`),
  each job's submission and completion time;
- Spark Connect: the client's requests to the server (`ConnectCalls`, a gRPC interceptor
  on the session's channel): each action or command the run makes (ExecutePlan, from its
  request to the end of its answer, reattached streams included), each schema or plan
  question (AnalyzePlan) and each settings request (Config). A server runs one action as
  zero or more Spark jobs, which its client cannot see. Every request the client sends the
  server, of any method (ReleaseExecute, AddArtifacts, ...), is counted by its method too.

The profile's own queries (the executors' request timings collected once per admin job)
carry `OWN_TAG` and are not counted. Times of things that overlap (commits on helper
threads, a step's Spark jobs) add up to more than the wall time.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provisioning import retry
from provisioning.session.tags import APPEND_TAG, RUN_TAG

log = logging.getLogger(__name__)

SPARK, COMMIT, REQUEST, TASK = "spark", "commit", "request", "task"
# One request to the Spark Connect server (a round trip), named by its method.
SERVER = "server"
RELEASE_CACHED = "ExecutePlan (release cached data)"  # see ConnectCalls.interceptor
# The tag of the profile's own Spark operations: left out of the counts.
OWN_TAG = "topic-provisioning profile"
# The step a profile's last mark ends: writing the runs row, giving the lock back.
LAST_STEP = "record the run"


@dataclass(frozen=True)
class Span:
    """Something a run did: a Spark job or client request (`SPARK`), a Delta commit
    (`COMMIT`) or Kafka requests (`REQUEST`, `count` of them), named by the API, table or
    request (`name`), started at `start` (epoch seconds), taking `seconds` in all."""

    what: str
    name: str
    start: float
    seconds: float
    count: int = 1


class Profile:
    """One command's profile (see the module docstring)."""

    def __init__(self, started: float | None = None) -> None:
        # From the process's start where it is known: the first step includes Python's
        # imports and the session's start.
        self.started = started or process_started() or time.time()
        self._marks: list[tuple[str, float]] = []
        self._spans: list[Span] = []
        self._lock = threading.Lock()
        # Called once when the report is made: Spans found only then (the event log).
        self._late: list[Callable[[], list[Span]]] = []
        # What its Spark counts are, set by the session it measures.
        self.spark_measure = "nothing (the command opened no Spark session)"

    # -- feeding it --------------------------------------------------------------

    def mark(self, name: str, at: float | None = None) -> None:
        """The step `name` ends now (it began where the last one ended)."""
        with self._lock:
            self._marks.append((name, time.time() if at is None else at))

    def add(self, span: Span) -> None:
        with self._lock:
            self._spans.append(span)

    def later(self, source: Callable[[], list[Span]]) -> None:
        """`source` gives Spans when the report is made."""
        self._late.append(source)

    # -- the report --------------------------------------------------------------

    def report(self) -> dict[str, Any]:
        """The profile as plain values: `steps` (each: name, seconds, spark, commits,
        requests, server requests, admin tasks) and `totals`, with what `spark` measures in
        this mode."""
        late: list[Span] = []
        for source in self._late:
            try:
                late += source()
            except Exception as exc:  # the run is done; say what is missing instead
                log.warning("the profile could not read its Spark jobs: %s: %s",
                            type(exc).__name__, exc)
        with self._lock:
            marks = list(self._marks)
            spans = [*self._spans, *late]
        steps: list[dict[str, Any]] = []
        begun = self.started
        bounds: list[tuple[str, float, float]] = []
        for name, at in marks:
            bounds.append((name, begun, at))
            begun = at
        if not bounds:
            bounds.append((LAST_STEP, self.started, time.time()))
        buckets: list[list[Span]] = [[] for _ in bounds]
        for span in spans:
            index = next((i for i, (_, _, end) in enumerate(bounds) if span.start < end),
                         len(bounds) - 1)
            buckets[index].append(span)
        for (name, start, end), found in zip(bounds, buckets, strict=True):
            steps.append({"step": name, "seconds": round(end - start, 3), **_summed(found)})
        return {"spark_measures": self.spark_measure,
                "steps": steps,
                "totals": {"seconds": round(bounds[-1][2] - self.started, 3),
                           **_summed(spans)}}


def _summed(spans: list[Span]) -> dict[str, Any]:
    """Counts and seconds of `spans`: Spark work, commits by table, requests by API."""
    def by_name(what: str) -> list[dict[str, Any]]:
        found: dict[str, list[float]] = {}
        for s in spans:
            if s.what == what:
                entry = found.setdefault(s.name, [0, 0.0])
                entry[0] += s.count
                entry[1] += s.seconds
        return [{"name": n, "count": int(c), "seconds": round(t, 3)}
                for n, (c, t) in sorted(found.items())]

    spark = [s for s in spans if s.what == SPARK]
    tasks = [s for s in spans if s.what == TASK]
    return {"spark": {"count": sum(s.count for s in spark),
                      "seconds": round(sum(s.seconds for s in spark), 3),
                      "by_kind": by_name(SPARK)},
            "commits": by_name(COMMIT),
            "requests": by_name(REQUEST),
            "server_requests": {"count": sum(s.count for s in spans if s.what == SERVER),
                                "by_kind": [{"name": e["name"], "count": e["count"]}
                                            for e in by_name(SERVER)]},
            "tasks": {"count": len(tasks), "seconds": round(sum(s.seconds for s in tasks), 3)}}


# -- the command's profile ------------------------------------------------------------

_active: list[Profile] = []


def active() -> Profile | None:
    """The profile of the command running in this process, or None (no `--profile`)."""
    return _active[-1] if _active else None


@contextmanager
def installed(profile: Profile | None) -> Iterator[Profile | None]:
    """`profile` is the active one inside the block (nothing happens for None)."""
    if profile is None:
        yield None
        return
    _active.append(profile)
    try:
        yield profile
    finally:
        _active.remove(profile)


def mark(name: str) -> None:
    """The active profile's step `name` ends now (nothing without one)."""
    profile = active()
    if profile is not None:
        profile.mark(name)


def commit(table: str, start: float, seconds: float) -> None:
    """A Delta commit to `table`, for the active profile (nothing without one)."""
    profile = active()
    if profile is not None:
        profile.add(Span(COMMIT, table, start, seconds))


def requests(api: str, count: int, seconds: float, start: float | None = None) -> None:
    """`count` Kafka requests of `api`, taking `seconds` in all, for the active profile."""
    profile = active()
    if profile is not None:
        profile.add(Span(REQUEST, api, time.time() if start is None else start, seconds,
                         count))


def task(seconds: float) -> None:
    """One admin task (the Kafka package's work for one cluster, on an executor) that took
    `seconds`, for the active profile: the tasks' time over their step's time is how many
    clusters were served at once."""
    profile = active()
    if profile is not None:
        profile.add(Span(TASK, "admin task", time.time(), seconds))


def profiled() -> bool:
    return bool(_active)


# -- classic Spark: the driver's event log ----------------------------------------------

# Event logs of profiled classic runs, each in a directory of its own; a run removes the
# ones older than this (the driver's JVM writes its log until it stops, after the profile
# is done with it).
EVENT_LOGS = Path(tempfile.gettempdir()) / "topic-provisioning-profiles"
_KEPT_SECONDS = 3600


def classic_settings(profile: Profile) -> dict[str, str]:
    """Static settings of a classic session that log its Spark jobs to a directory of the
    profile's own (read when the report is made; removed by a later profiled run)."""
    EVENT_LOGS.mkdir(parents=True, exist_ok=True)
    for old in EVENT_LOGS.iterdir():
        with contextlib.suppress(OSError):
            if time.time() - old.stat().st_mtime > _KEPT_SECONDS:
                shutil.rmtree(old, ignore_errors=True)
    where = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=EVENT_LOGS))
    profile.spark_measure = "Spark jobs (the driver's event log)"
    profile.later(lambda: event_log_jobs(where))
    return {"spark.eventLog.enabled": "true",
            "spark.eventLog.dir": where.as_uri(),
            "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false"}


_JOB_START = '{"Event":"SparkListenerJobStart"'
_JOB_END = '{"Event":"SparkListenerJobEnd"'
# How a classic session's operation tag reaches its jobs' tags, and the tags Spark adds
# itself (the session's, the execution's).
_SESSION_TAG = re.compile(r"^spark-session-[0-9a-f-]{36}-thread-[0-9a-f-]{36}-(.+)$")
_SPARK_TAG = re.compile(r"^spark-session-[0-9a-f-]{36}(-execution-root-id-\d+)?$")


def _label(tag: str) -> str:
    found = _SESSION_TAG.match(tag)
    if found:
        return found.group(1)
    return "" if _SPARK_TAG.match(tag) else tag


def labelled(kind: str, tags: Iterable[str]) -> str:
    """`kind` with the job labels among an operation's `tags` (`session.job_label`; the
    run's own tag and an append's left out): what a profile names the Spark work by."""
    labels = sorted({_label(str(t)) for t in tags} - {""})
    shown = [t for t in labels if not t.startswith((RUN_TAG, APPEND_TAG))]
    return f"{kind}: {'; '.join(shown)}" if shown else kind


def event_log_jobs(where: Path, wait: float = 3.0) -> list[Span]:
    """The Spark jobs of the event logs in `where`, but the profile's own; waits up to
    `wait` seconds for the jobs already started to be logged as ended (the listener bus
    logs them a moment after they end; `retry.STEADY`)."""

    def read() -> tuple[dict[int, tuple[float, bool, str]], dict[int, float]]:
        started: dict[int, tuple[float, bool, str]] = {}
        ended: dict[int, float] = {}
        # One file, or a directory of rolled files (Spark's rolling event logs).
        for path in sorted(p for p in where.rglob("*") if p.is_file()):
            with path.open(encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith(_JOB_START):
                        event = json.loads(line)
                        tags = str((event.get("Properties") or {}).get("spark.job.tags", ""))
                        own = any(t.endswith(OWN_TAG) for t in tags.split(","))
                        started[int(event["Job ID"])] = (event["Submission Time"] / 1000, own,
                                                         labelled("job", tags.split(",")))
                    elif line.startswith(_JOB_END):
                        event = json.loads(line)
                        ended[int(event["Job ID"])] = event["Completion Time"] / 1000
        return started, ended

    started: dict[int, tuple[float, bool, str]] = {}
    ended: dict[int, float] = {}
    for logged in retry.poll(retry.STEADY, read, retry.deadline_in(wait)):
        started, ended = logged.value
        if set(started) <= set(ended):
            break
    return [Span(SPARK, name, start, max(0.0, ended.get(job, start) - start))
            for job, (start, own, name) in sorted(started.items()) if not own]


# -- Spark Connect: the client's requests ---------------------------------------------

def connect_interceptor(profile: Profile) -> Any:
    """A gRPC client interceptor that gives `profile` the session's requests to the server
    (`ConnectCalls`)."""
    return ConnectCalls(profile).interceptor()


class ConnectCalls:
    """A Spark Connect client's requests as Spans: every ExecutePlan operation (one action or
    command of the run) from its request to its last answer (a stream the client
    reattaches continues the operation), every AnalyzePlan and Config request, and every
    request counted by its method (`SERVER`); the profile's own operations left out."""

    _OPERATIONS = ("ExecutePlan", "ReattachExecute")
    _COUNTED = ("AnalyzePlan", "Config")

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self._operations: dict[str, list[float]] = {}
        self._names: dict[str, str] = {}
        self._own: set[str] = set()
        self._calls = itertools.count()
        self._lock = threading.Lock()
        profile.later(self.spans)
        profile.spark_measure = ("client requests to the Spark Connect server: ExecutePlan "
                                 "(an action or command), AnalyzePlan, Config")

    def spans(self) -> list[Span]:
        with self._lock:
            return [Span(SPARK, self._names.get(op, "ExecutePlan"), start,
                         max(0.0, end - start))
                    for op, (start, end) in self._operations.items() if op not in self._own]

    def _ended(self, operation: str, at: float) -> None:
        with self._lock:
            times = self._operations.get(operation)
            if times is not None:
                times[1] = max(times[1], at)

    def sent(self, method: str, request: Any, at: float | None = None) -> None:
        """One request of `method` at `at`, unless of the profile's own operations."""
        tags = [str(t) for t in getattr(request, "tags", ()) or ()]
        operation = str(getattr(request, "operation_id", "") or "")
        with self._lock:
            if any(t.endswith(OWN_TAG) for t in tags):
                if operation:
                    self._own.add(operation)
                return
            if operation and operation in self._own:
                return
        self.profile.add(Span(SERVER, method, time.time() if at is None else at, 0.0))

    def _stream(self, method: str, request: Any, answers: Any) -> Any:
        # Without an id (a client that does not reattach) each request is an operation.
        operation = str(getattr(request, "operation_id", "") or "") or f"c{next(self._calls)}"
        now = time.time()
        self.sent(method, request, now)
        with self._lock:
            if method == "ExecutePlan" or operation not in self._operations:
                self._operations.setdefault(operation, [now, now])
            tags = [str(t) for t in getattr(request, "tags", ()) or ()]
            if method == "ExecutePlan":
                self._names[operation] = labelled("ExecutePlan", tags)
            if any(t.endswith(OWN_TAG) for t in tags):
                self._own.add(operation)
        return _TimedStream(answers, lambda: self._ended(operation, time.time()))

    def interceptor(self) -> Any:
        import grpc

        calls = self

        class Interceptor(grpc.UnaryStreamClientInterceptor,
                          grpc.UnaryUnaryClientInterceptor,
                          grpc.StreamUnaryClientInterceptor):
            def intercept_unary_stream(self, continuation: Any, details: Any,
                                       request: Any) -> Any:
                method = str(details.method).rsplit("/", 1)[-1]
                answers = continuation(details, request)
                if method in ConnectCalls._OPERATIONS:
                    return calls._stream(method, request, answers)
                calls.sent(method, request)
                return answers

            def intercept_unary_unary(self, continuation: Any, details: Any,
                                      request: Any) -> Any:
                method = str(details.method).rsplit("/", 1)[-1]
                if method == "ExecutePlan":
                    # pyspark releases a collected DataFrame's checkpointed data on the
                    # server by a unary ExecutePlan (RemoveCachedRemoteRelation).
                    method = RELEASE_CACHED
                if method not in ConnectCalls._COUNTED:
                    calls.sent(method, request)
                    return continuation(details, request)
                start = time.time()
                calls.sent(method, request, start)
                answer = continuation(details, request)
                # The caller asks the answer for its error.
                with contextlib.suppress(Exception):
                    answer.result()
                calls.profile.add(Span(SPARK, labelled(method, getattr(request, "tags", ())),
                                       start, time.time() - start))
                return answer

            def intercept_stream_unary(self, continuation: Any, details: Any,
                                       requests: Any) -> Any:  # AddArtifacts
                calls.sent(str(details.method).rsplit("/", 1)[-1], None)
                return continuation(details, requests)

        return Interceptor()


class _TimedStream:
    """A gRPC answer stream that calls `answered` with each answer it gives, and when it
    ends or fails (a client stops reading once the operation says it is complete, so the
    last answer is its end); everything else is the stream's own."""

    def __init__(self, answers: Any, answered: Callable[[], None]) -> None:
        self._answers = answers
        self._answered = answered

    def __iter__(self) -> _TimedStream:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._answers)
        finally:
            self._answered()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._answers, name)


def process_started() -> float | None:
    """When this process started (epoch seconds), where the system tells (Linux)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(float(line.split()[1]) for line in
                    Path("/proc/stat").read_text().splitlines() if line.startswith("btime"))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None

