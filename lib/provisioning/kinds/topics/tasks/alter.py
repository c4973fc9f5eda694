"""IncrementalAlterConfigs (KIP-339) and CreatePartitions (KIP-195), validateOnly or for real:
a topic's config change, then its partition increase, never half of a refused change."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from provisioning import names
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka import requests
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.outcomes import alter_outcome
from provisioning.kafka.tasks.common import (
    IO_ERRORS,
    Result,
    Row,
    Sent,
    exception_fields,
    for_each_cluster,
    in_flight,
    result,
)

T = TypeVar("T")
_Answer = dict[str, Any]


def alter_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                  credentials: Mapping[str, Credentials], kafka: KafkaConf,
                  validate_only: bool, attempt: int = 0) -> Iterator[Result]:
    """The config operations and the partition increase of each ALTER row (validateOnly or
    for real), batched per cluster; one result per topic.

    Rows have cluster, topic, config_ops (CONFIG_OP list), partitions_to (the new total
    count, or null) and new_assignment (the replicas of each new partition, or null).
    attempt: the Spark task attempt (> 0: an earlier attempt may have sent the same change).
    """
    phase = names.VALIDATE if validate_only else names.APPLY

    def work(admin: ClusterAdmin, part: list[Row], sent: Sent) -> Iterator[Result]:
        return alter_batches(admin, part, validate_only, sent, attempt)

    return for_each_cluster(rows, clusters, credentials, kafka, work, phase,
                            not validate_only, kafka.batch_size * 4)


def _send_all(admin: ClusterAdmin, items: Sequence[T], send: Callable[[list[T]], list[_Answer]],
              key: Callable[[T], str], failed: str, sent: Sent | None) -> dict[str, _Answer]:
    """`items` in batches of `kafka.batch_size`, pipelined; an answer per key (a lost
    connection answers for its whole batch)."""
    k = admin.kafka

    def marked(batch: list[T]) -> list[_Answer]:
        if sent is not None:
            sent.mark(key(item) for item in batch)
        return send(batch)

    chunks = (list(items[i:i + k.batch_size]) for i in range(0, len(items), k.batch_size))
    answers: dict[str, _Answer] = {}
    for batch, results, exc in in_flight(chunks, marked, k.max_in_flight_requests):
        if exc is not None or results is None:
            fields = exception_fields(exc or RuntimeError("no response"))
            for item in batch:
                answers[key(item)] = {**fields, "attempts": 1, "_outcome": failed}
            continue
        for item, res in zip(batch, results, strict=True):
            answers[key(item)] = res
    return answers


def alter_batches(admin: ClusterAdmin, rows: list[Row], validate_only: bool,
                  sent: Sent | None = None, attempt: int = 0) -> Iterator[Result]:
    """One cluster's ALTER rows: IncrementalAlterConfigs for the config operations, then
    CreatePartitions for the partition increases (for real: only of topics whose configs
    were changed, so a topic is never half altered by a refusal).

    A retried task (attempt > 0) resends its change: configs set again are answered as
    before, and a partition increase an earlier attempt made is recognised (the topic has
    the target count already) rather than recorded as refused.
    """
    phase = names.VALIDATE if validate_only else names.APPLY
    lost = names.FAILED if validate_only else names.UNKNOWN
    mark = None if validate_only else sent
    cluster = admin.cluster.name
    ops = [(r["topic"], list(r["config_ops"] or [])) for r in rows if r["config_ops"]]
    configs = _send_all(admin, ops, lambda b: requests.alter_configs(admin, b, validate_only),
                        lambda t: t[0], lost, mark)
    config_ok = {t for t, a in configs.items() if a.get("error_name") == "NONE"}
    growing = [(r["topic"], int(r["partitions_to"]),
                None if r["new_assignment"] is None else [list(b) for b in r["new_assignment"]])
               for r in rows if r["partitions_to"] is not None
               and (validate_only or not r["config_ops"] or r["topic"] in config_ok)]
    partitions = _send_all(
        admin, growing, lambda b: requests.create_partitions(admin, b, validate_only),
        lambda t: t[0], lost, mark)
    if attempt > 0 and not validate_only:
        _recognise_earlier_increases(admin, growing, partitions)
    for r in rows:
        topic = r["topic"]
        parts = [("IncrementalAlterConfigs", configs.get(topic)),
                 ("CreatePartitions", partitions.get(topic))]
        if r["partitions_to"] is not None and topic not in partitions:
            # Not sent: its config change was refused or lost first.
            parts[1] = ("CreatePartitions", {"error_code": -1, "error_name": names.NOT_SENT,
                                             "error_message": "not sent: the config change "
                                             "of this topic did not succeed"})
        yield _alter_result(cluster, topic, phase, validate_only, parts, topic in config_ok)


def _recognise_earlier_increases(admin: ClusterAdmin,
                                 growing: Sequence[tuple[str, int, Any]],
                                 answers: dict[str, _Answer]) -> None:
    """Answers INVALID_PARTITIONS of topics that already have the target count: an earlier
    attempt of this task made the increase; record it as made."""
    refused = {topic: count for topic, count, _ in growing
               if answers.get(topic, {}).get("error_name") == "INVALID_PARTITIONS"}
    if not refused:
        return
    try:
        live = {t.name: t for t in admin.describe_topics(sorted(refused))}
    except IO_ERRORS:
        return  # the refusal stands; verify reads the topic again
    for topic, count in refused.items():
        seen = live.get(topic)
        if seen is not None and seen.error_name is None and seen.partitions == count:
            answers[topic] = {"error_code": 0, "error_name": "NONE", "attempts": 2,
                              "error_message": "made by an earlier attempt of this Spark "
                                               f"task: the topic has {count} partitions"}


def _alter_result(cluster: str, topic: str, phase: str, validate_only: bool,
                  parts: list[tuple[str, _Answer | None]], configs_changed: bool) -> Result:
    answered = [(what, a) for what, a in parts if a is not None]
    bad = [(what, a) for what, a in answered if a.get("error_name") != "NONE"]
    attempts = max((int(a.get("attempts") or 1) for _, a in answered), default=1)
    if not bad:
        notes = "; ".join(a["error_message"] for _, a in answered if a.get("error_message"))
        return result(cluster, topic, phase, alter_outcome("NONE", validate_only),
                      error_code=0, error_name="NONE", attempts=attempts,
                      error_message=notes or None)
    # The config answer comes first: a CreatePartitions left unsent follows a refused one.
    _, first = bad[0]
    outcome = first.get("_outcome") or alter_outcome(first["error_name"], validate_only)
    message = "; ".join(f"{w}: {a.get('error_name')}: {a.get('error_message') or ''}".rstrip(": ")
                        for w, a in bad)
    if configs_changed and not validate_only:
        # The configs were changed and the partitions were not: the topic is half altered.
        outcome = names.FAILED if outcome == names.REJECTED else outcome
        message = f"the configs were changed, the partitions were not: {message}"
    return result(cluster, topic, phase, outcome, error_code=first.get("error_code"),
                  error_name=first.get("error_name"), error_message=message[:2000],
                  attempts=attempts)
