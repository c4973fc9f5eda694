"""Replica moves (KIP-455) for one Spark task: start them throttled, then read their progress,
settle the finished ones and take their throttles away.

Rows (one per topic) have cluster, topic and reassignment (REPLICA_MOVE list: partition,
before, after, in_flight). Each yields one TOPIC_RESULT row, with every partition's fate in
`result_reassignment`:

- `reassign_results` (apply): moves in flight already are not sent again; the others are
  throttled first (when a rate is given: the rates of the brokers involved that nobody has
  set, then the topic's throttled replicas, APPEND), then sent as batched
  AlterPartitionReassignments. A partition whose request may have reached the controller
  when the client failed is `unknown`, never `failed`.
- `reassign_verify_results` (verify): waits up to a deadline for the moves to complete;
  done partitions are `reassigned` and lose their topic throttle entries (SUBTRACT), the
  ones still moving are `reassigning` (a later run finishes them), a partition neither
  moving nor at its target is `failed`. Then the broker rates the job set (given by the
  caller, from its records) are removed from brokers no move in flight uses any more, and
  only while they still hold the value the job set.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from provisioning import names, retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.outcomes import REJECTIONS, UNCERTAIN
from provisioning.kafka.tasks.common import (
    IO_ERRORS,
    Result,
    Row,
    Sent,
    exception_fields,
    for_each_cluster,
    result,
)
from provisioning.kinds.reassign import names as move_names
from provisioning.kinds.reassign import requests as reassign

Partition = tuple[str, int]
# How long a move found neither moving nor at its target waits for a second look
# (verify_batches): a broker's metadata trails the controller's by milliseconds.
CONFIRM_PAUSE_S = 0.5
# A topic's outcome from its partitions' (the first that applies).
_PRECEDENCE = (names.UNKNOWN, names.FAILED, names.REJECTED, move_names.REASSIGNING,
               move_names.REASSIGNED)


def reassign_outcome(error_name: str) -> str:
    """The audit outcome of one partition's AlterPartitionReassignments result: a move the
    controller accepted is under way (`reassigning`) until verify sees it complete."""
    if error_name == "NONE":
        return move_names.REASSIGNING
    if error_name in REJECTIONS or error_name == "UNKNOWN_TOPIC_OR_PARTITION":
        return names.REJECTED
    if error_name in UNCERTAIN:
        return names.UNKNOWN
    return names.FAILED


def _moves(row: Row) -> list[dict[str, Any]]:
    return [dict(m) for m in row.get("reassignment") or []]


def _partition_result(move: Mapping[str, Any], outcome: str, name: str | None = None,
                      message: str | None = None) -> dict[str, Any]:
    return {"partition": int(move["partition"]), "before": list(move["before"] or []),
            "after": list(move["after"] or []), "outcome": outcome, "error_name": name,
            "error_message": message}


def _topic_result(cluster: str, topic: str, phase: str, parts: list[dict[str, Any]],
                  **fields: Any) -> Result:
    """One TOPIC_RESULT row from its partitions' results: the topic's outcome is its
    partitions' when they agree; some started and some refused is `failed` (half moved)."""
    outcomes = {p["outcome"] for p in parts}
    outcome = next((o for o in _PRECEDENCE if o in outcomes), move_names.REASSIGNED)
    if outcome == names.REJECTED and move_names.REASSIGNING in outcomes:
        outcome = names.FAILED
    bad = [p for p in parts if p["outcome"] not in (move_names.REASSIGNING, move_names.REASSIGNED)]
    message = "; ".join(f"partition {p['partition']}: {p['error_name']}: "
                        f"{p['error_message'] or ''}".rstrip(": ") for p in bad)
    return result(cluster, topic, phase, outcome,
                  error_code=-1 if bad else 0,
                  error_name=bad[0]["error_name"] if bad else "NONE",
                  error_message=message[:2000] or None,
                  result_reassignment=sorted(parts, key=lambda p: p["partition"]), **fields)


def reassign_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                     credentials: Mapping[str, Credentials], kafka: KafkaConf,
                     throttle_rate: int | None) -> Iterator[Result]:
    """Start each row's moves (apply), throttled at `throttle_rate` bytes per second (None:
    not throttled); one TOPIC_RESULT row per topic."""

    def work(admin: ClusterAdmin, part: list[Row], sent: Sent) -> Iterator[Result]:
        return reassign_batches(admin, part, throttle_rate, sent)

    return for_each_cluster(rows, clusters, credentials, kafka, work, names.APPLY, True,
                            kafka.batch_size)


