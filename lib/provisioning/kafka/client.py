"""A connection to one cluster's admin API: metadata, configs and consumer groups.

Client construction from conf (credentials only from `Secret`s, never logged),
the cluster's identity and broker defaults, topic metadata and configs (KIP-525
sources kept), and which topics consumer groups use.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import kafka.errors as Errors
from kafka import KafkaAdminClient
from kafka.admin import ConfigResourceType
from kafka.protocol.admin import DescribeConfigsRequest

from provisioning import retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.errors import ClusterUnreachable
from provisioning.kafka import timing
from provisioning.kafka.codes import config_rows, error_name, retriable, topic_id_text
from provisioning.kafka.compat import send_to_node
from provisioning.kafka.sasl import sasl_login_error
from provisioning.kafka.tls import ssl_context

log = logging.getLogger(__name__)


class _BelowInfo(logging.Filter):
    """Drops DEBUG records: kafka-python's carry credentials (below)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.INFO


# kafka-python loggers whose DEBUG records carry credentials: the client config dump, and
# requests as objects (SaslAuthenticate) and as raw bytes. A filter on each (set once, when
# this adapter is imported) keeps them out of every handler, whatever level a caller sets.
_LEAKY_LOGGERS = ("kafka", "kafka.admin.client", "kafka.net.connection",
                  "kafka.protocol.parser")
_FILTER = _BelowInfo()
for _name in _LEAKY_LOGGERS:
    logging.getLogger(_name).addFilter(_FILTER)

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


@dataclass(frozen=True)
class ClusterState:
    """What DescribeCluster says of one cluster.

    broker_ids: the live brokers (registered and not fenced): the only targets of a replica.
    racks: broker id -> `broker.rack`, for the live brokers that have one (KIP-36).
    fenced_broker_ids: brokers registered but fenced (DescribeCluster v2, KIP-1073: Kafka
      3.9+ lists them when asked; older brokers leave them out, so this stays empty).
    """

    cluster_id: str | None
    controller_id: int | None
    broker_ids: tuple[int, ...]
    default_partitions: int | None = None
    default_replication_factor: int | None = None
    racks: Mapping[int, str] = field(default_factory=dict, hash=False)
    fenced_broker_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class PartitionState:
    """One partition as the metadata reports it (a PARTITION_STATE row)."""

    partition: int
    leader: int | None          # None: no leader (offline)
    replicas: tuple[int, ...]   # the broker's order: the first is the preferred leader
    isr: tuple[int, ...]        # sorted by broker id


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
    # In partition order; None when the topic could not be described.
    partition_states: tuple[PartitionState, ...] | None = None



def _partition_state(p: dict[str, Any]) -> PartitionState:
    leader = int(p.get("leader_id", -1))
    return PartitionState(
        partition=int(p["partition_index"]),
        leader=leader if leader >= 0 else None,
        replicas=tuple(int(b) for b in p.get("replica_nodes") or ()),
        isr=tuple(sorted(int(b) for b in p.get("isr_nodes") or ())),
    )


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
    if cluster.security_protocol in ("SSL", "SASL_SSL"):
        if (credentials is not None and credentials.tls is not None) or cluster.ssl_certfile:
            # The material the driver read, in memory (kafka.tls): executors have no files.
            settings["ssl_context"] = ssl_context(cluster, credentials)
        else:
            settings["ssl_check_hostname"] = cluster.ssl_check_hostname
            if cluster.ssl_cafile:
                settings["ssl_cafile"] = cluster.ssl_cafile
    if cluster.security_protocol.startswith("SASL"):
        if cluster.sasl_mechanism in ("OAUTHBEARER", "AWS_MSK_IAM"):
            # MSK IAM is OAUTHBEARER with a token signed for kafka-cluster:Connect.
            settings["sasl_mechanism"] = "OAUTHBEARER"
            settings["sasl_oauth_token_provider"] = _token_source(cluster, credentials)
            return settings
        if credentials is None or credentials.username is None \
                or credentials.password is None:
            raise ClusterUnreachable(f"cluster {cluster.name}: no SASL credentials were resolved")
        settings["sasl_mechanism"] = cluster.sasl_mechanism
        settings["sasl_plain_username"] = credentials.username.reveal()
        settings["sasl_plain_password"] = credentials.password.reveal()
    return settings


def _token_source(cluster: ClusterConf, credentials: Credentials | None) -> Any:
    source = credentials.tokens if credentials is not None else None
    if source is None:
        raise ClusterUnreachable(f"cluster {cluster.name}: no {cluster.sasl_mechanism} token "
                                 "source was made for it (kafka.tokens.token_sources)")
    return source


