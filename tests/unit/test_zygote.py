"""The zygote the thin-client runs are forked from (tests/support/zygote.py): each run is a
process of its own, as `python APP ARGS` would be, with the environment, directory, argv,
exit code, output and timeout it was given."""

from __future__ import annotations

import os
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.zygote import Zygote

APP = textwrap.dedent("""\
    import os, sys, time
    import atexit
    atexit.register(lambda: print("at exit", flush=True))
    print("argv", sys.argv[1:])
    print("cwd", os.getcwd())
    print("env", os.environ.get("ZYGOTE_TEST"), "HOME" in os.environ)
    print("path0", sys.path[0])
    print("pid differs", os.getpid() != int(os.environ["PARENT_PID"]))
    print("main", __name__)
    print("to stderr", file=sys.stderr)
    if sys.argv[1:] == ["sleep"]:
        time.sleep(60)
    if sys.argv[1:] == ["raise"]:
        raise ValueError("boom")
    sys.exit(int(sys.argv[1]) if sys.argv[1:] and sys.argv[1].isdigit() else 0)
""")


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    env = {k: v for k, v in os.environ.items() if k != "ZYGOTE_TEST"}
    zygote = Zygote(env)
    try:
        yield zygote
    finally:
        zygote.stop()


def test_a_run_is_a_process_with_its_own_argv_env_directory_and_exit_code(
        zygote: Zygote, tmp_path: Path) -> None:
    app = tmp_path / "jobs" / "app.py"
    app.parent.mkdir()
    app.write_text(APP)
    env = {"ZYGOTE_TEST": "given", "PARENT_PID": str(os.getpid())}
    done = zygote.run([str(app), "3", "--flag"], env, tmp_path, timeout=60)
    assert (done.returncode, done.stderr) == (3, "to stderr\n")
    assert done.stdout.splitlines() == [
        "argv ['3', '--flag']", f"cwd {tmp_path}", "env given False",
        f"path0 {app.parent}", "pid differs True", "main __main__", "at exit"]
    # The next run starts from the zygote again: nothing of the last one is left.
    again = zygote.run([str(app)], {"PARENT_PID": str(os.getpid())}, tmp_path, timeout=60)
    assert (again.returncode, again.stdout.splitlines()[2]) == (0, "env None False")


def test_an_exception_exits_1_with_its_traceback(zygote: Zygote, tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(APP)
    done = zygote.run([str(app), "raise"], {"PARENT_PID": "0"}, tmp_path, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("to stderr\nTraceback (most recent call last):\n")
    assert done.stderr.endswith("ValueError: boom\n")


def test_a_run_past_its_timeout_is_killed(zygote: Zygote, tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(APP)
    with pytest.raises(subprocess.TimeoutExpired):
        zygote.run([str(app), "sleep"], {"PARENT_PID": "0"}, tmp_path, timeout=3)
    # The zygote serves the next run.
    done = zygote.run([str(app), "7"], {"PARENT_PID": "0"}, tmp_path,
                      timeout=60)
    assert done.returncode == 7
