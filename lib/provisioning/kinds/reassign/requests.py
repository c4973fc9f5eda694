"""Replica moves (KIP-455) and their replication throttles, request by request.

- `alter_reassignments`: batched AlterPartitionReassignments to the controller, one answer
  per partition (its own error code, or the request's);
- `list_reassignments`: the partitions being moved now (ListPartitionReassignments);
- `throttled_replicas`, `throttle_topics`: the `partition:broker` lists a move throttles
  (leader side: the partition's current replicas; follower side: the replicas being
  added, as kafka-reassign-partitions does), APPENDed to or SUBTRACTed from each topic's
  `leader.replication.throttled.replicas` / `follower.replication.throttled.replicas`;
- `broker_rates`, `set_broker_rates`, `remove_broker_rates`: the brokers' throttle rates
  (`leader.replication.throttled.rate`, `follower.replication.throttled.rate`), read from
  and written to each broker itself (a broker refuses another broker's configs): what is
  set is returned, so a caller never overwrites a value somebody else set;
- `bytes_left`: how much a move still has to copy, from each broker's DescribeLogDirs.

Requests to one broker go through `compat.send_to_node`; to the controller through
`requests.to_controller` (resent when the controller is lost: a reassignment to the same
target, a config APPEND or SUBTRACT, SET or DELETE are the same change sent twice).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kafka.errors as Errors
from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    IncrementalAlterConfigsRequest,
    ListPartitionReassignmentsRequest,
)

from provisioning import names, retry
from provisioning.kafka import requests
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.codes import config_rows, error_name
from provisioning.kafka.compat import send_to_node

log = logging.getLogger(__name__)

# ConfigResource type of a broker (DescribeConfigs, IncrementalAlterConfigs).
_BROKER_RESOURCE = 4
# Config sources that mean "somebody set this rate" (as opposed to Kafka's default).
_SET_SOURCES = frozenset({"DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG",
                          "STATIC_BROKER_CONFIG"})
_BROKER_OWN = "DYNAMIC_BROKER_CONFIG"

Partition = tuple[str, int]


@dataclass(frozen=True)
class Move:
    """One partition's target replicas (the first is the preferred leader); None cancels
    the partition's reassignment in progress."""

    topic: str
    partition: int
    replicas: tuple[int, ...] | None


@dataclass(frozen=True)
class Ongoing:
    """A partition being reassigned: `replicas` is the target followed by the replicas
    being removed (KIP-455); `adding` and `removing` the difference, sorted."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def target(self) -> tuple[int, ...]:
        """Where the move goes."""
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def before(self) -> tuple[int, ...]:
        """The replicas the partition had when the move started."""
        return tuple(r for r in self.replicas if r not in self.adding)


@dataclass(frozen=True)
class RateSetting:
    """A throttle rate a broker has set: its value (bytes per second) and where it comes
    from (DYNAMIC_BROKER_CONFIG: this broker's own; DYNAMIC_DEFAULT_BROKER_CONFIG: the
    cluster-wide default; STATIC_BROKER_CONFIG: its server.properties)."""

    value: str | None
    source: str


@dataclass(frozen=True)
class Throttle:
    """The `partition:broker` entries of one topic's throttled replicas."""

    leader: tuple[str, ...] = ()
    follower: tuple[str, ...] = ()


# -- moves ---------------------------------------------------------------------------------

def _answer(code: int, message: str | None, attempts: int = 1) -> dict[str, Any]:
    return {"error_code": code, "error_name": error_name(code), "error_message": message or None,
            "attempts": attempts}


