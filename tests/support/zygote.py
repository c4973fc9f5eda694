"""Thin Spark Connect clients of the job without paying Python's imports each time.

A thin-client run (`./spark-submit.sh --remote sc://... jobs/provision_topics.py ARGS`) is
a new Python process that spends about 2 of its 3 s of CPU importing pyspark's Connect
client, pandas, pyarrow, kafka-python and the job's modules before it does any work. The
tests run hundreds of such runs. The zygote is one Python process per pytest session that
imports all of that once, then forks a new process for each run: that process takes the
run's environment, working directory, argv and output files, and runs the job's entry
point as `__main__`, as `exec python jobs/provision_topics.py ARGS` would (what
spark-submit.sh does for a Connect run). It is a process of its own, with its own exit
code, on the real server; only the imports were done before it was forked.

Nothing is started in the zygote before a fork: no Spark session, no gRPC channel, no
Kafka client, no thread. `run_cli` (tests/helpers.py) uses it only for runs whose
environment does not change how Python starts (PYTHONPATH, the fault injection of
tests/support/faults) and that give spark-submit.sh no option of its own; the others go
through spark-submit.sh as before.

Protocol (a Unix socket): the client sends one JSON line (argv, env, cwd) with the file
descriptors of its stdout and stderr files; a waiter forked by the zygote forks the run,
answers `{"pid": N}`, waits for it and answers `{"status": S}` (os.waitpid's status).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# What a thin-client run imports before it does any work (measured with -X importtime on a
# warm no-op apply); every module of the job is imported too (_preload).
PRELOAD = ("pyspark.sql.connect.session", "pyspark.sql.connect.dataframe",
           "pyspark.sql.connect.functions", "pyspark.sql.connect.client",
           "pyspark.sql.functions", "pyspark.sql.types", "pandas", "pyarrow", "numpy",
           "kafka", "kafka.admin", "click", "yaml", "delta")


def _preload() -> None:
    import importlib
    import pkgutil

    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    for package in ("provisioning", "schemas"):
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, f"{package}."):
            # An optional extra is left to the run (it imports it, or fails, on its own).
            with contextlib.suppress(ImportError):
                importlib.import_module(info.name)


def _recv(conn: socket.socket) -> tuple[dict, list[int]]:
    """The request line and the file descriptors sent with it (socket.send_fds)."""
    data = b""
    fds: list[int] = []
    while not data.endswith(b"\n"):
        msg, got, _flags, _addr = socket.recv_fds(conn, 1 << 16, 2)
        if not msg:
            raise EOFError("the client went away")
        data += msg
        fds.extend(got)
    return json.loads(data), fds


def _answer(conn: socket.socket, **fields: int) -> None:
    conn.sendall((json.dumps(fields) + "\n").encode())


def _run_job(request: dict, out: int, err: int) -> None:
    """In the forked run: become `python APP ARGS` with the request's environment."""
    import atexit
    import runpy

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    for fd in (null, out, err):
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    app = request["argv"][0]
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(app))
    code = 0
    try:
        runpy.run_path(app, run_name="__main__")
    except SystemExit as stop:
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:  # what Python prints and exits with
        import traceback

        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the process ends either way
                stream.flush()
        os._exit(code)


def _serve_one(conn: socket.socket, listener: socket.socket) -> None:
    """In the waiter forked per request: fork the run, report its pid and its status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    listener.close()
    request, fds = _recv(conn)
    out, err = fds[:2]
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run_job(request, out, err)
    os.close(out)
    os.close(err)
    _answer(conn, pid=pid)
    _, status = os.waitpid(pid, 0)
    _answer(conn, status=status)


def serve(path: str) -> None:
    """The zygote: import, listen on `path`, fork a waiter per connection."""
    import ctypes

    # Ends with the pytest process that started it, however that one ends.
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    _preload()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # waiters are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            try:
                _serve_one(conn, listener)
            finally:
                os._exit(0)
        conn.close()


def _text(data: bytes) -> str:
    """What subprocess.run(text=True) makes of a stream: decoded, universal newlines."""
    return data.decode().replace("\r\n", "\n").replace("\r", "\n")


class _Lines:
    """The JSON lines the waiter answers, read off the raw socket (a timeout may interrupt
    a read, and the next one goes on)."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._data = b""

    def next(self) -> dict:
        while b"\n" not in self._data:
            chunk = self._conn.recv(4096)
            if not chunk:
                raise RuntimeError("the thin-client zygote's waiter went away")
            self._data += chunk
        line, self._data = self._data.split(b"\n", 1)
        return json.loads(line)


class Zygote:
    """The client: starts the zygote on first use, runs jobs through it."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = dict(env)
        self._proc: subprocess.Popen[str] | None = None
        self._dir = tempfile.mkdtemp(prefix="zygote-")
        self._path = os.path.join(self._dir, "socket")
        self._lock = threading.Lock()

    def _start(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from tests.support.zygote import serve; "
             "serve(sys.argv[1])", self._path],
            cwd=REPO, env=self._env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if line.strip() != "ready":
            self._proc.kill()
            raise RuntimeError("the thin-client zygote did not start (tests/support/zygote.py)")

    def run(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path,
            timeout: float) -> subprocess.CompletedProcess[str]:
        """`argv` (the app and its arguments) as `python argv...` would run it, with
        `env` as its whole environment, in `cwd`: its exit code and what it printed."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
        with tempfile.TemporaryFile("w+b") as out, tempfile.TemporaryFile("w+b") as err, \
                socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(self._path)
            request = json.dumps({"argv": list(argv), "env": dict(env), "cwd": str(cwd)})
            socket.send_fds(conn, [(request + "\n").encode()], [out.fileno(), err.fileno()])
            lines = _Lines(conn)
            pid = lines.next()["pid"]
            conn.settimeout(timeout)
            try:
                status = lines.next()["status"]
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                conn.settimeout(None)
                lines.next()  # its status, once the kill has ended it
                raise subprocess.TimeoutExpired(list(argv), timeout) from None
            code = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            return subprocess.CompletedProcess(list(argv), code, _text(out.read()),
                                               _text(err.read()))

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        try:
            os.unlink(self._path)
            os.rmdir(self._dir)
        except OSError:
            pass
