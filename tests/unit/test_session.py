"""The session module's helpers: job labels and helper threads (in both modes through the
same APIs), the code shipped to a Connect server, and remote addresses kept out of logs."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import threading
import zipfile
from pathlib import Path
from typing import Any

import pytest

from provisioning.errors import ConnectServerUnfit
from provisioning.session import (
    check_server_settings,
    helper,
    job_label,
    package_zip,
    redact_remote,
    slow_settings,
)
from provisioning.session.remembered import remember_settings

REPO = Path(__file__).resolve().parents[2]


def test_a_label_tags_the_operations_of_its_block_and_is_removed_after(spark: Any) -> None:
    before = spark.getTags()
    with job_label(spark, "apply: validate, alters"):
        assert spark.getTags() == before | {"apply: validate; alters"}
        with job_label(spark, "apply: validate, alters"):
            pass
        assert "apply: validate; alters" in spark.getTags()
    assert spark.getTags() == before


def test_a_helper_thread_carries_the_callers_tags(spark: Any) -> None:
    seen: dict[str, Any] = {}
    with job_label(spark, "run r1"):
        task = helper(spark, "helper", lambda: seen.update(
            tags=spark.getTags(), thread=threading.current_thread().name))
        task.result()
    assert seen == {"tags": {"run r1"}, "thread": "helper"}


def test_a_helper_threads_error_is_raised_every_time_it_is_asked_for() -> None:
    def boom() -> None:
        raise RuntimeError("no")

    task = helper(None, "boom", boom)
    assert str(task.exception()) == "no"
    for _ in range(2):  # a second wait raises it again: no error is ever lost
        with pytest.raises(RuntimeError, match="no"):
            task.result()
    assert helper(None, "fine", lambda: 7).result() == 7


def test_the_shipped_package_zip_holds_the_package_files_and_is_named_by_them() -> None:
    path = package_zip("schemas")
    with zipfile.ZipFile(path) as z:
        names = sorted(z.namelist())
    assert names == sorted(f"schemas/{p.relative_to(REPO / 'schemas').as_posix()}"
                           for p in (REPO / "schemas").rglob("*")
                           if p.is_file() and "__pycache__" not in p.parts)
    assert package_zip("schemas") == path  # same content, same zip
    with pytest.raises(ConnectServerUnfit, match="cannot ship package no_such_pkg"):
        package_zip("no_such_pkg")


def test_a_package_imported_from_a_zip_is_shipped_whole(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """spark-submit --py-files puts the job's zip on the path (Airflow's SparkSubmitOperator):
    the shipped zip holds the same files as when the package is a directory."""
    archive = tmp_path / "deployed.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped_pkg/__init__.py", "")
        z.writestr("zipped_pkg/inner/mod.py", "X = 1\n")
        z.writestr("zipped_pkg/inner/data.json", "{}")
        z.writestr("zipped_pkg/__pycache__/mod.cpython-311.pyc", "bytecode")
        z.writestr("other/mod.py", "")
    monkeypatch.syspath_prepend(str(archive))
    with zipfile.ZipFile(package_zip("zipped_pkg")) as z:
        shipped = {n: z.read(n) for n in z.namelist()}
    assert shipped == {"zipped_pkg/__init__.py": b"", "zipped_pkg/inner/data.json": b"{}",
                       "zipped_pkg/inner/mod.py": b"X = 1\n"}


def test_kafka_python_is_shipped_with_its_protocol_schemas() -> None:
    with zipfile.ZipFile(package_zip("kafka")) as z:
        names = z.namelist()
    assert "kafka/admin/client.py" in names
    assert any(n.startswith("kafka/protocol/schemas/resources/") and n.endswith(".json")
               for n in names)
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_remote_addresses_are_logged_without_their_parameters() -> None:
    assert redact_remote("sc://h:15002/;token=abc;user_id=me") == \
        "sc://h:15002/;token=***;user_id=***"
    assert redact_remote("sc://h:15002") == "sc://h:15002"


def test_a_connect_server_without_delta_or_with_speculation_is_refused() -> None:
    with pytest.raises(ConnectServerUnfit) as err:
        check_server_settings({"spark.speculation": "true"}, "sc://h:1")
    assert str(err.value) == (
        "the Spark Connect server at sc://h:1 cannot run the job: spark.sql.extensions lacks "
        "io.delta.sql.DeltaSparkSessionExtension (the server has no Delta: start it with the "
        "Delta jars and Delta's two settings); spark.speculation is true (a speculative admin "
        "task would send the same CreateTopics twice: start the server with "
        "spark.speculation=false)")
    check_server_settings({"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension"},
                          "sc://h:1")


def test_a_session_that_has_what_the_job_asked_for_is_not_slow() -> None:
    wanted = {"spark.sql.shuffle.partitions": "4", "spark.sql.adaptive.enabled": "false"}
    have = {"spark.sql.shuffle.partitions": "4", "spark.sql.adaptive.enabled": "False",
            "spark.python.worker.reuse": "true"}
    assert slow_settings(have, wanted) == []
    # a static setting the server was started without has Spark's default
    assert slow_settings({"spark.sql.shuffle.partitions": "4",
                          "spark.sql.adaptive.enabled": "false"}, wanted) == []


def test_what_the_session_could_not_set_and_slow_static_settings_are_named() -> None:
    wanted = {"spark.sql.shuffle.partitions": "4",
              "spark.databricks.delta.snapshotPartitions": "2"}
    have = {"spark.sql.shuffle.partitions": "200", "spark.python.worker.reuse": "false"}
    assert slow_settings(have, wanted) == [
        "the session could not set spark.sql.shuffle.partitions=4 (it is 200: the server does "
        "not let a session change it); start the server with spark.sql.shuffle.partitions=4",
        "the session could not set spark.databricks.delta.snapshotPartitions=2 (it is unset: "
        "the server does not let a session change it); start the server with "
        "spark.databricks.delta.snapshotPartitions=2",
        "spark.python.worker.reuse is false (every admin task starts a new Python worker, "
        "which imports pyarrow and the job's code again); start the server with "
        "spark.python.worker.reuse=true",
    ]


def _slow(batches: Any) -> Any:
    import time as t

    t.sleep(20)
    return batches


def test_a_first_signal_asks_for_a_stop_and_a_second_interrupts_the_run(spark: Any) -> None:
    import os
    import signal
    import time

    from provisioning.errors import RunCancelled
    from provisioning.session import Stop, handling_signals

    before = signal.getsignal(signal.SIGTERM)
    stop = Stop()
    with handling_signals(stop), stop.tag_operations(spark, "r-cancel"):
        assert "topic-provisioning run r-cancel" in spark.getTags()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)
        # the first only records itself: the running work goes on to its safe point
        assert stop.requested and stop.signal == "SIGTERM"
        assert spark.range(3).count() == 3
        with pytest.raises(RunCancelled, match="cancelled by SIGTERM: the run stopped at a "
                                               "safe point"):
            stop.check()
    assert signal.getsignal(signal.SIGTERM) == before
    assert "topic-provisioning run r-cancel" not in spark.getTags()

    stop = Stop()
    started = time.monotonic()
    with pytest.raises(RunCancelled) as err, handling_signals(stop), \
            stop.tag_operations(spark, "r-hard"):
        stop.request("SIGTERM")  # the first came earlier
        threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
        spark.range(1).mapInArrow(_slow, "id long").collect()
    assert time.monotonic() - started < 15  # not the task's 20 s
    assert str(err.value).startswith("cancelled by a second SIGTERM: the run's Spark "
                                     "operations were interrupted")
    assert err.value.exit_code == 6
    assert signal.getsignal(signal.SIGTERM) == before
    assert spark.range(3).count() == 3  # the session goes on


@pytest.fixture
def own_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp dir of the test's own as the system's, and no folder of this process's own
    chosen yet: the zips' folder is looked for afresh."""
    import tempfile

    from provisioning.session import connect

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(connect, "_own_folder", [], raising=False)
    monkeypatch.setattr(connect, "_checked", {}, raising=False)
    return tmp_path