def alter_reassignments(admin: ClusterAdmin, moves: Sequence[Move], batch: int = 1000,
                        timeout_ms: int | None = None) -> list[dict[str, Any]]:
    """AlterPartitionReassignments for `moves`, `batch` partitions per request; one answer
    per move, in order: topic, partition, error_code, error_name, error_message, attempts
    (and resent_after when a lost answer made it resend).

    A request-level error (say CLUSTER_AUTHORIZATION_FAILED) answers for each of its
    partitions. Connection errors after the retries are raised (the caller cannot tell
    which batches reached the controller).
    """
    topic_cls = AlterPartitionReassignmentsRequest.ReassignableTopic
    partition_cls = topic_cls.ReassignablePartition
    timeout = timeout_ms or admin.kafka.request_timeout_ms
    answers: dict[Partition, dict[str, Any]] = {}
    for start in range(0, len(moves), max(1, batch)):
        chunk = moves[start:start + max(1, batch)]
        by_topic: dict[str, list[Move]] = {}
        for m in chunk:
            by_topic.setdefault(m.topic, []).append(m)
        # A replication factor change is what these moves are for (KIP-860: v1 refuses
        # one unless asked; v0 never refuses it).
        request = AlterPartitionReassignmentsRequest(
            timeout_ms=timeout, allow_replication_factor_change=True, topics=[
                topic_cls(name=topic, partitions=[
                    partition_cls(partition_index=m.partition,
                                  replicas=None if m.replicas is None else list(m.replicas))
                    for m in ms])
                for topic, ms in by_topic.items()])
        resent: list[BaseException] = []
        response = requests.to_controller(
            admin, request,
            lambda r: [r.error_code, *(p.error_code for t in r.responses for p in t.partitions)],
            resent)
        top = int(response.error_code)
        for t in response.responses:
            for p in t.partitions:
                code = int(p.error_code) or top
                answers[(t.name, int(p.partition_index))] = _answer(
                    code, p.error_message if p.error_code else response.error_message)
        for m in chunk:
            found = answers.setdefault((m.topic, m.partition), _answer(
                top or -1, response.error_message if top else
                "the broker's response did not mention this partition"))
            found.update(topic=m.topic, partition=m.partition)
            if resent:
                found["resent_after"] = str(resent[0]) or type(resent[0]).__name__
    return [answers[(m.topic, m.partition)] for m in moves]


def list_reassignments(admin: ClusterAdmin, topics: Iterable[str] | None = None
                       ) -> dict[Partition, Ongoing]:
    """(topic, partition) -> Ongoing for every partition being reassigned now (of `topics`
    only, when given). Raises the request's error (a KafkaError) when it failed."""
    request = ListPartitionReassignmentsRequest(timeout_ms=admin.kafka.request_timeout_ms,
                                                topics=None)
    response = requests.to_controller(admin, request, lambda r: [r.error_code])
    if response.error_code:
        raise Errors.for_code(response.error_code)(response.error_message or "")
    wanted = None if topics is None else set(topics)
    # adding and removing are sets (sorted here); replicas keep the broker's order.
    return {(t.name, int(p.partition_index)): Ongoing(
                replicas=tuple(p.replicas), adding=tuple(sorted(p.adding_replicas)),
                removing=tuple(sorted(p.removing_replicas)))
            for t in response.topics if wanted is None or t.name in wanted
            for p in t.partitions}


# -- throttles -------------------------------------------------------------------------------

def throttled_replicas(moves: Iterable[tuple[str, int, Sequence[int], Sequence[int]]]
                       ) -> dict[str, Throttle]:
    """topic -> Throttle of (topic, partition, before, after) moves: the leader side
    throttles every current replica of a moving partition (any may lead while it moves),
    the follower side the replicas being added. Entries are sorted, so the same moves give
    the same lists (SUBTRACT removes what APPEND added)."""
    leader: dict[str, set[tuple[int, int]]] = {}
    follower: dict[str, set[tuple[int, int]]] = {}
    for topic, partition, before, after in moves:
        leader.setdefault(topic, set()).update((partition, b) for b in before)
        follower.setdefault(topic, set()).update(
            (partition, b) for b in after if b not in before)
    return {topic: Throttle(
        leader=tuple(f"{p}:{b}" for p, b in sorted(leader[topic])),
        follower=tuple(f"{p}:{b}" for p, b in sorted(follower.get(topic, ()))))
        for topic in sorted(leader)}


def throttle_topics(admin: ClusterAdmin, replicas_by_topic: Mapping[str, Throttle], op: str
                    ) -> dict[str, dict[str, Any]]:
    """APPEND (`op` names.APPEND) or SUBTRACT (names.SUBTRACT) each topic's throttled
    replicas; topic -> answer (error_code, error_name, error_message). A topic with no
    entries is answered without a request. After a SUBTRACT, an override left empty is
    deleted, so a topic whose moves are all done has no throttle config left."""
    if op not in (names.APPEND, names.SUBTRACT):
        raise ValueError(f"op must be {names.APPEND} or {names.SUBTRACT}, not {op!r}")
    answers: dict[str, dict[str, Any]] = {}
    pending: list[tuple[str, list[dict[str, Any]]]] = []
    for topic, throttle in sorted(replicas_by_topic.items()):
        ops = [{"name": config, "op": op, "value": ",".join(entries)}
               for config, entries in ((names.LEADER_THROTTLED_REPLICAS, throttle.leader),
                                       (names.FOLLOWER_THROTTLED_REPLICAS, throttle.follower))
               if entries]
        if ops:
            pending.append((topic, ops))
        else:
            answers[topic] = _answer(0, None, attempts=0)
    answers.update(_alter_topic_configs(admin, pending))
    if op == names.SUBTRACT:
        done = {t: replicas_by_topic[t] for t, _ in pending if answers[t]["error_code"] == 0}
        for topic, answer in _drop_emptied(admin, done).items():
            if answer["error_code"] != 0:
                answers[topic] = answer
    return answers


