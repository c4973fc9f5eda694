"""The one adapter to the Kafka admin API (kafka-python 3.x).

Everything that knows kafka-python lives here: client construction from conf,
metadata and config snapshots, batched CreateTopics / DeleteTopics with
per-topic error mapping (the client's `raise_errors=False` path), throttling
retries and the KIP-525 configs of a CreateTopics response.
"""

from __future__ import annotations

import base64
import logging
import socket
import ssl
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kafka.errors as Errors
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.net.sasl import get_sasl_mechanism
from kafka.protocol.admin import CreateTopicsRequest, DeleteTopicsRequest
from kafka.protocol.parser import KafkaProtocol
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.errors import ClusterUnreachable

log = logging.getLogger(__name__)


_CONFIG_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}
# Sources that mean "somebody set this", as opposed to a broker or built-in default.
_NON_DEFAULT_SOURCES = {"DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "UNKNOWN"}

# kafka-python loggers whose DEBUG records carry credentials: the client config dump, and
# requests as objects (SaslAuthenticate) and as raw bytes.
_LEAKY_LOGGERS = ("kafka", "kafka.admin.client", "kafka.net.connection",
                  "kafka.protocol.parser")

_CONNECT_ERRORS: tuple[type[BaseException], ...] = (
    Errors.KafkaConnectionError,
    Errors.KafkaTimeoutError,
    Errors.NodeNotReadyError,
)
_AUTH_ERRORS: tuple[type[BaseException], ...] = (
    Errors.SaslAuthenticationFailedError,
    Errors.IllegalSaslStateError,
    Errors.UnsupportedSaslMechanismError,
    Errors.ClusterAuthorizationFailedError,
)


# How long a request may wait for a throttled connection to reopen before it fails.
THROTTLE_PAUSE_LIMIT_S = 300.0


def error_name(code: int) -> str:
    """The name Kafka's Errors enum gives a code (0 -> NONE, 36 -> TOPIC_ALREADY_EXISTS)."""
    return "NONE" if code == 0 else str(Errors.for_code(code).message)


def topic_id_text(value: Any) -> str | None:
    """A topic id as Kafka prints it (URL-safe base64, no padding); None for the zero id."""
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        raw = value.bytes
    elif isinstance(value, bytes | bytearray):
        raw = bytes(value)
    else:
        # kafka-python's to_dict() renders ids as hyphenated UUID strings.
        raw = uuid.UUID(str(value)).bytes
    if raw == bytes(16):
        return None
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def topic_id_uuid(text: str) -> uuid.UUID:
    """Inverse of `topic_id_text`."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


@dataclass(frozen=True)
class ClusterState:
    cluster_id: str | None
    controller_id: int | None
    broker_ids: tuple[int, ...]
    default_partitions: int | None = None
    default_replication_factor: int | None = None


@dataclass(frozen=True)
class LiveTopic:
    name: str
    topic_id: str | None
    internal: bool
    partitions: int | None
    replication_factor: int | None
    replica_assignment: dict[int, list[int]] | None
    error_name: str | None
    leaderless_partitions: int = 0


@dataclass(frozen=True)
class TopicRequest:
    """One CreateTopics entry; partitions / replication_factor None = broker default."""

    name: str
    partitions: int | None
    replication_factor: int | None
    replica_assignment: Mapping[int, Sequence[int]] | None
    configs: Mapping[str, str]


def config_entry(name: str, value: str | None, source: str, read_only: bool,
                 sensitive: bool) -> dict[str, Any]:
    """One CONFIG_ENTRY row; a sensitive value is never kept."""
    return {
        "name": name,
        "value": None if sensitive else value,
        "source": source,
        "read_only": bool(read_only),
        "sensitive": bool(sensitive),
    }


class _Settings(dict[str, Any]):
    """Client settings that keep the SASL password out of their repr (tracebacks, logs)."""

    def __repr__(self) -> str:
        return repr({k: "***" if k == "sasl_plain_password" else v for k, v in self.items()})

    __str__ = __repr__


def client_settings(cluster: ClusterConf, credentials: Credentials | None,
                    kafka: KafkaConf) -> dict[str, Any]:
    """kafka-python admin client settings for one cluster."""
    settings: dict[str, Any] = _Settings({
        "bootstrap_servers": cluster.bootstrap_servers.split(","),
        "client_id": cluster.client_id,
        "security_protocol": cluster.security_protocol,
        "request_timeout_ms": kafka.request_timeout_ms,
        "bootstrap_timeout_ms": min(kafka.request_timeout_ms, 30000),
        "reconnect_backoff_max_ms": 2000,
    })
    if cluster.ssl_cafile:
        settings["ssl_cafile"] = cluster.ssl_cafile
    if cluster.security_protocol.startswith("SASL"):
        if credentials is None:
            raise ClusterUnreachable(f"cluster {cluster.name}: no SASL credentials were resolved")
        settings["sasl_mechanism"] = cluster.sasl_mechanism
        settings["sasl_plain_username"] = credentials.username.reveal()
        settings["sasl_plain_password"] = credentials.password.reveal()
    return settings


class ClusterAdmin:
    """An admin connection to one cluster; use as a context manager."""

    def __init__(self, cluster: ClusterConf, credentials: Credentials | None,
                 kafka: KafkaConf) -> None:
        self.cluster = cluster
        self.kafka = kafka
        self._credentials = credentials
        self._client: KafkaAdminClient | None = None

    def __enter__(self) -> ClusterAdmin:
        # kafka-python logs its whole client configuration, credentials included, at DEBUG,
        # and every request (a PLAIN login's bytes hold the password): whatever the caller's
        # logging, that level never reaches a handler, even where set on a child logger.
        for name in _LEAKY_LOGGERS:
            leaky = logging.getLogger(name)
            if leaky.getEffectiveLevel() < logging.INFO:
                leaky.setLevel(logging.INFO)
        try:
            self._client = KafkaAdminClient(
                **client_settings(self.cluster, self._credentials, self.kafka)
            )
        except _AUTH_ERRORS as exc:
            raise ClusterUnreachable(
                f"cluster {self.cluster.name}: authentication failed "
                f"({type(exc).__name__})"
            ) from None
        except _CONNECT_ERRORS as exc:
            # kafka-python retries a refused login like a lost connection until the
            # bootstrap times out, so ask the broker once more, directly.
            refused = sasl_login_error(self.cluster, self._credentials, self.kafka)
            if refused is not None:
                raise ClusterUnreachable(
                    f"cluster {self.cluster.name}: authentication failed ({refused})"
                ) from None
            raise ClusterUnreachable(
                f"cluster {self.cluster.name} at {self.cluster.bootstrap_servers} is "
                f"unreachable ({type(exc).__name__})"
            ) from None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            try:
                self._client.close()
            except Exception:
                log.warning("closing the admin client of %s failed", self.cluster.name)
            self._client = None

    @property
    def client(self) -> KafkaAdminClient:
        if self._client is None:
            raise RuntimeError("ClusterAdmin used outside its `with` block")
        return self._client

    # -- cluster and topic metadata -------------------------------------------

    def cluster_state(self) -> ClusterState:
        """Cluster id, controller and the live brokers."""
        try:
            meta = self.client.describe_cluster()
        except _AUTH_ERRORS as exc:
            raise ClusterUnreachable(
                f"cluster {self.cluster.name}: authentication failed ({type(exc).__name__})"
            ) from None
        except _CONNECT_ERRORS as exc:
            raise ClusterUnreachable(
                f"cluster {self.cluster.name}: describe cluster failed ({type(exc).__name__})"
            ) from None
        brokers = tuple(sorted(int(b["broker_id"]) for b in meta.get("brokers", [])))
        controller = meta.get("controller_id")
        defaults = self._broker_defaults(brokers[0]) if brokers else {}
        return ClusterState(
            cluster_id=meta.get("cluster_id"),
            controller_id=None if controller is None or controller < 0 else int(controller),
            broker_ids=brokers,
            default_partitions=defaults.get("num.partitions"),
            default_replication_factor=defaults.get("default.replication.factor"),
        )

    def _broker_defaults(self, broker_id: int) -> dict[str, int]:
        """num.partitions and default.replication.factor; empty when not authorized
        (DescribeConfigs on the cluster)."""
        wanted = ["num.partitions", "default.replication.factor"]
        try:
            entries = self.broker_configs(broker_id, wanted)
        except Errors.KafkaError as exc:
            log.info("cluster %s: broker defaults not readable (%s)", self.cluster.name,
                     type(exc).__name__)
            return {}
        found = {}
        for entry in entries:
            value = entry["value"]
            if value is not None and str(value).lstrip("-").isdigit():
                found[entry["name"]] = int(value)
        return found

    def broker_configs(self, broker_id: int, names: Sequence[str] | None = None
                       ) -> list[dict[str, Any]]:
        """CONFIG_ENTRY rows of one broker (all of them, or `names`), sensitive values null."""
        described = self.client.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, str(broker_id),
                            list(names) if names is not None else None)],
            config_filter="all")
        entries = described.get("broker", {}).get(str(broker_id), {})
        return _config_rows(entries, only_non_default=False)

    def describe_topics(self, names: Sequence[str] | None = None) -> list[LiveTopic]:
        """Metadata of `names` (all topics when None); unknown names come back with an error."""
        result = []
        for t in self.client.describe_topics(list(names) if names is not None else None):
            code = int(t.get("error_code", 0) or 0)
            parts = t.get("partitions") or []
            assignment = {int(p["partition_index"]): [int(b) for b in p["replica_nodes"]]
                          for p in parts}
            rf = len(next(iter(assignment.values()))) if assignment else None
            result.append(LiveTopic(
                name=t["name"],
                topic_id=topic_id_text(t.get("topic_id")),
                internal=bool(t.get("is_internal", False)),
                partitions=len(parts) if code == 0 else None,
                replication_factor=rf if code == 0 else None,
                replica_assignment=assignment if code == 0 else None,
                error_name=None if code == 0 else error_name(code),
                leaderless_partitions=sum(1 for p in parts if int(p.get("leader_id", -1)) < 0),
            ))
        return result

    def topic_configs(self, names: Sequence[str], only_non_default: bool = True,
                      batch: int = 500) -> dict[str, list[dict[str, Any]]]:
        """Config entries per topic (only the ones somebody set, unless told otherwise).

        Topics whose configs the broker refused (no DescribeConfigs, KIP-525's
        authorization) or no longer has are left out: unknown, never "no overrides".
        """
        found: dict[str, list[dict[str, Any]]] = {}
        for start in range(0, len(names), batch):
            chunk = names[start:start + batch]
            resources = [ConfigResource(ConfigResourceType.TOPIC, n) for n in chunk]
            described = self.client.describe_configs(resources, config_filter="all")
            for topic, entries in described.get("topic", {}).items():
                # kafka-python drops DescribeConfigs' per-resource error code; with
                # config_filter="all" a topic the broker described always has entries.
                if not entries:
                    continue
                found[topic] = _config_rows(entries, only_non_default)
        return found

    def sees_every_group(self) -> bool:
        """Whether ListGroups shows this principal every consumer group.

        The broker lists all groups to a principal with Describe on the cluster and
        otherwise only the groups it may describe; describing a random group name
        tells whether that is any group (Describe on Group `*`).
        """
        if "DESCRIBE" in (self.client.describe_cluster().get("authorized_operations") or []):
            return True
        probe = f"topic-provisioning-probe-{uuid.uuid4().hex}"
        deadline = time.monotonic() + self.kafka.request_timeout_ms / 1000
        while True:
            try:
                self.client.describe_groups([probe])
                return True
            except Errors.GroupAuthorizationFailedError:
                return False
            except Errors.KafkaError as exc:
                # The first FindCoordinator of a cluster creates __consumer_offsets and
                # answers COORDINATOR_NOT_AVAILABLE until it has a leader.
                if not exc.retriable or time.monotonic() >= deadline:
                    log.info("cluster %s: cannot tell whether every consumer group is "
                             "visible (%s)", self.cluster.name, type(exc).__name__)
                    return False
            time.sleep(0.25)

    def topics_in_use(self) -> dict[str, list[str]] | None:
        """Topic -> consumer groups that hold committed offsets on it.

        None when the principal may not see every group: an in-use check over part
        of the groups would let a deletion through that must not happen.
        """
        if not self.sees_every_group():
            log.info("cluster %s: not every consumer group is visible; topics in use are "
                     "unknown", self.cluster.name)
            return None
        groups = [g["group_id"] for g in self.client.list_groups()]
        if not groups:
            return {}
        users: dict[str, set[str]] = {}
        for group, offsets in self.client.list_group_offsets(groups).items():
            for tp, meta in offsets.items():
                if meta.offset is not None and meta.offset >= 0:
                    users.setdefault(tp.topic, set()).add(group)
        return {topic: sorted(g) for topic, g in users.items()}

    # -- CreateTopics / DeleteTopics -----------------------------------------

    def create_topics(self, requests: Sequence[TopicRequest], validate_only: bool,
                      timeout_ms: int | None = None) -> list[dict[str, Any]]:
        """One CreateTopics request per call; retries throttled topics; a result per topic."""
        pending = {r.name: r for r in requests}
        results: dict[str, dict[str, Any]] = {}
        attempts = 0
        while pending:
            attempts += 1
            response = self._send_create(list(pending.values()), validate_only,
                                         timeout_ms or self._create_timeout(validate_only))
            throttled = []
            for topic in response.topics:
                row = _create_result(topic)
                row["attempts"] = attempts
                if row["error_code"] == Errors.ThrottlingQuotaExceededError.errno \
                        and attempts <= self.kafka.throttle_retries:
                    throttled.append(topic.name)
                    continue
                results[topic.name] = row
                pending.pop(topic.name, None)
            if not throttled:
                # A topic the broker did not answer for must not vanish from the audit.
                for name in list(pending):
                    results[name] = _missing_result(name, attempts)
                    pending.pop(name)
                break
            pending = {n: pending[n] for n in throttled}
            delay = max(int(getattr(response, "throttle_time_ms", 0) or 0), 100)
            log.info("cluster %s: %d topic(s) throttled, retrying in %d ms",
                     self.cluster.name, len(throttled), delay)
            time.sleep(delay / 1000)
        return [results[r.name] for r in requests]

    def _create_timeout(self, validate_only: bool) -> int:
        # The KIP-4 timeout bounds the wait for creations to complete; a validateOnly
        # request completes nothing, so only the client's request timeout applies to it.
        return self.kafka.request_timeout_ms if validate_only else self.kafka.operation_timeout_ms

    def _send_create(self, requests: Sequence[TopicRequest], validate_only: bool,
                     timeout_ms: int) -> Any:
        topic_cls = CreateTopicsRequest.CreatableTopic
        assignment_cls = topic_cls.CreatableReplicaAssignment
        config_cls = topic_cls.CreatableTopicConfig
        topics = [
            topic_cls(
                name=r.name,
                num_partitions=-1 if r.replica_assignment or r.partitions is None
                else r.partitions,
                replication_factor=-1 if r.replica_assignment or r.replication_factor is None
                else r.replication_factor,
                assignments=[assignment_cls(partition_index=int(p), broker_ids=list(b))
                             for p, b in sorted((r.replica_assignment or {}).items())],
                configs=[config_cls(name=k, value=v) for k, v in sorted(r.configs.items())],
            )
            for r in requests
        ]
        request = CreateTopicsRequest(topics=topics, timeout_ms=timeout_ms,
                                      validate_only=validate_only)
        return self._to_controller(request, lambda resp: (t.error_code for t in resp.topics))

    def delete_topics(self, topics: Sequence[tuple[str, str | None]],
                      timeout_ms: int | None = None) -> list[dict[str, Any]]:
        """Delete (name, topic_id) pairs; by id when known, so a recreated name is safe."""
        pending = list(topics)
        results: dict[str, dict[str, Any]] = {}
        attempts = 0
        state_cls = DeleteTopicsRequest.DeleteTopicState
        while pending:
            attempts += 1
            by_id = {tid: name for name, tid in pending if tid}
            request = DeleteTopicsRequest(
                topics=[state_cls(topic_id=topic_id_uuid(tid)) if tid else state_cls(name=name)
                        for name, tid in pending],
                timeout_ms=timeout_ms or self.kafka.operation_timeout_ms,
            )
            response = self._to_controller(
                request, lambda resp: (r.error_code for r in resp.responses))
            throttled = []
            for r in response.responses:
                name = r.name or by_id.get(topic_id_text(r.topic_id) or "", "")
                code = int(r.error_code)
                if code == Errors.ThrottlingQuotaExceededError.errno \
                        and attempts <= self.kafka.throttle_retries:
                    throttled.append(name)
                    continue
                results[name] = {
                    "topic": name,
                    "topic_id": topic_id_text(r.topic_id),
                    "error_code": code,
                    "error_name": error_name(code),
                    "error_message": getattr(r, "error_message", None),
                    "attempts": attempts,
                }
            if not throttled:
                for name, _ in pending:
                    results.setdefault(name, _missing_result(name, attempts))
                break
            pending = [(n, t) for n, t in pending if n in throttled]
            time.sleep(max(int(getattr(response, "throttle_time_ms", 0) or 0), 100) / 1000)
        return [results[name] for name, _ in topics]

    def _to_controller(self, request: Any, codes: Any) -> Any:
        # The public create/delete helpers drop throttle_time_ms, which KIP-599 retries
        # need, so requests go through the client's controller routing directly.
        client = self.client
        # After a response carrying a throttle time, kafka-python pauses the connection
        # and refuses sends with NodeNotReadyError until the throttle ends (KIP-219).
        deadline = time.monotonic() + THROTTLE_PAUSE_LIMIT_S
        delay = 0.1
        while True:
            try:
                return client._manager.run(
                    client._send_request_to_controller,
                    request,
                    lambda resp: (Errors.for_code(c) for c in codes(resp)),
                    False,
                )
            except Errors.NodeNotReadyError as exc:
                if "throttle" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 2.0)


def _config_rows(entries: Mapping[str, Mapping[str, Any]], only_non_default: bool
                 ) -> list[dict[str, Any]]:
    """CONFIG_ENTRY rows from kafka-python's describe_configs entries, by name."""
    rows = []
    for name, e in sorted(entries.items()):
        source = str(e.get("config_source", "UNKNOWN"))
        if only_non_default and source not in _NON_DEFAULT_SOURCES:
            continue
        rows.append(config_entry(name, e.get("value"), source, bool(e.get("read_only")),
                                 bool(e.get("is_sensitive"))))
    return rows


def _create_result(topic: Any) -> dict[str, Any]:
    code = int(topic.error_code)
    config_error = getattr(topic, "topic_config_error_code", None)
    # KIP-525: without DescribeConfigs the broker sends an empty list and an error
    # code; the configs are unknown, not "nothing set". A refused topic has none at all.
    configs = None if config_error or code else getattr(topic, "configs", None)
    partitions = getattr(topic, "num_partitions", -1)
    rf = getattr(topic, "replication_factor", -1)
    return {
        "topic": topic.name,
        "topic_id": topic_id_text(getattr(topic, "topic_id", None)),
        "error_code": code,
        "error_name": error_name(code),
        "error_message": getattr(topic, "error_message", None),
        "result_partitions": partitions if partitions is not None and partitions >= 0 else None,
        "result_replication_factor": rf if rf is not None and rf >= 0 else None,
        "result_configs": None if configs is None else [
            config_entry(c.name, c.value, _CONFIG_SOURCES.get(int(c.config_source), "UNKNOWN"),
                         c.read_only, c.is_sensitive)
            for c in sorted(configs, key=lambda c: c.name)
        ],
        "topic_config_error_code": int(config_error) if config_error else None,
    }


def _missing_result(name: str, attempts: int) -> dict[str, Any]:
    return {
        "topic": name,
        "topic_id": None,
        "error_code": -1,
        "error_name": "UNKNOWN_SERVER_ERROR",
        "error_message": "the broker's response did not mention this topic",
        "attempts": attempts,
    }


def sasl_login_error(cluster: ClusterConf, credentials: Credentials | None,
                     kafka: KafkaConf) -> str | None:
    """Log in once to each bootstrap server; the broker's reason if it refused the login.

    kafka-python reads the broker's SaslAuthenticate error and the connection
    close that follows it as one lost connection and keeps retrying, so a wrong
    password looks like an unreachable cluster. This asks over a plain blocking
    socket instead. None: not a SASL cluster, no server reachable, or the login
    worked (the failure was something else).
    """
    if credentials is None or not cluster.security_protocol.startswith("SASL"):
        return None
    timeout_s = min(kafka.request_timeout_ms, 10000) / 1000
    for server in cluster.bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        host = host.strip("[]")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout_s) as raw:
                sock = raw
                if cluster.security_protocol == "SASL_SSL":
                    context = ssl.create_default_context(cafile=cluster.ssl_cafile)
                    sock = context.wrap_socket(raw, server_hostname=host)
                return _sasl_exchange(sock, cluster, credentials)
        except (OSError, Errors.KafkaError, ValueError) as exc:
            log.info("cluster %s: login probe of %s failed (%s)", cluster.name, server,
                     type(exc).__name__)
            continue
    return None


