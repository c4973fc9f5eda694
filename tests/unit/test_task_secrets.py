"""Each admin task carries its own secrets only: its cluster's credentials and its rows'
passwords (`run.executors.on_executors`). A run of two clusters, its tasks run on the tests'
own Spark; each task's Kafka work is replaced by one that answers with what it was given
(the names of what it holds, never a value), so what each task's Python process received
is read back from its result rows."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.sql import SparkSession

from provisioning.conf import ClusterConf, Conf, Credentials, KafkaConf, Secret, TablesConf
from provisioning.kinds.topics import executors as topic_executors
from provisioning.kinds.users import run as run_users
from provisioning.kinds.users.conf import PasswordSources, UsersConf
from provisioning.kinds.users.run import RUN as USERS
from provisioning.kinds.users.schema import USER_RESULT
from schemas import TOPIC_RESULT

CLUSTERS = (ClusterConf("east", "127.0.0.1:1"), ClusterConf("west", "127.0.0.1:2"))
CREDENTIALS = {c.name: Credentials(username=Secret(f"{c.name}-job"),
                                   password=Secret(f"{c.name}-job-password"))
               for c in CLUSTERS}


def _held(named: Mapping[str, Any], creds: Mapping[str, Credentials],
          passwords: Mapping[tuple[str, ...], Any] | None = None) -> str:
    """What a task was given, by name: its clusters, whose credentials, which passwords."""
    return json.dumps({"clusters": sorted(named), "credentials": sorted(creds),
                       "passwords": None if passwords is None else
                       sorted("/".join(k) for k in passwords)})


def test_each_clusters_task_gets_that_clusters_credentials_only(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    def answering(rows: Iterable[Mapping[str, Any]], named: Mapping[str, ClusterConf],
                  creds: Mapping[str, Credentials], kafka: KafkaConf, validate_only: bool,
                  attempt: int = 0) -> Iterator[tuple[Any, ...]]:
        from provisioning.kafka.tasks.common import result

        for row in rows:
            yield result(row["cluster"], row["topic"], "validate", "validated",
                         error_message=_held(named, creds))

    monkeypatch.setattr(topic_executors, "create_results", answering)
    requests = spark.createDataFrame(
        [(c, t, 1, 1, None, None, None) for c in ("east", "west") for t in ("a", "b")],
        "cluster string, topic string, partitions int, replication_factor int, "
        "replica_assignment map<int,array<int>>, configs map<string,string>, "
        "known_partitions int")
    got = topic_executors.send_creates(requests, CLUSTERS, CREDENTIALS, KafkaConf(),
                                       validate_only=True).collect()
    assert sorted((r["cluster"], r["topic"], json.loads(r["error_message"])) for r in got) == [
        (c, t, {"clusters": [c], "credentials": [c], "passwords": None})
        for c in ("east", "west") for t in ("a", "b")]
    assert TOPIC_RESULT.fieldNames() == got[0].__fields__


def test_each_clusters_task_gets_the_passwords_of_its_own_rows_only(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    def answering(rows: Iterable[Mapping[str, Any]], named: Mapping[str, ClusterConf],
                  creds: Mapping[str, Credentials], kafka: KafkaConf, kind: str,
                  passwords: Mapping[tuple[str, str, str], Any],
                  batch_size: int = 200) -> Iterator[tuple[Any, ...]]:
        assert all(isinstance(p, Secret) for p in passwords.values()), passwords
        for row in rows:
            yield (row["cluster"], row["user"], row["mechanism"], "apply", "upserted", 0,
                   "NONE", _held(named, creds, passwords), 1, None)

    monkeypatch.setattr(run_users, "user_results", answering)
    for cluster in ("EAST", "WEST"):
        for user in ("APP", "OPS"):
            monkeypatch.setenv(f"KAFKA_USER_PASSWORD_{cluster}_{user}",
                               f"{cluster}-{user}-password".lower())
    rows = [(c, u, "SCRAM-SHA-512", "UPSERT", 8192,
             f"KAFKA_USER_PASSWORD_{c.upper()}_{u.upper()}", None)
            for c in ("east", "west") for u in ("app", "ops")]
    requests = spark.createDataFrame(rows, "cluster string, user string, mechanism string, "
                                     "action string, iterations int, password_env string, "
                                     "password_file string")
    users = UsersConf(password_sources=PasswordSources(env_prefix="KAFKA_USER_PASSWORD_"))
    conf = Conf(source="conf.yaml", digest="d", clusters={c.name: c for c in CLUSTERS},
                tables=TablesConf(manifests=("m",), audit="a", runs="r", snapshots="s"),
                sections={"users": users})
    ctx: Any = SimpleNamespace(spark=spark, conf=conf, clusters=CLUSTERS,
                               credentials=CREDENTIALS)
    got = USERS.change(ctx, requests).collect()
    assert sorted((r["cluster"], r["user"], json.loads(r["error_message"])) for r in got) == [
        (c, u, {"clusters": [c], "credentials": [c],
                "passwords": [f"{c}/app/SCRAM-SHA-512", f"{c}/ops/SCRAM-SHA-512"]})
        for c in ("east", "west") for u in ("app", "ops")]
    assert USER_RESULT.fieldNames() == got[0].__fields__