def _alter_topic_configs(admin: ClusterAdmin,
                         pending: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]
                         ) -> dict[str, dict[str, Any]]:
    answers: dict[str, dict[str, Any]] = {}
    size = admin.kafka.batch_size
    for start in range(0, len(pending), size):
        chunk = list(pending[start:start + size])
        for (topic, _), answer in zip(
                chunk, requests.alter_configs(admin, chunk, validate_only=False), strict=True):
            answers[topic] = answer
    return answers


def _entries(value: str | None) -> set[str]:
    return {e.strip() for e in (value or "").split(",") if e.strip()}


def _drop_emptied(admin: ClusterAdmin, subtracted: Mapping[str, Throttle]
                  ) -> dict[str, dict[str, Any]]:
    """DELETE the throttled-replicas overrides a SUBTRACT left empty (KRaft keeps an empty
    value rather than removing it); topic -> answer of the topics that had one.

    The topics' configs are read (from a broker, which applies the controller's change a
    moment later) until none of the subtracted entries shows, for up to
    `kafka.request_timeout_ms`; a topic whose read never shows the SUBTRACT is left as it is.
    """
    pending = dict(subtracted)
    deletes: list[tuple[str, list[dict[str, Any]]]] = []
    if pending:
        deadline = retry.deadline_in(admin.kafka.request_timeout_ms / 1000)
        for read in retry.poll(retry.STEADY, lambda: admin.topic_configs(sorted(pending)),
                               deadline):
            for topic, throttle in list(pending.items()):
                values = {c["name"]: c["value"] for c in read.value.get(topic, [])
                          if c["name"] in names.THROTTLED_REPLICAS_CONFIGS}
                ours = {names.LEADER_THROTTLED_REPLICAS: set(throttle.leader),
                        names.FOLLOWER_THROTTLED_REPLICAS: set(throttle.follower)}
                if any(_entries(values.get(n)) & ours[n] for n in ours):
                    continue
                del pending[topic]
                emptied = sorted(n for n, v in values.items() if not _entries(v))
                if emptied:
                    deletes.append((topic, [{"name": n, "op": names.DELETE_CONFIG,
                                             "value": None} for n in emptied]))
            if not pending:
                break
    if pending:
        log.warning("cluster %s: the throttle SUBTRACT of %d topic(s) was not visible in time; "
                    "an empty throttle override may be left on them", admin.cluster.name,
                    len(pending))
    return _alter_topic_configs(admin, deletes)


def _to_node(admin: ClusterAdmin, node_id: int, build: Callable[[], Any]) -> Any:
    """Send a fresh `build()` to broker `node_id`, again while its connection is not ready
    or was lost, for up to `kafka.request_timeout_ms` (`retry.resend`). Only for requests
    that may be sent twice (reads, and config changes that set the same value again)."""
    deadline = retry.deadline_in(admin.kafka.request_timeout_ms / 1000)

    def verdict(exc: BaseException, _at: float) -> retry.Resend | None:
        if not isinstance(exc, (Errors.NodeNotReadyError, Errors.KafkaConnectionError)):
            return None
        return retry.Resend(deadline, lambda: log.info(
            "cluster %s: broker %d not reachable (%s); sending again", admin.cluster.name,
            node_id, type(exc).__name__))

    return retry.resend(lambda: send_to_node(admin.client, node_id, build()), verdict)


def _rates_request(broker: int) -> Any:
    resource_cls = DescribeConfigsRequest.DescribeConfigsResource
    return DescribeConfigsRequest(
        resources=[resource_cls(resource_type=_BROKER_RESOURCE, resource_name=str(broker),
                                configuration_keys=list(names.THROTTLED_RATE_CONFIGS))],
        include_synonyms=False)


def broker_rates(admin: ClusterAdmin, broker_ids: Iterable[int]
                 ) -> dict[int, dict[str, RateSetting]]:
    """broker -> {rate config name: RateSetting} of the throttle rates somebody set on it
    (empty: neither rate is set, Kafka's unlimited default applies). Each broker is asked
    itself; a broker that refuses raises its error (never read as "not set")."""
    found: dict[int, dict[str, RateSetting]] = {}
    for broker in sorted(set(broker_ids)):
        response = _to_node(admin, broker, functools.partial(_rates_request, broker))
        rates: dict[str, RateSetting] = {}
        for result in response.results:
            if result.error_code:
                raise Errors.for_code(result.error_code)(
                    f"broker {broker}: {result.error_message or ''}")
            for c in config_rows(result.configs, only_non_default=False):
                if c["name"] in names.THROTTLED_RATE_CONFIGS and c["source"] in _SET_SOURCES:
                    rates[c["name"]] = RateSetting(value=c["value"], source=c["source"])
        found[broker] = rates
    return found


