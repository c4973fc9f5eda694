"""verify: created topics have a leader on every partition, deleted ones are gone, altered
ones show their change; the `unknown` outcomes a timeout left are settled here."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from provisioning import names, retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.tasks.common import IO_ERRORS, Result, Row, Sent, for_each_cluster, result


def verify_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                   credentials: Mapping[str, Credentials], kafka: KafkaConf
                   ) -> Iterator[Result]:
    """Wait until created topics have a leader on every partition, deleted ones are gone and
    altered ones show the change.

    Rows have cluster, topic and action (CREATE, DELETE or ALTER; an ALTER row also has
    config_ops, partitions_to and before_partitions). Resolves the `unknown` outcomes a
    timeout left behind into created / deleted / altered / failed.
    """
    # One deadline per cluster for all its chunks: topics that never appear (a create the
    # broker lost) cost `verify_timeout_ms` once, not once per chunk of `batch_size`.
    deadlines: dict[str, float] = {}

    def work(admin: ClusterAdmin, part: list[Row], _sent: Sent) -> Iterator[Result]:
        deadline = deadlines.setdefault(
            admin.cluster.name, retry.deadline_in(kafka.verify_timeout_ms / 1000))
        return verify_rows(admin, part, deadline)

    return for_each_cluster(rows, clusters, credentials, kafka, work, names.VERIFY, False,
                            kafka.batch_size)


def alter_shown(row: Row, topic: Any, configs: Sequence[Mapping[str, Any]] | None
                ) -> tuple[bool, bool, list[str]]:
    """Whether the live topic shows all of an ALTER row's change, any of it, and what is
    still missing (one line each)."""
    missing: list[str] = []
    shown = 0
    target = row.get("partitions_to")
    if target is not None:
        if topic.partitions is not None and topic.partitions >= target \
                and topic.leaderless_partitions == 0:
            shown += 1
        else:
            missing.append(f"partitions {topic.partitions}, expected {target}")
            if (topic.partitions or 0) > (row.get("before_partitions") or 0):
                shown += 1
    overrides = {c["name"]: c["value"] for c in configs or []
                 if c["source"] == names.TOPIC_OVERRIDE}
    for op in row.get("config_ops") or []:
        done = (overrides.get(op["name"]) == op["value"] if op["op"] == names.SET
                else op["name"] not in overrides)
        if configs is not None and done:
            shown += 1
        else:
            have = "not readable" if configs is None else overrides.get(op["name"], "not set")
            want = op["value"] if op["op"] == names.SET else "no override"
            missing.append(f"{op['name']} is {have}, expected {want}")
    return not missing, shown > 0, missing


def verify_rows(admin: ClusterAdmin, rows: list[Row], deadline: float) -> Iterator[Result]:
    """Describe the rows' topics until each is settled or `deadline` (`retry.now()`)
    passes (`retry.DESCRIBE`); each topic is described at least once, even past the
    deadline."""
    cluster = admin.cluster.name
    pending = {r["topic"]: r for r in rows}
    attempts = 0
    last: dict[str, Any] = {}
    last_configs: dict[str, list[dict[str, Any]]] = {}

    def read() -> tuple[list[Any], dict[str, list[dict[str, Any]]] | None]:
        described = admin.describe_topics(sorted(pending))
        altered = [t.name for t in described if t.error_name is None
                   and pending.get(t.name, {}).get("action") == names.ALTER]
        return described, admin.topic_configs(altered) if altered else None

    # Only reads: a broker that went away (a controller killed mid-run) is left behind by
    # the next attempt, which asks another; until the deadline.
    rounds = retry.poll(retry.DESCRIBE, read, deadline, retry_on=IO_ERRORS) if pending else ()
    for done in rounds:
        attempts = done.attempt
        described, configs = done.value
        if configs is not None:
            last_configs = configs
        for t in described:
            last[t.name] = t
            row = pending.get(t.name)
            action = None if row is None else row["action"]
            if action == names.CREATE and t.error_name is None \
                    and t.leaderless_partitions == 0:
                pending.pop(t.name)
                yield result(cluster, t.name, names.VERIFY, names.CREATED,
                             topic_id=t.topic_id, result_partitions=t.partitions,
                             result_replication_factor=t.replication_factor,
                             attempts=attempts, error_code=0, error_name="NONE")
            elif action == names.DELETE and t.error_name == "UNKNOWN_TOPIC_OR_PARTITION":
                pending.pop(t.name)
                yield result(cluster, t.name, names.VERIFY, names.DELETED, attempts=attempts,
                             error_code=0, error_name="NONE")
            elif action == names.ALTER and t.error_name is None and row is not None \
                    and alter_shown(row, t, last_configs.get(t.name))[0]:
                pending.pop(t.name)
                yield result(cluster, t.name, names.VERIFY, names.ALTERED,
                             topic_id=t.topic_id, result_partitions=t.partitions,
                             result_replication_factor=t.replication_factor,
                             result_configs=last_configs.get(t.name), attempts=attempts,
                             error_code=0, error_name="NONE")
        if not pending:
            break
    for name, row in sorted(pending.items()):
        action = row["action"]
        seen = last.get(name)
        missing = seen is None or seen.error_name == "UNKNOWN_TOPIC_OR_PARTITION"
        if action == names.ALTER and missing:
            outcome, message = names.FAILED, "the topic does not exist any more"
        elif action == names.ALTER:
            _, any_shown, lacking = alter_shown(row, seen, last_configs.get(name))
            outcome = names.UNKNOWN if any_shown else names.FAILED
            message = (("part of the change is not visible: " if any_shown
                        else "the change did not take effect: ") + "; ".join(lacking))
        elif action == names.CREATE and missing:
            outcome, message = names.FAILED, "the topic does not exist after the create"
        elif action == names.CREATE:
            outcome, message = names.UNKNOWN, "not every partition has a leader yet"
        else:
            outcome, message = names.UNKNOWN, "the topic still exists after the delete"
        yield result(cluster, name, names.VERIFY, outcome, attempts=attempts, error_code=-1,
                     error_name=names.VERIFY_TIMEOUT, error_message=message,
                     topic_id=None if seen is None else seen.topic_id)