def _throttle(admin: ClusterAdmin, moves: Sequence[tuple[str, Mapping[str, Any]]], rate: int,
              sent: Sent | None) -> tuple[list[int], dict[str, dict[str, Any]]]:
    """Throttle `moves` before they start: the rate of each broker involved that nobody has
    set, then the topics' throttled replicas. Returns the brokers whose rates were set here
    and each topic's APPEND answer."""
    if sent is not None:
        sent.mark(topic for topic, _ in moves)
    brokers = {b for _, m in moves for b in [*(m["before"] or []), *(m["after"] or [])]}
    rates = reassign.broker_rates(admin, brokers)
    unset = [b for b, setting in rates.items() if not setting]
    set_here = [b for b, answer in reassign.set_broker_rates(admin, unset, rate).items()
                if answer["error_code"] == 0]
    entries = reassign.throttled_replicas(
        (topic, int(m["partition"]), m["before"] or [], m["after"] or []) for topic, m in moves)
    return set_here, reassign.throttle_topics(admin, entries, names.APPEND)


def reassign_batches(admin: ClusterAdmin, rows: list[Row], throttle_rate: int | None,
                     sent: Sent | None = None) -> Iterator[Result]:
    """One cluster's rows: start their moves (see `reassign_results`)."""
    cluster = admin.cluster.name
    results: dict[str, list[dict[str, Any]]] = {r["topic"]: [] for r in rows}
    fresh = [(r["topic"], m) for r in rows for m in _moves(r) if not m.get("in_flight")]
    for r in rows:
        for flying in _moves(r):
            if flying.get("in_flight"):
                results[r["topic"]].append(_partition_result(
                    flying, move_names.REASSIGNING, "NONE", "under way since an earlier run"))
    # What is moving already is not sent again: an earlier attempt of this task (or run)
    # started it, or another move did, which is not touched.
    ongoing = reassign.list_reassignments(admin, sorted({t for t, _ in fresh})) if fresh else {}
    to_send: list[tuple[str, dict[str, Any]]] = []
    for topic, m in fresh:
        moving = ongoing.get((topic, int(m["partition"])))
        if moving is None:
            to_send.append((topic, m))
        elif list(moving.target) == list(m["after"] or []):
            results[topic].append(_partition_result(m, move_names.REASSIGNING, "NONE",
                                                    "already under way"))
        else:
            results[topic].append(_partition_result(
                m, names.REJECTED, move_names.INVALID_REASSIGNMENT,
                f"being reassigned to {list(moving.target)} by another move; not touched"))
    set_here: list[int] = []
    if throttle_rate is not None and to_send:
        set_here, appended = _throttle(admin, to_send, throttle_rate, sent)
        unthrottled = {t for t, a in appended.items() if a["error_code"] != 0}
        for topic, m in to_send:
            if topic in unthrottled:
                a = appended[topic]
                why = ": ".join(x for x in (a["error_name"], a["error_message"]) if x)
                results[topic].append(_partition_result(
                    m, names.FAILED, names.NOT_SENT, f"not sent: its throttle was refused: {why}"))
        to_send = [(t, m) for t, m in to_send if t not in unthrottled]
    batch = admin.kafka.batch_size
    for start in range(0, len(to_send), batch):
        chunk = to_send[start:start + batch]
        if sent is not None:
            sent.mark(t for t, _ in chunk)
        try:
            answers = reassign.alter_reassignments(admin, [
                reassign.Move(t, int(m["partition"]), tuple(m["after"] or ())) for t, m in chunk],
                batch)
        except IO_ERRORS as exc:
            # Sent or not: verify settles it.
            fields = exception_fields(exc)
            for t, m in chunk:
                results[t].append(_partition_result(m, names.UNKNOWN, fields["error_name"],
                                                    fields["error_message"]))
            continue
        for (t, m), a in zip(chunk, answers, strict=True):
            results[t].append(_partition_result(
                m, reassign_outcome(a["error_name"]), a["error_name"], a["error_message"]))
    throttled = {t for t, _ in to_send} if throttle_rate is not None else set()
    for r in rows:
        topic = r["topic"]
        involved = {b for x in _moves(r) for b in [*(x["before"] or []), *(x["after"] or [])]}
        yield _topic_result(
            cluster, topic, names.APPLY, results[topic], attempts=1,
            topic_id=r.get("live_topic_id"),
            throttle_rate=throttle_rate if topic in throttled else None,
            throttled_brokers=sorted(involved.intersection(set_here)))


# -- verify --------------------------------------------------------------------------------

def reassign_progress(admin: ClusterAdmin, moves: Mapping[Partition, Sequence[int]]
                      ) -> tuple[dict[Partition, str], dict[str, dict[int, list[int]]]]:
    """Where each move is: (topic, partition) -> reassigned (not moving, its replicas the
    target in the target's order: the first is the preferred leader),
    reassigning (still moving) or failed (not moving, not at its target: refused, cancelled
    or changed by somebody else); and the live replicas of the topics read."""
    ongoing = reassign.list_reassignments(admin, {t for t, _ in moves})
    live = {t.name: t.replica_assignment or {}
            for t in admin.describe_topics(sorted({t for t, _ in moves}))
            if t.error_name is None}
    states: dict[Partition, str] = {}
    for (topic, partition), after in moves.items():
        replicas = live.get(topic, {}).get(partition)
        if (topic, partition) in ongoing:
            states[(topic, partition)] = move_names.REASSIGNING
        elif replicas is not None and list(replicas) == list(after):
            states[(topic, partition)] = move_names.REASSIGNED
        else:
            states[(topic, partition)] = names.FAILED
    return states, live