def _alter_broker(admin: ClusterAdmin, broker: int, ops: Sequence[tuple[str, int, str | None]]
                  ) -> dict[str, Any]:
    resource_cls = IncrementalAlterConfigsRequest.AlterConfigsResource
    config_cls = resource_cls.AlterableConfig
    response = _to_node(admin, broker, lambda: IncrementalAlterConfigsRequest(
        resources=[resource_cls(
            resource_type=_BROKER_RESOURCE, resource_name=str(broker),
            configs=[config_cls(name=n, config_operation=o, value=v) for n, o, v in ops])],
        validate_only=False))
    (result,) = response.responses
    return _answer(int(result.error_code), result.error_message)


def set_broker_rates(admin: ClusterAdmin, broker_ids: Iterable[int], rate: int
                     ) -> dict[int, dict[str, Any]]:
    """SET both throttle rates to `rate` bytes per second on each broker (sent to that
    broker); broker -> answer. It overwrites: ask `broker_rates` first."""
    op = names.CONFIG_OPS[names.SET]
    return {b: _alter_broker(admin, b, [(n, op, str(rate)) for n in names.THROTTLED_RATE_CONFIGS])
            for b in sorted(set(broker_ids))}


def remove_broker_rates(admin: ClusterAdmin, broker_ids: Iterable[int],
                        only_value: int | None = None) -> dict[int, dict[str, Any]]:
    """DELETE the brokers' own throttle rates (back to the cluster default, if any, else
    unlimited); broker -> answer, with `removed`: the config names deleted.

    only_value: delete only a rate the broker has set to exactly this value on itself (the
      value the job set): one somebody changed since is left as it is.
    """
    op = names.CONFIG_OPS[names.DELETE_CONFIG]
    brokers = sorted(set(broker_ids))
    current = broker_rates(admin, brokers) if only_value is not None else {}
    answers: dict[int, dict[str, Any]] = {}
    for b in brokers:
        doomed = [n for n in names.THROTTLED_RATE_CONFIGS if only_value is None or (
            (s := current[b].get(n)) is not None and s.source == _BROKER_OWN
            and s.value == str(only_value))]
        answer = (_alter_broker(admin, b, [(n, op, None) for n in doomed]) if doomed
                  else _answer(0, None, attempts=0))
        answer["removed"] = doomed if answer["error_code"] == 0 else []
        answers[b] = answer
    return answers


# -- progress ------------------------------------------------------------------------------

def bytes_left(admin: ClusterAdmin, moves: Mapping[Partition, Ongoing]
               ) -> dict[Partition, int | None]:
    """(topic, partition) -> bytes the move still has to copy: for each replica being
    added, what the largest current replica holds beyond it (DescribeLogDirs of each broker
    involved). None where a broker did not say (refused, unreachable, or a replica not
    reported)."""
    brokers = sorted({b for o in moves.values() for b in o.replicas})
    by_topic: dict[str, list[int]] = {}
    for topic, partition in moves:
        by_topic.setdefault(topic, []).append(partition)
    topic_cls = DescribeLogDirsRequest.DescribableLogDirTopic
    sizes: dict[tuple[str, int, int], int] = {}
    silent: set[int] = set()
    for broker in brokers:
        try:
            response = _to_node(admin, broker, lambda: DescribeLogDirsRequest(topics=[
                topic_cls(topic=t, partitions=sorted(ps)) for t, ps in sorted(by_topic.items())]))
        except (Errors.KafkaError, OSError) as exc:
            log.info("cluster %s: broker %d did not describe its log dirs (%s)",
                     admin.cluster.name, broker, type(exc).__name__)
            silent.add(broker)
            continue
        if getattr(response, "error_code", 0):
            silent.add(broker)
            continue
        for d in response.results:
            if d.error_code:
                continue
            for t in d.topics:
                for p in t.partitions:
                    key = (t.name, int(p.partition_index), broker)
                    sizes[key] = max(sizes.get(key, 0), int(p.partition_size))
    left: dict[Partition, int | None] = {}
    for (topic, partition), ongoing in sorted(moves.items()):
        sources = [sizes.get((topic, partition, b)) for b in ongoing.before]
        known = [s for s in sources if s is not None]
        if not known or any(b in silent for b in ongoing.adding):
            left[(topic, partition)] = None
            continue
        source = max(known)
        left[(topic, partition)] = sum(max(0, source - sizes.get((topic, partition, b), 0))
                                       for b in ongoing.adding)
    return left
