"""Run a real local Kafka (KRaft, combined broker+controller nodes) from jars for tests and dev."""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import ctypes
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from provisioning.processes import process_exists

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_JARS_DIR = REPO_ROOT / ".cache" / "jars" / "kafka"
JARS_ENV = "PROVISIONING_KAFKA_JARS"
HOST = "127.0.0.1"
CONTROLLER_LISTENER = "CONTROLLER"
STATE_FILE = "cluster.json"

# The harness owns these; letting callers override them would desynchronise the ports,
# quorum and directories it records.
_RESERVED_KEYS = frozenset(
    {
        "process.roles",
        "node.id",
        "listeners",
        "advertised.listeners",
        "listener.security.protocol.map",
        "inter.broker.listener.name",
        "controller.listener.names",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "log.dir",
        "log.dirs",
        "metadata.log.dir",
    }
)
_LISTENER_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_LOG4J2_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by dev.devkafka. Shared by every node: each logs under its own
     -Dkafka.logs.dir. Log4j's shutdown hook is off so Kafka's own shutdown is still logged. -->
<Configuration status="WARN" shutdownHook="disable">
  <Appenders>
    <RollingFile name="server" fileName="${sys:kafka.logs.dir}/server.log"
                 filePattern="${sys:kafka.logs.dir}/server.log.%i">
      <PatternLayout pattern="[%d] %p [%t] %m (%c)%n"/>
      <SizeBasedTriggeringPolicy size="50 MB"/>
      <DefaultRolloverStrategy max="2"/>
    </RollingFile>
  </Appenders>
  <Loggers>
    <Root level="INFO">
      <AppenderRef ref="server"/>
    </Root>
    <!-- Each node dumps its ~400-line config about ten times at boot; server.properties
         beside this log already says the same. -->
    <Logger name="org.apache.kafka.common.config.AbstractConfig" level="WARN"/>
    <!-- Thread start/stop chatter from purgatories, quota reapers and timers. -->
    <Logger name="org.apache.kafka.server.purgatory" level="WARN"/>
    <Logger name="org.apache.kafka.server.quota" level="WARN"/>
    <Logger name="org.apache.kafka.server.util.timer" level="WARN"/>
    <Logger name="org.apache.kafka.common.utils.AppInfoParser" level="WARN"/>
    <Logger name="kafka.request.logger" level="WARN"/>
  </Loggers>