def reassign_verify_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                            credentials: Mapping[str, Credentials], kafka: KafkaConf,
                            wait_seconds: float,
                            owned_brokers: Mapping[str, Mapping[int, int]]) -> Iterator[Result]:
    """Wait up to `wait_seconds` for each row's moves; one TOPIC_RESULT row per topic
    (phase verify). owned_brokers: cluster -> {broker: the rate the job set there}
    (`throttled_brokers` and `throttle_rate` of its apply rows whose moves are not
    settled), removed once no move in flight uses the broker and only while it still holds
    that rate."""
    deadlines: dict[str, float] = {}

    def work(admin: ClusterAdmin, part: list[Row], _sent: Sent) -> Iterator[Result]:
        deadline = deadlines.setdefault(admin.cluster.name, retry.deadline_in(wait_seconds))
        return verify_batches(admin, part, deadline,
                              owned_brokers.get(admin.cluster.name, {}))

    return for_each_cluster(rows, clusters, credentials, kafka, work, names.VERIFY, False,
                            kafka.batch_size)


def verify_batches(admin: ClusterAdmin, rows: list[Row], deadline: float,
                   owned_brokers: Mapping[int, int] | None = None) -> Iterator[Result]:
    """One cluster's rows: read their moves until all are settled or `deadline`
    (`retry.now()`) passes, at least once (`retry.MOVES`); then clear the finished ones'
    throttles.

    A move is failed only when a second read, CONFIRM_PAUSE_S later, still finds it neither
    moving nor at its target: the controller answers ListPartitionReassignments, but a
    broker answers the replicas, and a broker's metadata may not yet hold the move that
    the controller has just finished."""
    cluster = admin.cluster.name
    moves = {(r["topic"], int(m["partition"])): (r["topic"], m) for r in rows for m in _moves(r)}
    targets = {key: list(m["after"] or []) for key, (_, m) in moves.items()}
    attempts = 0
    failed_before: set[Partition] = set()
    states: dict[Partition, str] = {}
    for read in retry.poll(retry.MOVES, lambda: reassign_progress(admin, targets), deadline,
                           retry_on=IO_ERRORS):
        attempts, (states, live) = read.attempt, read.value
        failed = {key for key, state in states.items() if state == names.FAILED}
        unconfirmed, failed_before = failed - failed_before, failed
        moving = move_names.REASSIGNING in states.values()
        if not (moving or unconfirmed):
            break
        if not moving:
            read.wait_s = CONFIRM_PAUSE_S
    done = [(t, int(m["partition"]), m["before"] or [], m["after"] or [])
            for key, (t, m) in moves.items() if states[key] == move_names.REASSIGNED]
    # Idempotent: entries never appended, or removed by an earlier run, are no-ops.
    cleared = reassign.throttle_topics(admin, reassign.throttled_replicas(done),
                                       names.SUBTRACT) if done else {}
    if owned_brokers:
        busy = {b for o in reassign.list_reassignments(admin).values() for b in o.replicas}
        by_rate: dict[int, list[int]] = {}
        for broker, rate in sorted(owned_brokers.items()):
            if broker not in busy:
                by_rate.setdefault(rate, []).append(broker)
        for rate, idle in sorted(by_rate.items()):
            reassign.remove_broker_rates(admin, idle, only_value=rate)
    for r in rows:
        topic = r["topic"]
        parts = []
        for m in _moves(r):
            state = states[(topic, int(m["partition"]))]
            message = {move_names.REASSIGNING: "still moving",
                       names.FAILED: "neither moving nor at its target (refused, cancelled "
                                     "or changed by another move)"}.get(state)
            parts.append(_partition_result(m, state, "NONE" if state != names.FAILED
                                           else move_names.INVALID_REASSIGNMENT, message))
        answer = cleared.get(topic)
        if answer is not None and answer["error_code"] != 0:
            parts = [{**p, "error_message": (f"{p['error_message'] or 'done'}; its throttle "
                                             f"was not cleared: {answer['error_name']}")}
                     for p in parts]
        assignment = live.get(topic)
        yield _topic_result(
            cluster, topic, names.VERIFY, parts, attempts=attempts,
            topic_id=r.get("live_topic_id"),
            result_assignment=assignment,
            result_partitions=None if assignment is None else len(assignment),
            result_replication_factor=None if not assignment
            else min(len(v) for v in assignment.values()))