def _plant(folder: Path, zip_name: str) -> None:
    """What another local user leaves where the job would look: a folder of theirs anyone
    may write to, a zip under the name the job would look for, holding their code."""
    folder.mkdir(exist_ok=True)
    with zipfile.ZipFile(folder / zip_name, "w") as z:
        z.writestr("schemas/__init__.py", "import os  # the other user's code\n")
    os.chown(folder, 65534, 65534)
    os.chmod(folder, 0o777)


def test_zips_another_user_planted_in_a_shared_folder_are_never_shipped(
        own_temp: Path, caplog: pytest.LogCaptureFixture) -> None:
    from provisioning.session import connect

    expected = package_zip("schemas").name
    getattr(connect, "_own_folder", []).clear()
    for leftover in own_temp.iterdir():
        shutil.rmtree(leftover)
    # The folder every user shared, and this user's own name for it, both made first by
    # another user.
    _plant(own_temp / "topic-provisioning-artifacts", expected)
    planted = own_temp / f"topic-provisioning-artifacts-{os.getuid()}"
    _plant(planted, expected)
    with caplog.at_level(logging.WARNING, logger="provisioning.session.connect"):
        path = package_zip("schemas")
    with zipfile.ZipFile(path) as z:
        names = sorted(z.namelist())
    assert names == sorted(f"schemas/{p.relative_to(REPO / 'schemas').as_posix()}"
                           for p in (REPO / "schemas").rglob("*")
                           if p.is_file() and "__pycache__" not in p.parts)
    assert (path.name, path.parent.parent, path.parent.stat().st_uid,
            stat.S_IMODE(path.parent.stat().st_mode)) == (expected, own_temp, os.getuid(),
                                                          0o700)
    assert path.parent not in (planted, own_temp / "topic-provisioning-artifacts")
    assert caplog.messages == [
        f"not using {planted} for the code shipped to Spark: it is owned by uid 65534; this "
        "process uses a private folder of its own (remove that one to share zips between "
        "runs again)"]