</Configuration>
"""

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_LISTENERS",
    "KafkaCluster",
    "KafkaClusterError",
    "ListenerSpec",
    "SaslUsers",
    "TlsFiles",
    "default_jars_dir",
    "describe_brokers",
    "free_ports",
    "kafka_uuid",
    "main",
    "terminate_pids",
]


class KafkaClusterError(RuntimeError):
    """A local Kafka node failed to format, start, or become ready."""


@dataclass(frozen=True)
class ListenerSpec:
    """A client-facing listener that every node binds on 127.0.0.1 at a port picked at start."""

    name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    # Written as listener.name.<name lower>.<key>=<value>, the place Kafka reads per-listener
    # settings such as SASL mechanisms and JAAS configs.
    config: Mapping[str, str] = field(default_factory=dict, hash=False)
    # Advertise this port instead of the bound one (one node only): clients that bootstrap
    # here then reach the broker through whatever listens on it, such as a test's proxy.
    advertised_port: int | None = None

    def __post_init__(self) -> None:
        if not _LISTENER_NAME.match(self.name) or self.name == CONTROLLER_LISTENER:
            raise ValueError(f"bad listener name {self.name!r}")

    def properties(self) -> dict[str, str]:
        """Listener-scoped server.properties entries for this listener."""
        prefix = f"listener.name.{self.name.lower()}."
        return {prefix + key: value for key, value in self.config.items()}


DEFAULT_LISTENERS: tuple[ListenerSpec, ...] = (ListenerSpec(),)


@dataclass(frozen=True)
class TlsFiles:
    """A throwaway CA and a server certificate signed by it, as PEM files (openssl).

    The certificate names the loopback address (subjectAltName IP), so clients that
    check host names (kafka-python does) accept it with `ca_file` as their CA.
    """

    ca_file: Path
    keystore_file: Path

    @classmethod
    def create(cls, directory: Path, host: str = HOST, days: int = 2) -> TlsFiles:
        """Generate the CA and the server key and certificate under `directory`."""
        openssl = shutil.which("openssl")
        if openssl is None:
            raise KafkaClusterError("openssl not found on PATH: it makes the test CA")
        d = Path(directory).resolve()
        d.mkdir(parents=True, exist_ok=True)
        (d / "san.ext").write_text(f"subjectAltName=IP:{host}\n")
        steps = [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.pem", "-days", str(days), "-subj", "/CN=devkafka test CA"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
             "server.csr", "-subj", f"/CN={host}"],
            ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.crt", "-days", str(days), "-extfile",
             "san.ext"],
        ]
        for args in steps:
            done = subprocess.run([openssl, *args], cwd=d, capture_output=True, text=True)
            if done.returncode != 0:
                raise KafkaClusterError(f"openssl {args[0]} failed:\n{done.stderr[-2000:]}")
        # Kafka's PEM key store: the (unencrypted PKCS#8) key, then the certificate chain.
        keystore = d / "server.pem"
        keystore.write_text((d / "server.key").read_text() + (d / "server.crt").read_text())
        return cls(ca_file=d / "ca.pem", keystore_file=keystore)

    def listener_config(self) -> dict[str, str]:
        """Per-listener settings of an SSL or SASL_SSL listener serving this certificate."""
        return {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.keystore_file),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
        }

SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
# Characters that would need escaping in a JAAS option or a StorageTool --add-scram entry.
_UNSAFE_CREDENTIAL = re.compile(r'["\\\[\],=;\s]')


@dataclass(frozen=True)
class SaslUsers:
    """The users of a SASL-secured cluster with an authorizer (StandardAuthorizer).

    `admin` is the principal the nodes use between themselves (inter-broker and
    controller listeners, mechanism PLAIN) and the only super user. `plain` users
    log in with PLAIN; `scram` users are written into the metadata at storage
    format time (StorageTool --add-scram) for both SCRAM-SHA-256 and SCRAM-SHA-512.
    Nobody but `admin` may do anything until ACLs say so
    (allow.everyone.if.no.acl.found=false).
    """

    admin_password: str
    admin: str = "admin"
    plain: Mapping[str, str] = field(default_factory=dict, hash=False)
    scram: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        pairs = [(self.admin, self.admin_password), *self.plain.items(), *self.scram.items()]
        for name, password in pairs:
            for what, value in (("user name", name), ("password", password)):
                if not value or _UNSAFE_CREDENTIAL.search(value):
                    raise ValueError(
                        f"SASL {what} of {name!r} must be non-empty without quotes, "
                        "backslashes, brackets, ',', '=', ';' or whitespace")
        if self.admin in self.plain:
            raise ValueError(f"{self.admin!r} is the admin user; do not list it in `plain`")

    def __repr__(self) -> str:
        # Test passwords are still passwords: a failing test prints its fixtures.
        return (f"SaslUsers(admin={self.admin!r}, plain={sorted(self.plain)}, "
                f"scram={sorted(self.scram)})")

    @property
    def super_user(self) -> str:
        """The admin's principal, as super.users and ACLs spell it."""
        return f"User:{self.admin}"

    def plain_jaas(self, with_users: bool = True) -> str:
        """PlainLoginModule config: the admin's own login and (server side) every PLAIN user."""
        users = {self.admin: self.admin_password, **self.plain} if with_users else {}
        options = [f'username="{self.admin}"', f'password="{self.admin_password}"']
        options += [f'user_{name}="{password}"' for name, password in users.items()]
        return f"{_PLAIN_MODULE} required {' '.join(options)};"

    def listener_config(self) -> dict[str, str]:
        """Per-listener settings of a client listener accepting every mechanism."""
        return {
            "sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS),
            "plain.sasl.jaas.config": self.plain_jaas(),
            # Server-side SCRAM checks the credentials stored in the metadata log.
            "scram-sha-256.sasl.jaas.config": f"{_SCRAM_MODULE} required;",
            "scram-sha-512.sasl.jaas.config": f"{_SCRAM_MODULE} required;",
        }

    def scram_arguments(self) -> list[str]:
        """StorageTool `format` arguments that create the SCRAM users."""
        args = []
        for name, password in self.scram.items():
            for mechanism in SASL_MECHANISMS[1:]:
                args += ["--add-scram", f"{mechanism}=[name={name},password={password}]"]
        return args

    def client_settings(self, user: str | None = None, mechanism: str = "PLAIN"
                        ) -> dict[str, str]:
        """kafka-python settings to log in as `user` (default: the admin) with `mechanism`."""
        name = user or self.admin
        if name == self.admin:
            password = self.admin_password
        elif mechanism == "PLAIN":
            password = self.plain[name]
        else:
            password = self.scram[name]
        return {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism,
            "sasl_plain_username": name,
            "sasl_plain_password": password,
        }


