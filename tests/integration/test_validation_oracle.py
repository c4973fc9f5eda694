"""The broker as the oracle for row validation (property-based, hypothesis).

Generated manifest rows (names from every legal and illegal character class and length,
partitions, replication factors, assignments, configs) are judged twice: by the job's
row validation and by the broker's own CreateTopics validateOnly, sent as each row asks.
The job must never reject a row the broker accepts; a row the job passes and the broker
refuses must end `rejected` with the broker's error from the job's own validateOnly
pass, never as a crashed batch. 25 examples of 40 distinct rows: 1,000 generated rows
(derandomized, so CI sees the same rows every run; no shrinking: the assertion names
every offending row already).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from kafka.protocol.admin import CreateTopicsRequest

from provisioning.conf import ClusterConf, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.codes import error_name
from provisioning.kafka.compat import send_to_controller
from provisioning.kinds.topics.tasks.create import create_batches
from provisioning.transforms.validation import with_row_errors
from tests.builders import desired_df

pytestmark = [pytest.mark.integration]

ROWS_PER_EXAMPLE = 40
EXAMPLES = 25

LEGAL = "abcxyzABCXYZ0189._-"
ILLEGAL = " !/:|#é\t*"
names = st.one_of(
    st.text(alphabet=LEGAL, min_size=1, max_size=40),
    st.text(alphabet=LEGAL + ILLEGAL, min_size=0, max_size=40),
    st.sampled_from([".", "..", "", "a" * 249, "b" * 250, "c" * 255]),
    st.integers(min_value=240, max_value=260).map(lambda n: "d" * n),
)
assignments = st.dictionaries(
    st.integers(min_value=0, max_value=3),
    st.lists(st.sampled_from([1, 2, 99]), min_size=0, max_size=2),
    min_size=0, max_size=3)
configs = st.dictionaries(
    st.sampled_from(["retention.ms", "cleanup.policy", "segment.bytes", "no.such.config",
                     "min.insync.replicas", ""]),
    st.sampled_from(["1000", "-1", "0", "compact", "delete", "x", "", "1048576"]),
    max_size=3)
# -1 is the wire's "broker default" (KIP-464), which a manifest spells null; the job refuses
# a literal -1 by design (one spelling per meaning), so it is not generated: on the wire the
# two could not be told apart.
counts = st.integers(min_value=-3, max_value=4).filter(lambda n: n != -1)
rows = st.fixed_dictionaries({
    "topic": names,
    "partitions": st.one_of(st.none(), counts),
    "replication_factor": st.one_of(st.none(), counts),
    "replica_assignment": st.one_of(st.none(), st.none(), assignments),
    "configs": st.one_of(st.none(), configs),
})


def _raw_request(row: dict[str, Any]) -> Any:
    """The CreateTopics entry exactly as the row asks (no client-side fixing up)."""
    topic_cls = CreateTopicsRequest.CreatableTopic
    return topic_cls(
        name=row["topic"],
        num_partitions=-1 if row["partitions"] is None else row["partitions"],
        replication_factor=-1 if row["replication_factor"] is None
        else row["replication_factor"],
        assignments=[topic_cls.CreatableReplicaAssignment(partition_index=p, broker_ids=b)
                     for p, b in sorted((row["replica_assignment"] or {}).items())],
        configs=[topic_cls.CreatableTopicConfig(name=k, value=v)
                 for k, v in sorted((row["configs"] or {}).items())])


def _broker_verdicts(admin: ClusterAdmin, batch: list[dict[str, Any]]) -> dict[str, str]:
    request = CreateTopicsRequest(topics=[_raw_request(r) for r in batch], timeout_ms=15000,
                                  validate_only=True)
    response = send_to_controller(admin.client, request,
                                  lambda resp: (t.error_code for t in resp.topics))
    return {t.name: error_name(int(t.error_code)) for t in response.topics}


@pytest.fixture(scope="module")
def admin(kafka: Any) -> Any:
    cluster = ClusterConf(name="local", bootstrap_servers=kafka.bootstrap_servers)
    with ClusterAdmin(cluster, None, KafkaConf(request_timeout_ms=15000)) as client:
        yield client


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          phases=(Phase.explicit, Phase.reuse, Phase.generate),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(batch=st.lists(rows, min_size=ROWS_PER_EXAMPLE, max_size=ROWS_PER_EXAMPLE,
                      # Names the broker would see as colliding ('.' and '_' alike) never
                      # share a batch: which one wins depends on the order within it.
                      unique_by=lambda r: r["topic"].replace(".", "_")))
def test_the_job_never_rejects_what_the_broker_accepts(admin: Any, spark: Any,
                                                       batch: list[dict[str, Any]]) -> None:
    judged = (desired_df(spark, [{"cluster": "local", **r} for r in batch])
              .transform(with_row_errors(["local"])).collect())
    job_errors = {r["topic"]: list(r["row_errors"]) for r in judged}
    broker = _broker_verdicts(admin, batch)

    too_strict = [(r, job_errors[r["topic"]]) for r in batch
                  if job_errors[r["topic"]] and broker[r["topic"]] == "NONE"]
    assert too_strict == [], f"the job rejects rows the broker accepts: {too_strict}"

    # The requests the job builds from its own (validated, normalized) rows.
    passed = [{c: r[c] for c in ("cluster", "topic", "partitions", "replication_factor",
                                 "replica_assignment", "configs")} | {"known_partitions": None}
              for r in judged if not r["row_errors"]]
    results = {row[1]: row for row in create_batches(admin, passed, validate_only=True)}
    outcomes = {name: (res[3], res[6]) for name, res in results.items()}
    expected = {r["topic"]: ("validated", "NONE") if broker[r["topic"]] == "NONE"
                else ("rejected", broker[r["topic"]]) for r in passed}
    assert outcomes == expected