def test_the_users_folder_is_made_private_and_a_zip_that_does_not_hold_its_name_is_made_again(
        own_temp: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = package_zip("schemas")
    assert (path.parent, stat.S_IMODE(path.parent.stat().st_mode)) == (
        own_temp / f"topic-provisioning-artifacts-{os.getuid()}", 0o700)
    good = path.read_bytes()
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("schemas/__init__.py", "import os  # not what was zipped\n")
    with caplog.at_level(logging.WARNING, logger="provisioning.session.connect"):
        again = package_zip("schemas")
    assert (again, again.read_bytes()) == (path, good)
    assert caplog.messages == [f"the zip {path} does not hold what its name says: made again"]


def test_a_shared_session_id_is_random_kept_by_this_client_and_never_derived(
        own_temp: Path) -> None:
    import uuid

    from provisioning.session import shared_session_id

    settings = {"spark.sql.shuffle.partitions": "2"}
    first = shared_session_id("sc://127.0.0.1:15002", settings)
    # A warm client's runs share it.
    assert shared_session_id("sc://127.0.0.1:15002", settings) == first
    # Nothing another client knows (code, settings, user, day) gives it back: forgotten, the
    # next run has another.
    for folder in own_temp.iterdir():
        shutil.rmtree(folder)
    assert shared_session_id("sc://127.0.0.1:15002", settings) != first
    kept = list((own_temp / f"topic-provisioning-artifacts-{os.getuid()}").glob("session-*"))
    assert [stat.S_IMODE(p.stat().st_mode) for p in kept] == [0o600]
    assert uuid.UUID(first).version == 4


class _Client:
    """The part of a Connect client that `remember_settings` wraps: its Config requests,
    answered from a dict of the server's settings, each request recorded."""

    def __init__(self, settings: dict[str, str]) -> None:
        self.settings = settings
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    def config(self, operation: Any) -> Any:
        from pyspark.sql.connect.client.core import ConfigResult

        kind = operation.WhichOneof("op_type")
        if kind == "set":
            pairs = [(p.key, p.value) for p in operation.set.pairs]
            self.asked.append(("set", tuple(k for k, _ in pairs)))
            self.settings.update(pairs)
            return ConfigResult([], [])
        if kind == "get_with_default":
            pairs = [(p.key, p.value) for p in operation.get_with_default.pairs]
            self.asked.append(("get_with_default", tuple(k for k, _ in pairs)))
            return ConfigResult([(k, self.settings.get(k, d)) for k, d in pairs], [])
        keys = tuple(operation.get.keys)
        self.asked.append(("get", keys))
        return ConfigResult([(k, self.settings.get(k)) for k in keys], [])


def _get(*keys: str) -> Any:
    from pyspark.sql.connect.proto import base_pb2 as pb

    return pb.ConfigRequest.Operation(get=pb.ConfigRequest.Get(keys=keys))


def test_sql_settings_read_before_are_answered_without_a_request_until_a_set() -> None:
    from pyspark.sql.connect.proto import base_pb2 as pb

    client = _Client({"spark.sql.session.timeZone": "UTC", "spark.sql.a": "1",
                      "spark.topic_provisioning.shipped": "x"})
    remember_settings(client)
    zone_and_a = ("spark.sql.session.timeZone", "spark.sql.a")

    assert client.config(_get(*zone_and_a)).pairs == [
        ("spark.sql.session.timeZone", "UTC"), ("spark.sql.a", "1")]
    assert client.config(_get(*zone_and_a)).pairs == [
        ("spark.sql.session.timeZone", "UTC"), ("spark.sql.a", "1")]
    assert client.config(_get("spark.sql.a")).pairs == [("spark.sql.a", "1")]
    # Settings of other prefixes are always asked.
    assert client.config(_get("spark.topic_provisioning.shipped")).pairs == [
        ("spark.topic_provisioning.shipped", "x")]
    assert client.config(_get("spark.topic_provisioning.shipped")).pairs == [
        ("spark.topic_provisioning.shipped", "x")]
    # A read with a default: kept apart from the read without, by its default.
    with_default = pb.ConfigRequest.Operation(get_with_default=pb.ConfigRequest.GetWithDefault(
        pairs=[pb.KeyValue(key="spark.sql.unset", value="true")]))
    assert client.config(with_default).pairs == [("spark.sql.unset", "true")]
    assert client.config(with_default).pairs == [("spark.sql.unset", "true")]
    # A set forgets every answer kept: the next read asks the server again.
    client.config(pb.ConfigRequest.Operation(
        set=pb.ConfigRequest.Set(pairs=[pb.KeyValue(key="spark.sql.a", value="2")])))
    assert client.config(_get("spark.sql.a")).pairs == [("spark.sql.a", "2")]
    assert client.asked == [
        ("get", zone_and_a), ("get", ("spark.topic_provisioning.shipped",)),
        ("get", ("spark.topic_provisioning.shipped",)),
        ("get_with_default", ("spark.sql.unset",)), ("set", ("spark.sql.a",)),
        ("get", ("spark.sql.a",))]
