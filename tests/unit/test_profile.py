"""`--profile`: what a run's profile counts in each step, the Spark jobs it reads from a
classic driver's event log, the Kafka requests an admin client times and an admin task
hands back with its rows, and the lines it prints (pure: no Spark, no broker)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from provisioning.kafka import timing
from provisioning.run.executors import TASK_TIME, _with_requests
from provisioning.session import RUN_TAG, profile
from provisioning.session.profile import COMMIT, REQUEST, SPARK, Profile, Span
from provisioning.views.profile import render_profile


def _profile_at(t0: float) -> Profile:
    p = Profile(started=t0)
    p.mark("start", t0 + 1.0)
    p.mark("snapshot", t0 + 3.0)
    p.mark("summary", t0 + 3.5)
    return p


def test_each_thing_is_counted_in_the_step_it_started_in_and_in_the_totals() -> None:
    t0 = 1_000.0
    p = _profile_at(t0)
    p.add(Span(SPARK, "job", t0 + 0.5, 0.25))
    p.add(Span(SPARK, "job", t0 + 1.5, 2.0))   # runs past its step's end: still the snapshot's
    p.add(Span(COMMIT, "topic_audit", t0 + 1.2, 0.8))
    p.add(Span(COMMIT, "topic_audit", t0 + 3.2, 0.5))
    p.add(Span(COMMIT, "provision_runs", t0 + 3.4, 0.3))
    p.add(Span(REQUEST, "Metadata", t0 + 2.0, 0.1, count=3))
    p.add(Span(REQUEST, "DescribeConfigs", t0 + 2.0, 0.2, count=2))
    p.add(Span(SPARK, "job", t0 + 9.0, 1.0))   # after the last mark: the last step's

    report = p.report()

    assert [(s["step"], s["seconds"]) for s in report["steps"]] == [
        ("start", 1.0), ("snapshot", 2.0), ("summary", 0.5)]
    assert report["steps"][0] == {
        "step": "start", "seconds": 1.0,
        "spark": {"count": 1, "seconds": 0.25, "by_kind": [
            {"name": "job", "count": 1, "seconds": 0.25}]},
        "commits": [], "requests": [], "server_requests": {"count": 0, "by_kind": []},
        "tasks": {"count": 0, "seconds": 0}}
    assert report["steps"][1]["commits"] == [
        {"name": "topic_audit", "count": 1, "seconds": 0.8}]
    assert report["steps"][1]["requests"] == [
        {"name": "DescribeConfigs", "count": 2, "seconds": 0.2},
        {"name": "Metadata", "count": 3, "seconds": 0.1}]
    assert report["steps"][2]["spark"]["count"] == 1
    assert report["steps"][2]["commits"] == [
        {"name": "provision_runs", "count": 1, "seconds": 0.3},
        {"name": "topic_audit", "count": 1, "seconds": 0.5}]
    assert report["totals"] == {
        "seconds": 3.5,
        "spark": {"count": 3, "seconds": 3.25, "by_kind": [
            {"name": "job", "count": 3, "seconds": 3.25}]},
        "commits": [{"name": "provision_runs", "count": 1, "seconds": 0.3},
                    {"name": "topic_audit", "count": 2, "seconds": 1.3}],
        "requests": [{"name": "DescribeConfigs", "count": 2, "seconds": 0.2},
                     {"name": "Metadata", "count": 3, "seconds": 0.1}],
        "server_requests": {"count": 0, "by_kind": []},
        "tasks": {"count": 0, "seconds": 0}}


def test_the_module_functions_feed_only_an_installed_profile() -> None:
    profile.commit("topic_audit", 1.0, 0.5)  # none installed: nothing happens
    assert profile.active() is None
    p = Profile(started=0.0)
    with profile.installed(p):
        assert profile.active() is p
        profile.commit("topic_audit", 1.0, 0.5)
        profile.requests("CreateTopics", 2, 0.4, start=1.5)
        profile.task(0.75)
        profile.mark("apply")
    assert profile.active() is None
    assert p.report()["totals"]["commits"] == [
        {"name": "topic_audit", "count": 1, "seconds": 0.5}]
    assert p.report()["totals"]["requests"] == [
        {"name": "CreateTopics", "count": 2, "seconds": 0.4}]
    assert p.report()["totals"]["tasks"] == {"count": 1, "seconds": 0.75}


def _event(kind: str, **fields: Any) -> str:
    return json.dumps({"Event": f"SparkListenerJob{kind}", **fields},
                      separators=(",", ":"))


def test_the_jobs_of_a_classic_event_log_leave_the_profiles_own_out(tmp_path: Path) -> None:
    (tmp_path / "local-1.inprogress").write_text("\n".join([
        '{"Event":"SparkListenerApplicationStart","App Name":"x"}',
        _event("Start", **{"Job ID": 0, "Submission Time": 10_000,
                           "Properties": {"spark.job.tags": "apply: plan"}}),
        _event("End", **{"Job ID": 0, "Completion Time": 10_500}),
        _event("Start", **{"Job ID": 1, "Submission Time": 11_000, "Properties": {
            "spark.job.tags": f"apply: snapshot,spark-session-x-thread-y-{profile.OWN_TAG}"}}),
        _event("End", **{"Job ID": 1, "Completion Time": 11_100}),
        _event("Start", **{"Job ID": 2, "Submission Time": 12_000, "Properties": {}}),
        _event("End", **{"Job ID": 2, "Completion Time": 12_250}),
    ]) + "\n")

    assert profile.event_log_jobs(tmp_path, wait=0) == [
        Span(SPARK, "job: apply: plan", 10.0, 0.5), Span(SPARK, "job", 12.0, 0.25)]


def test_a_job_not_yet_logged_as_ended_is_waited_for(tmp_path: Path) -> None:
    log = tmp_path / "app"
    log.write_text(_event("Start", **{"Job ID": 7, "Submission Time": 1_000,
                                      "Properties": {}}) + "\n")

    def end_later() -> None:
        with log.open("a") as f:
            f.write(_event("End", **{"Job ID": 7, "Completion Time": 3_000}) + "\n")

    timer = threading.Timer(0.3, end_later)
    timer.start()
    try:
        assert profile.event_log_jobs(tmp_path, wait=5) == [Span(SPARK, "job", 1.0, 2.0)]
    finally:
        timer.join()


class _Future:
    def __init__(self) -> None:
        self.callbacks: list[Any] = []

    def add_both(self, fn: Any) -> None:
        self.callbacks.append(fn)

    def answer(self) -> None:
        for fn in self.callbacks:
            fn("answer")


class _Manager:
    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.futures: list[_Future] = []

    def send(self, request: Any, node_id: int | None = None) -> _Future:
        self.sent.append((request, node_id))
        future = _Future()
        self.futures.append(future)
        return future


class _Client:
    def __init__(self) -> None:
        self._manager = _Manager()


class CreateTopicsRequest:
    pass


class DescribeConfigsRequest:
    pass


def test_a_timed_client_hands_each_request_to_the_recorder_once_answered() -> None:
    client = _Client()
    tally = timing.Tally()
    timing.timed(client, tally)

    future = client._manager.send(CreateTopicsRequest(), node_id=1)
    client._manager.send(DescribeConfigsRequest())
    assert client._manager.sent[0][1] == 1
    assert tally.rows() == []  # nothing is counted before its answer
    future.answer()
    client._manager.futures[1].answer()
    client._manager.send(CreateTopicsRequest()).answer()

    assert [(api, n) for api, n, _ in tally.rows()] == [("CreateTopics", 2),
                                                          ("DescribeConfigs", 1)]


def test_an_admin_task_hands_back_its_requests_on_its_last_row() -> None:
    def rows() -> Any:
        to = timing.recorder()
        assert to is not None  # the task's tally records while its rows are made
        to("Metadata", 0.0, 0.5)
        yield ("local", "a")
        to("CreateTopics", 0.0, 0.25)
        to("CreateTopics", 0.0, 0.25)
        yield ("local", "b")

    first, last = list(_with_requests(rows()))
    assert first == ("local", "a", None)
    assert last[:2] == ("local", "b")
    assert last[2][:2] == [{"api": "CreateTopics", "count": 2, "seconds": 0.5},
                           {"api": "Metadata", "count": 1, "seconds": 0.5}]
    assert [(e["api"], e["count"]) for e in last[2][2:]] == [(TASK_TIME, 1)]
    assert 0 <= last[2][2]["seconds"] < 5
    assert timing.recorder() is None
    assert list(_with_requests(iter(()))) == []


def test_the_printed_profile_has_a_line_per_step_and_the_totals() -> None:
    t0 = 1_000.0
    p = _profile_at(t0)
    p.add(Span(COMMIT, "topic_audit", t0 + 1.2, 0.8))
    p.add(Span(REQUEST, "Metadata", t0 + 2.0, 0.1, count=3))
    p.spark_measure = "Spark jobs (the driver's event log)"

    lines = render_profile(p.report())

    assert lines == [
        "profile (spark: Spark jobs (the driver's event log); a step holds what started in "
        "it; overlapping work adds up to more than the wall time):",
        "  start     1.00s  spark  0  0.00s  commits -  kafka -",
        "  snapshot  2.00s  spark  0  0.00s  commits topic_audit 1x 0.80s  "
        "kafka Metadata 3x 0.10s",
        "  summary   0.50s  spark  0  0.00s  commits -  kafka -",
        "  total     3.50s  spark  0  0.00s  commits topic_audit 1x 0.80s  "
        "kafka Metadata 3x 0.10s",
    ]


class _Details:
    def __init__(self, method: str) -> None:
        self.method = f"/spark.connect.SparkConnectService/{method}"


class _Request:
    def __init__(self, operation_id: str = "", tags: tuple[str, ...] = ()) -> None:
        self.operation_id = operation_id
        self.tags = list(tags)


class _Answer:
    def __init__(self, fails: bool = False) -> None:
        self.fails = fails

    def result(self) -> str:
        if self.fails:
            raise RuntimeError("the server said no")
        return "answer"


def test_connect_operations_last_from_their_request_to_their_last_answer() -> None:
    clock = iter(range(100, 200))
    p = Profile(started=0.0)
    interceptor = profile.ConnectCalls(p).interceptor()
    real_time = profile.time.time
    profile.time.time = lambda: float(next(clock))  # type: ignore[assignment]
    try:
        def stream(details: Any, request: Any) -> Any:
            return iter(["schema", "rows", "complete", "never read"])

        answers = interceptor.intercept_unary_stream(
            stream, _Details("ExecutePlan"),
            _Request("op-1", (f"{RUN_TAG}r1", "apply: plan")))          # starts at 100
        assert [next(answers), next(answers), next(answers)] == [
            "schema", "rows", "complete"]                               # last answer at 103
        more = interceptor.intercept_unary_stream(
            lambda d, r: iter(["late"]), _Details("ReattachExecute"), _Request("op-1"))
        assert list(more) == ["late"]                                   # 105, then its end 106
        own = interceptor.intercept_unary_stream(
            stream, _Details("ExecutePlan"),
            _Request("op-2", ("x", f"spark-session-1-{profile.OWN_TAG}")))
        assert next(own) == "schema"
        interceptor.intercept_unary_unary(lambda d, r: _Answer(), _Details("AnalyzePlan"),
                                          _Request())                   # 109 to 110
        failed = interceptor.intercept_unary_unary(lambda d, r: _Answer(fails=True),
                                                   _Details("Config"), _Request())
        untimed = interceptor.intercept_unary_unary(lambda d, r: "artifacts",
                                                    _Details("AddArtifacts"), _Request())
    finally:
        profile.time.time = real_time  # type: ignore[assignment]

    assert untimed == "artifacts"
    assert isinstance(failed, _Answer)  # the caller gets the failed answer, and its error
    spans = sorted(p.report()["totals"]["spark"]["by_kind"], key=lambda e: e["name"])
    assert spans == [{"name": "AnalyzePlan", "count": 1, "seconds": 1.0},
                     {"name": "Config", "count": 1, "seconds": 1.0},
                     {"name": "ExecutePlan: apply: plan", "count": 1, "seconds": 6.0}]


def _named_counts(entries: list[dict[str, Any]]) -> dict[str, int]:
    return {e["name"]: e["count"] for e in entries}


def test_every_request_to_the_server_is_counted_by_its_method_but_the_profiles_own() -> None:
    p = Profile(started=0.0)
    p.mark("snapshot", 1e12)
    interceptor = profile.ConnectCalls(p).interceptor()
    own = ("x", f"spark-session-1-{profile.OWN_TAG}")

    def stream(details: Any, request: Any) -> Any:
        return iter(["complete"])

    list(interceptor.intercept_unary_stream(stream, _Details("ExecutePlan"),
                                            _Request("op-1", ("apply: plan",))))
    interceptor.intercept_unary_unary(lambda d, r: "released", _Details("ReleaseExecute"),
                                      _Request("op-1"))
    list(interceptor.intercept_unary_stream(stream, _Details("ReattachExecute"),
                                            _Request("op-1")))
    list(interceptor.intercept_unary_stream(stream, _Details("ExecutePlan"),
                                            _Request("op-2")))
    interceptor.intercept_unary_unary(lambda d, r: _Answer(), _Details("AnalyzePlan"),
                                      _Request())
    interceptor.intercept_unary_unary(lambda d, r: _Answer(), _Details("Config"), _Request())
    interceptor.intercept_unary_unary(lambda d, r: "statuses", _Details("ArtifactStatus"),
                                      _Request())
    # A checkpointed DataFrame's server copy released as it is collected: a unary ExecutePlan.
    interceptor.intercept_unary_unary(lambda d, r: "removed", _Details("ExecutePlan"),
                                      _Request(tags=("apply: plan",)))
    added = interceptor.intercept_stream_unary(lambda d, rs: list(rs),
                                               _Details("AddArtifacts"), iter(["a", "b"]))
    # The profile's own operation and the requests that continue and release it: not counted.
    list(interceptor.intercept_unary_stream(stream, _Details("ExecutePlan"),
                                            _Request("op-own", own)))
    interceptor.intercept_unary_unary(lambda d, r: "released", _Details("ReleaseExecute"),
                                      _Request("op-own"))

    assert added == ["a", "b"]  # the stream of requests reaches the server whole
    report = p.report()
    server = {"count": 9, "by_kind": [
        {"name": "AddArtifacts", "count": 1}, {"name": "AnalyzePlan", "count": 1},
        {"name": "ArtifactStatus", "count": 1}, {"name": "Config", "count": 1},
        {"name": "ExecutePlan", "count": 2},
        {"name": "ExecutePlan (release cached data)", "count": 1},
        {"name": "ReattachExecute", "count": 1}, {"name": "ReleaseExecute", "count": 1}]}
    assert report["totals"]["server_requests"] == server
    assert report["steps"][0]["server_requests"] == server
    assert render_profile(report)[-1].endswith(
        "  server requests 9 (AddArtifacts 1, AnalyzePlan 1, ArtifactStatus 1, Config 1, "
        "ExecutePlan 2, ExecutePlan (release cached data) 1, ReattachExecute 1, "
        "ReleaseExecute 1)")
    # Only the operations are Spark work: the release is not an action of the run.
    assert _named_counts(report["totals"]["spark"]["by_kind"]) == {
        "AnalyzePlan": 1, "Config": 1, "ExecutePlan": 1, "ExecutePlan: apply: plan": 1}


def test_spark_work_is_named_by_its_job_labels_but_the_run_tag() -> None:
    session = "spark-session-36e08a1d-c2f6-49b5-b6f8-d42305603d62"
    thread = f"{session}-thread-a64a48f6-6211-40d3-8eec-a31897aa5dbe"
    # A classic job's tags: the session's operation tags as Spark passes them on.
    assert profile.labelled("job", [
        f"{session}-execution-root-id-1", f"{thread}-{RUN_TAG}r1",
        f"{thread}-apply: read manifests", session]) == "job: apply: read manifests"
    # A Connect request's: the tags themselves.
    assert profile.labelled("ExecutePlan", [
        f"{RUN_TAG}r1", "apply: plan; policies", "apply: snapshot live metadata", ""]) == (
        "ExecutePlan: apply: plan; policies; apply: snapshot live metadata")
    assert profile.labelled("AnalyzePlan", []) == "AnalyzePlan"