class ClusterAdmin:
    """An admin connection to one cluster: `connect()` then `close()`, or a `with` block."""

    def __init__(self, cluster: ClusterConf, credentials: Credentials | None,
                 kafka: KafkaConf) -> None:
        self.cluster = cluster
        self.kafka = kafka
        self._credentials = credentials
        self._client: KafkaAdminClient | None = None
        # While the controller is lost: when the requests of this admin stop resending it
        # (`retry.now()`); None while requests are answered. Shared by the requests of
        # one task, so a cluster that stays down costs `kafka.request_timeout_ms` once.
        self.lost_deadline: float | None = None

    def connect(self) -> ClusterAdmin:
        """Open the client (once); ClusterUnreachable says why it could not."""
        if self._client is not None:
            return self
        to = timing.recorder()
        started = time.time()
        source = self._credentials.tokens if self._credentials is not None else None
        if source is not None and self.cluster.security_protocol.startswith("SASL"):
            # Asked before the client: kafka-python would retry a failed token like a lost
            # connection; the source keeps it for the client's own logins.
            source.token()
        try:
            self._client = KafkaAdminClient(
                **client_settings(self.cluster, self._credentials, self.kafka)
            )
            if to is not None:
                to(timing.BOOTSTRAP, started, time.time() - started)
                timing.timed(self._client, to)
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

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            except Exception:
                log.warning("closing the admin client of %s failed", self.cluster.name)
            self._client = None

    def __enter__(self) -> ClusterAdmin:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def principal(self) -> str | None:
        """The job's principal on this cluster as Kafka's authorizer spells it: the conf's
        `principal` when it states one, else `User:<SASL user name>` (PLAIN and SCRAM, with
        Kafka's default principal builder), `User:<sub>` of an OAUTHBEARER JWT,
        `User:ANONYMOUS` over PLAINTEXT; None when only the broker knows it (SSL: the
        certificate's name; MSK IAM: the IAM identity)."""
        protocol = self.cluster.security_protocol
        credentials = self._credentials
        if self.cluster.principal is not None:
            return self.cluster.principal
        if protocol.startswith("SASL") and credentials is not None:
            if credentials.username is not None:
                return f"User:{credentials.username.reveal()}"
            subject = getattr(credentials.tokens, "subject", None)
            name = subject() if callable(subject) else None
            return f"User:{name}" if name else None
        if protocol == "PLAINTEXT":
            return "User:ANONYMOUS"
        return None

    @property
    def client(self) -> KafkaAdminClient:
        if self._client is None:
            raise RuntimeError("ClusterAdmin used outside its `with` block")
        return self._client

    # -- cluster and topic metadata -------------------------------------------

    def cluster_state(self) -> ClusterState:
        """Cluster id, controller, the live brokers with their racks, and the fenced ones."""
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
        # kafka-python asks with include_fenced_brokers (DescribeCluster v2): a fenced
        # broker is listed with is_fenced; before v2 it is not listed at all.
        listed = meta.get("brokers", [])
        fenced = tuple(sorted(int(b["broker_id"]) for b in listed if b.get("is_fenced")))
        brokers = tuple(sorted(int(b["broker_id"]) for b in listed if not b.get("is_fenced")))
        racks = {int(b["broker_id"]): str(b["rack"]) for b in listed
                 if not b.get("is_fenced") and b.get("rack")}
        controller = meta.get("controller_id")
        defaults = self._broker_defaults(brokers[0]) if brokers else {}
        return ClusterState(
            cluster_id=meta.get("cluster_id"),
            controller_id=None if controller is None or controller < 0 else int(controller),
            broker_ids=brokers,
            default_partitions=defaults.get("num.partitions"),
            default_replication_factor=defaults.get("default.replication.factor"),
            racks=dict(sorted(racks.items())),
            fenced_broker_ids=fenced,
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
        resource = (ConfigResourceType.BROKER, str(broker_id),
                    list(names) if names is not None else None)
        (result,) = self._describe_configs([resource], broker_id).results
        if result.error_code:
            raise Errors.for_code(result.error_code)(
                f"DescribeConfigs of broker {broker_id}: {result.error_message}")
        return config_rows(result.configs, only_non_default=False)

    def _describe_configs(self, resources: Sequence[tuple[Any, str, list[str] | None]],
                          node_id: int | None = None) -> Any:
        """One DescribeConfigs request (to `node_id`, or any broker), its response as the
        broker sent it. kafka-python's describe_configs turns every entry into a dict
        through its enums (most of a 1,000-topic read's time) and drops each resource's
        error code."""
        request = DescribeConfigsRequest(resources=list(resources), include_synonyms=False,
                                         min_version=1)
        return send_to_node(self.client, node_id, request,
                            use="DescribeConfigs with each resource's error code")

    def describe_topics(self, names: Sequence[str] | None = None) -> list[LiveTopic]:
        """Metadata of `names` (all topics when None); unknown names come back with an error."""
        result = []
        for t in self.client.describe_topics(list(names) if names is not None else None):
            code = int(t.get("error_code", 0) or 0)
            parts = t.get("partitions") or []
            assignment = {int(p["partition_index"]): [int(b) for b in p["replica_nodes"]]
                          for p in parts}
            rf = len(next(iter(assignment.values()))) if assignment else None
            states = tuple(sorted((_partition_state(p) for p in parts),
                                  key=lambda s: s.partition))
            result.append(LiveTopic(
                name=t["name"],
                topic_id=topic_id_text(t.get("topic_id")),
                internal=bool(t.get("is_internal", False)),
                partitions=len(parts) if code == 0 else None,
                replication_factor=rf if code == 0 else None,
                replica_assignment=assignment if code == 0 else None,
                error_name=None if code == 0 else error_name(code),
                leaderless_partitions=sum(1 for p in parts if int(p.get("leader_id", -1)) < 0),
                partition_states=states if code == 0 else None,
            ))
        return result

    def topic_configs(self, names: Sequence[str], only_non_default: bool = True,
                      batch: int = 500) -> dict[str, list[dict[str, Any]]]:
        """Config entries per topic (only the ones somebody set, unless told otherwise).

        Topics whose configs the broker refused (no DescribeConfigs, KIP-525's
        authorization) or no longer has are left out: unknown, never "no overrides". One
        DescribeConfigs per `batch` topics, up to `kafka.max_in_flight_requests` of them at
        once.
        """
        found: dict[str, list[dict[str, Any]]] = {}

        def describe(chunk: Sequence[str]) -> Any:
            return self._describe_configs([(ConfigResourceType.TOPIC, n, None)
                                           for n in chunk])

        chunks = [names[start:start + batch] for start in range(0, len(names), batch)]
        # Up to kafka.max_in_flight_requests chunks are asked at once.
        window = max(1, min(len(chunks), self.kafka.max_in_flight_requests))
        if window == 1:
            answers = [describe(chunk) for chunk in chunks]
        else:
            with ThreadPoolExecutor(window, thread_name_prefix="describe-configs") as pool:
                answers = list(pool.map(describe, chunks))
        for response in answers:
            for result in response.results:
                if result.error_code:
                    continue
                found[result.resource_name] = config_rows(result.configs, only_non_default)
        return found

    def sees_every_group(self, deadline: float) -> bool:
        """Whether ListGroups shows this principal every consumer group.

        The broker lists all groups to a principal with Describe on the cluster and
        otherwise only the groups it may describe; describing a random group name
        tells whether that is any group (Describe on Group `*`). Asked until `deadline`
        (`retry.now()`) while the broker answers with a retriable error (`retry.settle`).
        """
        if "DESCRIBE" in (self.client.describe_cluster().get("authorized_operations") or []):
            return True
        probe = f"topic-provisioning-probe-{uuid.uuid4().hex}"
        try:
            # The first FindCoordinator of a cluster creates __consumer_offsets and
            # answers COORDINATOR_NOT_AVAILABLE until it has a leader.
            retry.settle(lambda: self.client.describe_groups([probe]), deadline, retriable)
            return True
        except Errors.GroupAuthorizationFailedError:
            return False
        except Errors.KafkaError as exc:
            log.info("cluster %s: cannot tell whether every consumer group is "
                     "visible (%s)", self.cluster.name, type(exc).__name__)
            return False

    def committed_offsets(self) -> dict[str, dict[tuple[str, int], int]] | None:
        """Group -> (topic, partition) -> committed offset, for every consumer group.

        None when the principal may not see every group: a judgement over part of the
        groups (an in-use check, a topic's readers) would be wrong without a word. A
        broker's retriable answers are asked again within one `kafka.request_timeout_ms`
        for the whole read; then the error is raised.
        """
        deadline = retry.deadline_in(self.kafka.request_timeout_ms / 1000)
        if not self.sees_every_group(deadline):
            log.info("cluster %s: not every consumer group is visible; the groups' "
                     "committed offsets are unknown", self.cluster.name)
            return None
        # A broker whose group coordinator has just started answers ListGroups with
        # COORDINATOR_LOAD_IN_PROGRESS while it reads __consumer_offsets.
        groups = [g["group_id"] for g in retry.settle(self.client.list_groups, deadline,
                                                          retriable)]
        if not groups:
            return {}
        # OffsetFetch goes to each group's coordinator, which kafka-python keeps once
        # found: only a coordinator still loading is asked again (one that moved would be
        # asked again at the same broker).
        answers = retry.settle(lambda: self.client.list_group_offsets(groups), deadline,
                               lambda exc: isinstance(exc, Errors.CoordinatorLoadInProgressError))
        return {group: {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()
                        if meta.offset is not None and meta.offset >= 0}
                for group, offsets in answers.items()}

    def topics_in_use(self) -> dict[str, list[str]] | None:
        """Topic -> consumer groups that hold committed offsets on it (None: unknown, as
        `committed_offsets`)."""
        committed = self.committed_offsets()
        if committed is None:
            return None
        readers: dict[str, set[str]] = {}
        for group, offsets in committed.items():
            for topic, _ in offsets:
                readers.setdefault(topic, set()).add(group)
        return {topic: sorted(g) for topic, g in readers.items()}