def _sasl_exchange(sock: socket.socket, cluster: ClusterConf, credentials: Credentials
                   ) -> str | None:
    parser = KafkaProtocol(client_id=cluster.client_id)

    def call(request: Any) -> Any:
        parser.send_request(request)
        sock.sendall(parser.send_bytes())
        while True:
            data = sock.recv(65536)
            if not data:
                raise Errors.KafkaConnectionError("the broker closed the connection")
            for _, response in parser.receive_bytes(data):
                return response

    handshake = SaslHandshakeRequest(mechanism=cluster.sasl_mechanism)
    handshake.API_VERSION = 1
    response = call(handshake)
    if response.error_code:
        return (f"{error_name(response.error_code)}: the broker offers "
                f"{', '.join(response.mechanisms)}")
    mechanism = get_sasl_mechanism(cluster.sasl_mechanism)(
        host=sock.getpeername()[0],
        security_protocol=cluster.security_protocol,
        sasl_mechanism=cluster.sasl_mechanism,
        sasl_plain_username=credentials.username.reveal(),
        sasl_plain_password=credentials.password.reveal(),
    )
    while not mechanism.is_done():
        request = SaslAuthenticateRequest(auth_bytes=mechanism.auth_bytes())
        request.API_VERSION = 1
        response = call(request)
        if response.error_code:
            message = _without(response.error_message or "", credentials)
            return f"{error_name(response.error_code)}: {message}".rstrip(": ")
        mechanism.receive(response.auth_bytes)
    return None if mechanism.is_authenticated() else "the broker's answer did not verify"