@dataclass
class _Node:
    node_id: int
    directory: Path
    ports: dict[str, int]
    controller_port: int
    directory_id: str
    proc: subprocess.Popen[bytes] | None = None

    @property
    def properties_file(self) -> Path:
        return self.directory / "server.properties"

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def server_log(self) -> Path:
        return self.directory / "server.log"

    @property
    def stdout_log(self) -> Path:
        return self.directory / "stdout.log"

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def kafka_uuid() -> str:
    """A random id in the form Kafka's Uuid.toString() prints (cluster and directory ids)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        # Kafka's own generator rejects a leading '-', which CLI parsers read as an option.
        if not text.startswith("-"):
            return text


def free_ports(count: int) -> list[int]:
    """Distinct free loopback TCP ports, all held open together so none repeats."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((HOST, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def default_jars_dir() -> Path:
    """The broker jars directory: $PROVISIONING_KAFKA_JARS, else <repo>/.cache/jars/kafka."""
    env = os.environ.get(JARS_ENV)
    return Path(env) if env else DEFAULT_JARS_DIR


def java_executable() -> str:
    """The java launcher, preferring $JAVA_HOME as Spark does."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise KafkaClusterError("java not found on PATH (and JAVA_HOME is not set)")
    return found


def _tail(path: Path, lines: int) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            # Kafka lines run long (broker registrations are ~1.5 kB).
            fh.seek(max(0, fh.tell() - 2048 * lines))
            text = fh.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return f"({path} does not exist)"
    return "\n".join(text.splitlines()[-lines:])


def _first_errors(path: Path, limit: int) -> str:
    found: list[str] = []
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if " ERROR " in line or " FATAL " in line:
                    found.append(line.rstrip())
                    if len(found) >= limit:
                        break
    except FileNotFoundError:
        return f"({path} does not exist)"
    return "\n".join(found) or "(none)"


def _parent_death_signal_hook() -> Callable[[], None] | None:
    """A preexec_fn making the kernel SIGTERM the child when its starting thread dies."""
    # That covers what atexit cannot (pytest SIGKILLed by a CI timeout, say). The kernel
    # ties it to the *thread* that forked, so attached clusters must be started from a
    # thread that outlives them (pytest runs fixtures on the main thread).
    if sys.platform != "linux":
        return None
    try:
        # Resolved here, before fork: the child of a threaded parent should not dlopen.
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return hook


def _is_our_node(pid: int, properties_file: str) -> bool:
    """Whether pid is still the broker started with properties_file (not a reused pid)."""
    proc = Path(f"/proc/{pid}")
    if not Path("/proc/self").exists():  # no procfs: existence is all we can check
        return process_exists(pid)
    try:
        # A detached node's reaper (init) may leave it a zombie for seconds; it is gone.
        if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
        cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (OSError, IndexError):
        return False
    return "kafka.Kafka" in cmdline and properties_file in cmdline


def _signal_group(pid: int, sig: signal.Signals) -> None:
    # Each node leads its own process group; signal the group so nothing it spawned lingers.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def terminate_pids(pids: Mapping[int, str], timeout_s: float) -> None:
    """Stop recorded broker pids (pid -> properties file) that we did not spawn ourselves."""
    alive = {pid: props for pid, props in pids.items() if _is_our_node(pid, props)}
    for pid in alive:
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = {pid: props for pid, props in alive.items() if _is_our_node(pid, props)}
    for pid in alive:
        _signal_group(pid, signal.SIGKILL)
    while alive:
        time.sleep(0.05)
        alive = {pid: props for pid, props in alive.items() if _is_our_node(pid, props)}


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


def describe_brokers(bootstrap_servers: str, timeout_s: float = 5,
                     settings: Mapping[str, Any] | None = None) -> dict[int, bool]:
    """Broker id -> fenced, as the cluster's DescribeCluster reports it.

    settings: extra kafka-python settings (security protocol and credentials).
    """
    from kafka import KafkaAdminClient  # the module stays importable without kafka-python

    timeout_ms = int(timeout_s * 1000)
    admin = KafkaAdminClient(
        bootstrap_servers=bootstrap_servers,
        client_id="devkafka-probe",
        request_timeout_ms=timeout_ms,
        bootstrap_timeout_ms=timeout_ms,
        **(settings or {}),
    )
    try:
        brokers = admin.describe_cluster()["brokers"]
    finally:
        admin.close()
    return {int(b["broker_id"]): bool(b.get("is_fenced", False)) for b in brokers}


class KafkaCluster:
    """A throwaway Kafka cluster of combined broker+controller JVMs on loopback ports."""

    def __init__(
        self,
        base_dir: Path,
        nodes: int = 1,
        *,
        jars_dir: Path | None = None,
        broker_properties: Mapping[str, str] | None = None,
        extra_classpath: Sequence[Path] = (),
        heap_mb: int = 512,
        listeners: Sequence[ListenerSpec] = DEFAULT_LISTENERS,
        detached: bool = False,
        sasl: SaslUsers | None = None,
        racks: Mapping[int, str] | None = None,
        system_properties: Mapping[str, str] | None = None,
    ) -> None:
        if nodes < 1:
            raise ValueError("nodes must be >= 1")
        racks = dict(racks or {})
        strays = sorted(set(racks) - set(range(1, nodes + 1)))
        if strays:
            raise ValueError(f"racks name nodes {strays}; nodes are 1..{nodes}")
        if any(not isinstance(rack, str) or not rack.strip() for rack in racks.values()):
            raise ValueError(f"racks must be non-empty strings, got {racks}")
        if racks and "broker.rack" in (broker_properties or {}):
            raise ValueError("set broker.rack through `racks` or broker_properties, not both")
        if not listeners:
            raise ValueError("at least one client listener is needed")
        if sasl is not None:
            if listeners == DEFAULT_LISTENERS:
                listeners = (ListenerSpec("SASL", "SASL_PLAINTEXT"),)
            # The first listener carries inter-broker traffic and the harness's own probes,
            # both as the admin: it has to authenticate.
            if not listeners[0].security_protocol.startswith("SASL"):
                raise ValueError("with sasl, the first listener must be SASL_PLAINTEXT or "
                                 f"SASL_SSL, not {listeners[0].security_protocol}")
        if nodes > 1 and any(spec.advertised_port for spec in listeners):
            raise ValueError("an advertised_port is for a one-node cluster")
        names = [spec.name for spec in listeners]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate listener names: {names}")
        reserved = _RESERVED_KEYS.intersection(broker_properties or {})
        if reserved:
            raise ValueError(f"broker_properties may not set {sorted(reserved)}")
        self.base_dir = Path(base_dir).resolve()
        self.jars_dir = Path(jars_dir or default_jars_dir()).resolve()
        self.broker_properties = dict(broker_properties or {})
        self.extra_classpath = [Path(p).resolve() for p in extra_classpath]
        self.heap_mb = heap_mb
        # JVM system properties of every node (-Dname=value): settings Kafka reads only
        # there, such as the URLs an OAUTHBEARER listener may read
        # (org.apache.kafka.sasl.oauthbearer.allowed.urls).
        self.system_properties = dict(system_properties or {})
        self.listeners = tuple(listeners)
        self.sasl = sasl
        # node id -> broker.rack (KIP-36); nodes not named have no rack.
        self.racks = racks
        # Detached nodes outlive this Python process (the CLI's `up`): no atexit stop and
        # no parent-death signal.
        self.detached = detached
        self.cluster_id = ""
        self._node_count = nodes
        self._nodes: dict[int, _Node] = {}
        self._atexit_registered = False

    # -- public API -------------------------------------------------------------------

    @property
    def node_ids(self) -> list[int]:
        """Node ids (each both broker and controller id), 1..nodes."""
        return list(range(1, self._node_count + 1))

    @property
    def bootstrap_servers(self) -> str:
        """host:port list of the first client listener on every node."""
        return self.bootstrap_servers_for(self.listeners[0].name)

    def bootstrap_servers_for(self, listener: str) -> str:
        """host:port list of the named client listener on every node."""
        self._require_started()
        return ",".join(f"{HOST}:{n.ports[listener]}" for n in self._nodes.values())

    def client_settings(self, user: str | None = None, mechanism: str = "PLAIN"
                        ) -> dict[str, Any]:
        """kafka-python settings reaching the first listener (as `user`, default the admin,
        when the cluster is SASL-secured)."""
        settings: dict[str, Any] = {"bootstrap_servers": self.bootstrap_servers}
        if self.sasl is not None:
            settings.update(self.sasl.client_settings(user, mechanism))
            settings["security_protocol"] = self.listeners[0].security_protocol
        elif user is not None:
            raise ValueError("the cluster has no SASL users")
        return settings

    @property
    def log_dir(self) -> Path:
        """Directory holding node-<id>/server.log (and stdout.log) for every node."""
        return self.base_dir

    def log_file(self, node_id: int) -> Path:
        """The broker's log4j server.log for one node."""
        return self._node(node_id).server_log

    def log_tail(self, node_id: int, lines: int = 40) -> str:
        """A node's first ERROR lines and the tails of its server.log and JVM stdout."""
        node = self._node(node_id)
        # The cause of a failed boot is usually logged once, then buried under the
        # shutdown that follows it.
        errors = _first_errors(node.server_log, 5)
        return (
            f"--- {node.server_log}: first errors ---\n{errors}\n"
            f"--- {node.server_log}: last {lines} lines ---\n{_tail(node.server_log, lines)}\n"
            f"--- {node.stdout_log}: last {lines} lines ---\n{_tail(node.stdout_log, lines)}"
        )

    def pid(self, node_id: int) -> int | None:
        """The JVM pid of a running node, else None."""
        node = self._node(node_id)
        return node.proc.pid if node.proc is not None and node.running() else None

    def is_running(self, node_id: int) -> bool:
        """Whether the node's JVM is alive."""
        return self._node(node_id).running()

    def start(self, timeout_s: float = 90) -> None:
        """Format fresh storage on new ports, launch every node, wait until all are unfenced."""
        if any(node.running() for node in self._nodes.values()):
            raise KafkaClusterError("cluster already started")
        deadline = time.monotonic() + timeout_s
        try:
            self._prepare()
            self._format_all(deadline)
            for node in self._nodes.values():
                self._launch(node)
            self._wait_ready(set(self.node_ids), deadline)
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout_s: float = 30) -> None:
        """SIGTERM every node, SIGKILL whatever is left after timeout_s; safe to repeat."""
        self._terminate([n for n in self._nodes.values() if n.proc is not None], timeout_s)
        if self._atexit_registered:
            atexit.unregister(self._atexit_stop)
            self._atexit_registered = False

    def stop_node(self, node_id: int, timeout_s: float = 30) -> None:
        """Stop one node gracefully (SIGKILL after timeout_s), keeping its ports and data."""
        self._terminate([self._node(node_id)], timeout_s)

    def kill_node(self, node_id: int) -> None:
        """SIGKILL one node, as a crash would; start_node brings it back."""
        self._terminate([self._node(node_id)], 0, graceful=False)

    def start_node(self, node_id: int, timeout_s: float = 90) -> None:
        """Restart a stopped node on its old ports and data dir; wait until it is unfenced."""
        node = self._node(node_id)
        if node.running():
            raise KafkaClusterError(f"node {node_id} is already running")
        deadline = time.monotonic() + timeout_s
        self._launch(node)
        running = {n.node_id for n in self._nodes.values() if n.running()}
        self._wait_ready(running, deadline)

    def active_controller(self, timeout_s: float = 30) -> int:
        """The node id of the KRaft quorum's leader (the active controller).

        Read from the `quorum-state` file each running node keeps beside its metadata log:
        the leader of the highest epoch that a majority of the running nodes agree on.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            seen: dict[tuple[int, int], int] = {}
            running = [n for n in self._nodes.values() if n.running()]
            for node in running:
                path = node.data_dir / "__cluster_metadata-0" / "quorum-state"
                try:
                    state = json.loads(path.read_text())
                except (OSError, ValueError):
                    continue
                key = (int(state.get("leaderEpoch", -1)), int(state.get("leaderId", -1)))
                seen[key] = seen.get(key, 0) + 1
            if seen:
                (_epoch, leader), votes = max(seen.items())
                if leader in self._nodes and self._nodes[leader].running() \
                        and votes * 2 > len(running):
                    return leader
            if time.monotonic() > deadline:
                raise KafkaClusterError(f"no active controller agreed on: {seen}")
            time.sleep(0.1)

    def brokers(self, timeout_s: float = 15) -> dict[int, bool]:
        """Broker id -> fenced, as the running nodes report it."""
        # kafka-python sends to whichever broker metadata lists, and a node stopped a
        # moment ago stays listed (unfenced) until its session expires: retry past it.
        deadline = time.monotonic() + timeout_s
        while True:
            running = [n for n in self._nodes.values() if n.running()]
            if not running:
                raise KafkaClusterError("no kafka node is running")
            bootstrap = ",".join(f"{HOST}:{n.ports[self.listeners[0].name]}" for n in running)
            try:
                return describe_brokers(bootstrap, timeout_s=5, settings=self._probe_settings())
            except Exception:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.25)

    def state(self) -> dict[str, Any]:
        """What `cluster.json` records: enough to find, probe and stop the nodes later."""
        self._require_started()
        return {
            "bootstrap_servers": self.bootstrap_servers,
            "listeners": {
                spec.name: self.bootstrap_servers_for(spec.name) for spec in self.listeners
            },
            "cluster_id": self.cluster_id,
            "base_dir": str(self.base_dir),
            "node_ids": self.node_ids,
            "nodes": [
                {
                    "node_id": n.node_id,
                    "pid": self.pid(n.node_id),
                    "ports": dict(n.ports),
                    "controller_port": n.controller_port,
                    "properties": str(n.properties_file),
                    "server_log": str(n.server_log),
                    "stdout_log": str(n.stdout_log),
                }
                for n in self._nodes.values()
            ],
        }

    def __enter__(self) -> KafkaCluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        running = [n.node_id for n in self._nodes.values() if n.running()]
        return f"KafkaCluster({self.base_dir}, nodes={self._node_count}, running={running})"

    # -- configuration ----------------------------------------------------------------

    def server_properties(self, node_id: int) -> dict[str, str]:
        """The full server.properties of one node, in file order."""
        node = self._node(node_id)
        replicas = min(3, self._node_count)
        min_isr = 1 if replicas == 1 else 2
        listeners = [(spec.name, node.ports[spec.name]) for spec in self.listeners]
        advertised = {spec.name: spec.advertised_port for spec in self.listeners}
        listeners.append((CONTROLLER_LISTENER, node.controller_port))
        protocols = [(spec.name, spec.security_protocol) for spec in self.listeners]
        protocols.append(
            (CONTROLLER_LISTENER, "PLAINTEXT" if self.sasl is None else "SASL_PLAINTEXT"))
        props: dict[str, str] = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.bootstrap.servers": ",".join(
                f"{HOST}:{n.controller_port}" for n in self._nodes.values()
            ),
            "listeners": ",".join(f"{name}://{HOST}:{port}" for name, port in listeners),
            # The controller endpoint is advertised too: with a dynamic quorum the voters
            # learn each other's addresses from it.
            "advertised.listeners": ",".join(
                f"{name}://{HOST}:{advertised.get(name) or port}" for name, port in listeners),
            "listener.security.protocol.map": ",".join(f"{n}:{p}" for n, p in protocols),
            "controller.listener.names": CONTROLLER_LISTENER,
            "inter.broker.listener.name": self.listeners[0].name,
            "log.dirs": str(node.data_dir),
            "auto.create.topics.enable": "false",
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.replication.factor": str(replicas),
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": str(replicas),
            "transaction.state.log.min.isr": str(min_isr),
            "transaction.state.log.num.partitions": "10",
            "share.coordinator.state.topic.replication.factor": str(replicas),
            "share.coordinator.state.topic.min.isr": str(min_isr),
            # Sized for two cores and a 512 MB heap rather than a production box; the
            # cleaner's default 128 MB dedupe buffer alone would take a quarter of the heap.
            # Each network thread (one per listener, the controller's included) and each
            # request handler wakes every 300 ms when idle: with one network thread and two
            # handlers an idle node took 1.55 % of a core, not 1.82 % (a 3-node cluster
            # 5.2 %, not 6.3 %).
            "num.network.threads": "1",
            "num.io.threads": "2",
            "background.threads": "2",
            "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
            # A restarted node is refused (DUPLICATE_BROKER_REGISTRATION) until its old
            # session expires; 9 s by default, which every fault test would pay.
            "broker.heartbeat.interval.ms": "1000",
            "broker.session.timeout.ms": "6000",
            # The active controller appends a no-op record to the metadata log every 500 ms
            # by default (KIP-835's liveness signal for monitoring), which every node then
            # writes, replicates and applies. 0 turns them off: an idle node took about 30 %
            # less CPU (1.9 % of a core to 1.3 %; a 3-node cluster 5.0 % to 3.6 %).
            "metadata.max.idle.interval.ms": "0",
        }
        if node.node_id in self.racks:
            props["broker.rack"] = self.racks[node.node_id]
        if self.sasl is not None:
            props.update(self._sasl_properties())
        for spec in self.listeners:
            props.update(spec.properties())
        props.update(self.broker_properties)
        return props

    def _sasl_properties(self) -> dict[str, str]:
        """Authentication everywhere, StandardAuthorizer, and the admin as the only super user.

        The nodes talk to each other (inter-broker on the first listener, Raft and broker
        registration on CONTROLLER) as the admin with PLAIN, so the admin's principal is
        the one that must be a super user for the cluster to work at all.
        """
        assert self.sasl is not None
        props = {
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "sasl.mechanism.controller.protocol": "PLAIN",
            f"listener.name.{CONTROLLER_LISTENER.lower()}.sasl.enabled.mechanisms": "PLAIN",
            f"listener.name.{CONTROLLER_LISTENER.lower()}.plain.sasl.jaas.config":
                self.sasl.plain_jaas(),
            "authorizer.class.name": STANDARD_AUTHORIZER,
            "allow.everyone.if.no.acl.found": "false",
            "super.users": self.sasl.super_user,
        }
        for spec in self.listeners:
            if spec.security_protocol.startswith("SASL"):
                prefix = f"listener.name.{spec.name.lower()}."
                props.update({prefix + k: v for k, v in self.sasl.listener_config().items()})
        return props

    def _prepare(self) -> None:
        ids = self.node_ids
        ports = free_ports(len(ids) * (len(self.listeners) + 1))
        self.cluster_id = kafka_uuid()
        self._nodes = {}
        for index, node_id in enumerate(ids):
            chunk = ports[
                index * (len(self.listeners) + 1) : (index + 1) * (len(self.listeners) + 1)
            ]
            directory = self.base_dir / f"node-{node_id}"
            # start() always means a new cluster: old data would carry the old quorum's ports.
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True)
            self._nodes[node_id] = _Node(
                node_id=node_id,
                directory=directory,
                ports={spec.name: port for spec, port in zip(self.listeners, chunk, strict=False)},
                controller_port=chunk[-1],
                directory_id=kafka_uuid(),
            )
        self.base_dir.mkdir(parents=True, exist_ok=True)
        (self.base_dir / "log4j2.xml").write_text(_LOG4J2_XML)
        for node_id in ids:
            lines = [f"{k}={_escape(v)}" for k, v in self.server_properties(node_id).items()]
            self._nodes[node_id].properties_file.write_text(
                "# Written by dev.devkafka\n" + "\n".join(lines) + "\n"
            )

    # -- processes --------------------------------------------------------------------

    def _classpath(self) -> str:
        if not any(self.jars_dir.glob("kafka_2.13-*.jar")):
            raise KafkaClusterError(
                f"no kafka_2.13-*.jar in {self.jars_dir}: run `make jars` or set {JARS_ENV}"
            )
        entries = [str(self.jars_dir / "*")]
        entries += [str(p) for p in self.extra_classpath]
        return os.pathsep.join(entries)

    def _jvm(self, node: _Node, heap_mb: int) -> list[str]:
        return [
            java_executable(),
            f"-Xmx{heap_mb}m",
            f"-Xms{min(heap_mb, 256)}m",
            "-XX:+UseSerialGC",
            # C1 only: the JIT otherwise competes with three brokers for two cores at boot;
            # with the tiered code cache (C1 alone would reserve 48 MiB).
            "-XX:TieredStopAtLevel=1",
            "-XX:ReservedCodeCacheSize=240m",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            "-Djava.net.preferIPv4Stack=true",
            f"-Dlog4j2.configurationFile={self.base_dir / 'log4j2.xml'}",
            f"-Dkafka.logs.dir={node.directory}",
            *(f"-D{name}={value}" for name, value in self.system_properties.items()),
            "-cp",
            self._classpath(),
        ]

    def _format_command(self, node: _Node) -> list[str]:
        voters = ",".join(
            f"{n.node_id}@{HOST}:{n.controller_port}:{n.directory_id}" for n in self._nodes.values()
        )
        return [
            *self._jvm(node, 256),
            "kafka.tools.StorageTool",
            "format",
            "--cluster-id",
            self.cluster_id,
            "--config",
            str(node.properties_file),
            "--initial-controllers",
            voters,
            *(self.sasl.scram_arguments() if self.sasl is not None else []),
        ]

    def _format_all(self, deadline: float) -> None:
        procs: list[tuple[_Node, subprocess.Popen[bytes], Path]] = []
        for node in self._nodes.values():
            out = node.directory / "format.log"
            with out.open("wb") as fh:
                procs.append(
                    (
                        node,
                        subprocess.Popen(
                            self._format_command(node),
                            stdin=subprocess.DEVNULL,
                            stdout=fh,
                            stderr=subprocess.STDOUT,
                            cwd=node.directory,
                        ),
                        out,
                    )
                )
        failures = []
        for node, proc, out in procs:
            try:
                code = proc.wait(max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            if code != 0:
                failures.append(f"node {node.node_id} (exit {code}):\n{_tail(out, 30)}")
        if failures:
            raise KafkaClusterError("kafka storage format failed:\n" + "\n".join(failures))

    def _launch(self, node: _Node) -> None:
        cmd = [*self._jvm(node, self.heap_mb), "kafka.Kafka", str(node.properties_file)]
        with node.stdout_log.open("ab") as fh:
            node.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                cwd=node.directory,
                start_new_session=True,
                preexec_fn=None if self.detached else _parent_death_signal_hook(),
            )
        if not self.detached and not self._atexit_registered:
            atexit.register(self._atexit_stop)
            self._atexit_registered = True

    def _terminate(self, nodes: list[_Node], timeout_s: float, graceful: bool = True) -> None:
        procs = [n.proc for n in nodes if n.proc is not None]
        for proc in procs:
            if proc.poll() is None:
                _signal_group(proc.pid, signal.SIGTERM if graceful else signal.SIGKILL)
        deadline = time.monotonic() + timeout_s
        for proc in procs:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()

    def _atexit_stop(self) -> None:
        self.stop(timeout_s=10)

    def _wait_ready(self, expected: set[int], deadline: float) -> None:
        last_seen: dict[int, bool] | str = "no answer yet"
        while True:
            for node in self._nodes.values():
                if node.node_id in expected and not node.running():
                    code = node.proc.returncode if node.proc is not None else None
                    raise KafkaClusterError(
                        f"kafka node {node.node_id} exited with code {code} while starting\n"
                        + self.log_tail(node.node_id)
                    )
            ready = [n for n in self._nodes.values() if n.node_id in expected]
            if all(_port_open(n.ports[self.listeners[0].name]) for n in ready):
                bootstrap = ",".join(f"{HOST}:{n.ports[self.listeners[0].name]}" for n in ready)
                try:
                    last_seen = describe_brokers(bootstrap, timeout_s=5,
                                                 settings=self._probe_settings())
                except Exception as exc:  # any client error just means "not yet"
                    last_seen = f"{type(exc).__name__}: {exc}"
                else:
                    if {b for b, fenced in last_seen.items() if not fenced} >= expected:
                        return
            if time.monotonic() > deadline:
                tails = "\n".join(self.log_tail(i) for i in sorted(expected))
                raise KafkaClusterError(
                    f"kafka brokers {sorted(expected)} not ready in time; last saw "
                    f"{last_seen}\n{tails}"
                )
            time.sleep(0.25)

    def _probe_settings(self) -> dict[str, Any]:
        if self.sasl is None:
            return {}
        settings: dict[str, Any] = self.sasl.client_settings()
        settings["security_protocol"] = self.listeners[0].security_protocol
        return settings

    def _node(self, node_id: int) -> _Node:
        self._require_started()
        try:
            return self._nodes[node_id]
        except KeyError:
            raise KeyError(f"no node {node_id}; nodes are {self.node_ids}") from None

    def _require_started(self) -> None:
        if not self._nodes:
            raise KafkaClusterError("cluster was never started")


def _escape(value: str) -> str:
    # java.util.Properties treats backslashes as escapes (JAAS configs, Windows paths).
    return value.replace("\\", "\\\\").replace("\n", "\\n")


# -- CLI ---------------------------------------------------------------------------------


def _read_state(directory: Path) -> dict[str, Any] | None:
    try:
        return json.loads((directory / STATE_FILE).read_text())  # type: ignore[no-any-return]
    except FileNotFoundError:
        return None
    except ValueError:
        return None


def _recorded_pids(state: Mapping[str, Any]) -> dict[int, str]:
    return {int(n["pid"]): str(n["properties"]) for n in state.get("nodes", []) if n.get("pid")}


def _state_alive(state: Mapping[str, Any]) -> bool:
    pids = _recorded_pids(state)
    if not pids or len(pids) != len(state.get("node_ids", [])):
        return False
    if not all(_is_our_node(pid, props) for pid, props in pids.items()):
        return False
    try:
        brokers = describe_brokers(str(state["bootstrap_servers"]), timeout_s=5)
    except Exception:
        return False
    return {b for b, fenced in brokers.items() if not fenced} >= set(state["node_ids"])


def _cmd_up(directory: Path, nodes: int, timeout_s: float) -> int:
    state = _read_state(directory)
    if state is not None:
        if _state_alive(state) and len(state["node_ids"]) == nodes:
            print(state["bootstrap_servers"])
            return 0
        terminate_pids(_recorded_pids(state), 30)
        (directory / STATE_FILE).unlink(missing_ok=True)
    cluster = KafkaCluster(directory, nodes, detached=True)
    started = time.monotonic()
    cluster.start(timeout_s=timeout_s)
    state = cluster.state()
    tmp = directory / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    tmp.replace(directory / STATE_FILE)
    print(
        f"kafka: {nodes} node(s) up in {time.monotonic() - started:.1f}s, logs under {directory}",
        file=sys.stderr,
    )
    print(state["bootstrap_servers"])
    return 0


def _cmd_down(directory: Path) -> int:
    state = _read_state(directory)
    if state is not None:
        terminate_pids(_recorded_pids(state), 30)
    (directory / STATE_FILE).unlink(missing_ok=True)
    return 0


def _cmd_status(directory: Path) -> int:
    state = _read_state(directory)
    if state is None or not _state_alive(state):
        print(f"kafka: no live cluster recorded in {directory / STATE_FILE}", file=sys.stderr)
        return 1
    print(state["bootstrap_servers"])
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `python -m dev.devkafka up|down|status --dir DIR`."""
    parser = argparse.ArgumentParser(prog="python -m dev.devkafka", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("up", "start a detached cluster (or reuse a live one) and print its bootstrap address"),
        ("down", "stop the recorded cluster"),
        ("status", "print the bootstrap address of a live cluster, else exit 1"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--dir", type=Path, required=True, help="cluster directory")
        if name == "up":
            cmd.add_argument("--nodes", type=int, default=1)
            cmd.add_argument("--timeout", type=float, default=120, help="seconds to wait")
    args = parser.parse_args(argv)
    # kafka-python logs every refused connection while the brokers boot; that is expected.
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    directory = args.dir.resolve()
    try:
        if args.command == "up":
            return _cmd_up(directory, args.nodes, args.timeout)
        if args.command == "down":
            return _cmd_down(directory)
        return _cmd_status(directory)
    except KafkaClusterError as exc:
        print(f"kafka: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
