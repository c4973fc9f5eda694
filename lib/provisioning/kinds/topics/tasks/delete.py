"""DeleteTopics, by topic id when known: a topic recreated under the same name is never
deleted."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from provisioning import names
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka import requests
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.outcomes import delete_outcome
from provisioning.kafka.tasks.common import (
    IO_ERRORS,
    Result,
    Row,
    Sent,
    exception_fields,
    for_each_cluster,
    result,
)


def delete_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                   credentials: Mapping[str, Credentials], kafka: KafkaConf,
                   attempt: int = 0) -> Iterator[Result]:
    """DeleteTopics (by topic id when known) for rows of cluster, topic and topic_id.

    attempt: the Spark task attempt (> 0: an earlier attempt may have deleted the topics).
    """

    def work(admin: ClusterAdmin, part: list[Row], sent: Sent) -> Iterator[Result]:
        return delete_part(admin, part, sent, attempt)

    return for_each_cluster(rows, clusters, credentials, kafka, work, names.APPLY, True,
                            kafka.batch_size)


def delete_part(admin: ClusterAdmin, part: list[Row], sent: Sent, attempt: int = 0
                ) -> Iterator[Result]:
    """One DeleteTopics request for `part`; a result per topic."""
    cluster = admin.cluster.name
    sent.mark(r["topic"] for r in part)
    try:
        results = requests.delete_topics(admin, [(r["topic"], r["topic_id"]) for r in part])
    except IO_ERRORS as exc:
        for r in part:
            yield result(cluster, r["topic"], names.APPLY, names.UNKNOWN, attempts=1,
                         **exception_fields(exc))
        return
    planned_ids = {r["topic"]: r["topic_id"] for r in part}
    gone_ids = [res["topic"] for res in results if res["error_name"] == "UNKNOWN_TOPIC_ID"]
    now_live: dict[str, Any] = {}
    described: BaseException | None = None
    if gone_ids:
        try:
            now_live = {t.name: t for t in admin.describe_topics(gone_ids)}
        except IO_ERRORS as exc:
            described = exc
    for res in results:
        name = res.pop("topic")
        lost = res.pop("resent_after", None)
        outcome = delete_outcome(res["error_name"])
        live = now_live.get(name)
        if described is not None and name in gone_ids:
            # Gone by id; whether a topic of the same name was recreated is not known.
            outcome = names.UNKNOWN
            res["error_message"] = (f"the topic id is gone; describing the name to tell a "
                                    f"recreated topic failed: {described}")[:2000]
        elif live is not None and live.error_name is None:
            # Deleting by id refused a topic recreated under the same name since the
            # snapshot: the new topic is not the one the plan judged, so it stays.
            outcome = names.BLOCKED
            res["topic_id"] = live.topic_id
            res["error_message"] = (
                f"topic {name} was recreated since the snapshot (id now {live.topic_id}, "
                f"the plan saw {planned_ids.get(name)}); nothing was deleted")
        elif outcome == names.ALREADY_ABSENT and lost is not None:
            # The first DeleteTopics reached the broker but its answer was lost.
            outcome = names.DELETED
            res["error_message"] = (f"deleted by this run: the answer to its DeleteTopics "
                                    f"was lost ({lost}) and the resend found it gone")
        elif outcome == names.ALREADY_ABSENT and attempt > 0:
            # The snapshot saw the topic; an earlier attempt of this task sent its delete.
            outcome = names.DELETED
            res["error_message"] = ("deleted by an earlier attempt of this Spark task: the "
                                    "retried DeleteTopics found it gone")
        yield result(cluster, name, names.APPLY, outcome, **res)