def _without(text: str, credentials: Credentials) -> str:
    """`text` with the password cut out, whatever a broker chose to echo."""
    password = credentials.password.reveal()
    return text.replace(password, "***") if password else text


def batches(requests: Iterable[TopicRequest], batch_size: int, max_partitions: int,
            max_records: int, partitions_of: Mapping[str, int] | None = None
            ) -> Iterator[list[TopicRequest]]:
    """Split requests so no CreateTopics exceeds the topic, partition or record caps.

    Records per topic = 1 topic record + one per partition + one per config (the
    controller's count); `partitions_of` overrides the count for topics whose
    partitions were left to the broker default (known after validateOnly).
    """
    current: list[TopicRequest] = []
    parts = records = 0
    for r in requests:
        n = _partition_count(r, partitions_of)
        cost = 1 + n + len(r.configs)
        if current and (len(current) >= batch_size or parts + n > max_partitions
                        or records + cost > max_records):
            yield current
            current, parts, records = [], 0, 0
        current.append(r)
        parts += n
        records += cost
    if current:
        yield current


def _partition_count(r: TopicRequest, known: Mapping[str, int] | None) -> int:
    if r.replica_assignment:
        return len(r.replica_assignment)
    if r.partitions is not None:
        return r.partitions
    if known and r.name in known:
        return known[r.name]
    return 1
