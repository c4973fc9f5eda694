"""The pure parts of the client-quota requests (`provisioning.kinds.quotas.requests`): the default's
two spellings, the entity, the outcome of each result, batching, the requests as built, and
the answers the batch loop makes of scripted broker responses (no broker: the broker's own
behaviour is pinned in tests/integration/test_quotas_kafka.py)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import kafka.errors as Errors
import pytest
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)

from provisioning import retry
from provisioning.conf import ClusterConf, KafkaConf
from provisioning.kafka.compat import KafkaPythonIncompatible, send_to_node
from provisioning.kinds.quotas import requests as quotas
from provisioning.kinds.quotas.entities import (
    Entity,
    QuotaEntry,
    alter_request,
    batches,
    describe_request,
    entry_problems,
)
from provisioning.kinds.quotas.names import REMOVED, SET, protocol_name, table_name
from provisioning.kinds.quotas.requests import (
    EXACT_READS,
    QuotasUnreadable,
    alter_client_quotas,
    describe_client_quotas,
    quota_outcome,
)

ALICE = Entity({"user": "alice"})
DEFAULT_USER = Entity({"user": None})
PAIR = Entity({"client-id": "app", "user": "bob"})
IP_DEFAULT = Entity({"ip": None})


# -- spellings and entities ------------------------------------------------------------------


@pytest.mark.parametrize(("table", "protocol"), [
    ("<default>", None), ("alice", "alice"), ("", ""), ("<Default>", "<Default>")])
def test_the_default_is_spelled_none_in_the_protocol_and_default_in_tables(
        table: str, protocol: str | None) -> None:
    assert protocol_name(table) == protocol
    assert table_name(protocol) == table


def test_an_entity_reads_and_writes_the_table_spelling() -> None:
    entity = Entity.from_table({"user": "bob", "client-id": "<default>"})
    assert entity == Entity({"client-id": None, "user": "bob"})
    assert entity.table_names() == {"user": "bob", "client-id": "<default>"}
    assert dict(entity) == {"user": "bob", "client-id": None}


def test_an_entity_is_a_hashable_mapping_in_kafkas_type_order() -> None:
    entity = Entity({"client-id": "app", "user": "bob"})
    assert list(entity) == ["user", "client-id"]
    assert entity["client-id"] == "app"
    assert entity == {"user": "bob", "client-id": "app"}
    assert {entity: 1}[Entity({"user": "bob", "client-id": "app"})] == 1
    assert Entity({"user": None}) != Entity({"user": "<default>"})
    assert repr(PAIR) == "Entity({'user': 'bob', 'client-id': 'app'})"
    with pytest.raises(KeyError):
        entity["ip"]


@pytest.mark.parametrize("parts", [{}, {"user": 3}, {1: "x"}])
def test_an_entity_names_at_least_one_type_with_a_name_or_none(parts: Any) -> None:
    with pytest.raises(ValueError, match="client-quota entity"):
        Entity(parts)


# -- outcomes ------------------------------------------------------------------------------


@pytest.mark.parametrize(("error", "attempts", "validate_only", "removes_only", "outcome"), [
    ("NONE", 1, False, False, SET),
    ("NONE", 1, False, True, REMOVED),
    ("NONE", 1, True, False, "validated"),
    ("NONE", 1, True, True, "validated"),
    ("INVALID_REQUEST", 1, False, False, "rejected"),
    ("INVALID_REQUEST", 1, True, False, "rejected"),
    ("INVALID_CONFIG", 1, False, False, "rejected"),
    ("CLUSTER_AUTHORIZATION_FAILED", 1, False, False, "rejected"),
    ("UNSUPPORTED_VERSION", 0, False, False, "rejected"),
    ("POLICY_VIOLATION", 1, False, False, "rejected"),
    ("INVALID_MANIFEST_ROW", 0, False, False, "rejected"),
    ("REQUEST_TIMED_OUT", 1, False, False, "unknown"),
    ("NOT_CONTROLLER", 1, False, True, "unknown"),
    ("NETWORK_EXCEPTION", 1, False, False, "unknown"),
    ("UNKNOWN_SERVER_ERROR", 1, False, False, "unknown"),
    ("KafkaConnectionError", 2, False, False, "unknown"),
    ("KafkaTimeoutError", 1, False, False, "unknown"),
    # never sent, or nothing to change: nothing can have happened
    ("KafkaConnectionError", 0, False, False, "failed"),
    ("NodeNotReadyError", 0, False, False, "failed"),
    ("REQUEST_TIMED_OUT", 1, True, False, "failed"),
    ("KafkaConnectionError", 1, True, False, "failed"),
    ("THROTTLING_QUOTA_EXCEEDED", 9, False, False, "failed"),
    ("UNKNOWN_TOPIC_OR_PARTITION", 1, False, False, "failed"),
])
def test_every_result_has_one_outcome(error: str, attempts: int, validate_only: bool,
                                      removes_only: bool, outcome: str) -> None:
    assert quota_outcome(error, attempts, validate_only, removes_only) == outcome


@pytest.mark.parametrize(("ops", "removes_only"), [
    ({"producer_byte_rate": None}, True),
    ({"producer_byte_rate": None, "consumer_byte_rate": None}, True),
    ({"producer_byte_rate": None, "consumer_byte_rate": 5.0}, False),
    ({"producer_byte_rate": 5.0}, False),
    ({}, False)])
def test_an_entry_that_only_removes_keys_is_removed_when_done(
        ops: dict[str, float | None], removes_only: bool) -> None:
    assert QuotaEntry(ALICE, ops).removes_only is removes_only


# -- batching and local refusals -------------------------------------------------------------


def test_batches_hold_at_most_batch_size_in_order() -> None:
    runs = list(batches(list(range(1000)), 200))
    assert [len(r) for r in runs] == [200] * 5
    assert list(itertools.chain(*runs)) == list(range(1000))
    assert list(batches([4, 7, 9], 2)) == [[4, 7], [9]]
    assert list(batches([], 5)) == []
    with pytest.raises(ValueError, match="batch_size must be at least 1, not 0"):
        list(batches([1], 0))


def test_entries_the_broker_would_misanswer_are_named_by_index() -> None:
    entries = [
        QuotaEntry(ALICE, {"producer_byte_rate": 1.0}),
        QuotaEntry(DEFAULT_USER, {"producer_byte_rate": float("nan")}),
        QuotaEntry(PAIR, {}),
        QuotaEntry(Entity({"user": "alice"}), {"consumer_byte_rate": None}),
        QuotaEntry(IP_DEFAULT, {"connection_creation_rate": float("inf")}),
        QuotaEntry(Entity({"user": "carol"}), {"request_percentage": 150,
                                                "producer_byte_rate": None}),
        QuotaEntry(Entity({"user": "dave"}), {"producer_byte_rate": True}),  # type: ignore[dict-item]
    ]
    twice = "Entity({'user': 'alice'}) appears 2 times in this change: one entry per entity"
    assert entry_problems(entries) == {
        0: twice,
        1: "producer_byte_rate: not a finite number",
        2: "no quota to set or remove",
        3: twice,
        4: "connection_creation_rate: not a finite number",
        6: "producer_byte_rate: not a finite number",
    }


# -- requests as built -----------------------------------------------------------------------


def test_describe_every_entity_is_no_component_and_not_strict() -> None:
    request = describe_request(None)
    assert isinstance(request, DescribeClientQuotasRequest)
    assert request.to_dict() == {"components": [], "strict": False}


def test_describe_one_entity_matches_each_type_exactly_or_as_the_default_strictly() -> None:
    request = describe_request(Entity({"client-id": None, "user": "bob"}))
    assert request.to_dict() == {"components": [
        {"entity_type": "user", "match_type": 0, "match": "bob"},
        {"entity_type": "client-id", "match_type": 1, "match": None}], "strict": True}


def test_alter_request_carries_each_entity_its_ops_and_validate_only() -> None:
    request = alter_request([
        QuotaEntry(PAIR, {"producer_byte_rate": 1024, "consumer_byte_rate": None}),
        QuotaEntry(IP_DEFAULT, {"connection_creation_rate": 7.0})], validate_only=True)
    assert isinstance(request, AlterClientQuotasRequest)
    expected = {"validate_only": True, "entries": [
        {"entity": [{"entity_type": "user", "entity_name": "bob"},
                    {"entity_type": "client-id", "entity_name": "app"}],
         "ops": [{"key": "consumer_byte_rate", "value": 0.0, "remove": True},
                 {"key": "producer_byte_rate", "value": 1024.0, "remove": False}]},
        {"entity": [{"entity_type": "ip", "entity_name": None}],
         "ops": [{"key": "connection_creation_rate", "value": 7.0, "remove": False}]}]}
    assert request.to_dict() == expected
    # what goes on the wire reads back the same at both versions
    for version in (0, 1):
        decoded = AlterClientQuotasRequest.decode(request.encode(version=version),
                                                  version=version)
        assert decoded.to_dict() == expected


# -- the batch loop on scripted answers --------------------------------------------------------

KAFKA = KafkaConf(request_timeout_ms=300, throttle_retries=2)


class _Admin:
    def __init__(self) -> None:
        self.cluster = ClusterConf("scripted", "127.0.0.1:1")
        self.kafka = KAFKA
        # A client whose connections no broker throttles (kafka.compat.throttle_delay_ms).
        manager = type("Manager", (), {"_conns": {}})()
        self.client = type("Client", (), {"_manager": manager})()
        self.lost_deadline: float | None = None


Reply = Callable[[Any], Any]


class _Broker:
    """Stands in for `compat.send_to_node`: each request sent is kept in `sent` and takes the
    next reply of `script` (an exception is raised, a function of the request is called)."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.script: list[Any] = []

    def reply(self, *replies: Any) -> None:
        self.script.extend(replies)

    def send(self, client: Any, node: Any, request: Any, use: str) -> Any:
        assert node is None and "ClientQuotas" in use
        self.sent.append(request)
        reply = self.script.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply(request)


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> _Broker:
    scripted = _Broker()
    monkeypatch.setattr(quotas, "send_to_node", scripted.send)
    monkeypatch.setattr(retry, "pause", lambda s: None)
    return scripted


def answer(codes: dict[Entity, tuple[int, str | None]], reverse: bool = True,
           throttle_ms: int = 0) -> Reply:
    """A reply answering every entity of the request (in reverse order, as a broker's hash
    map may), with the code given for it or NONE."""
    cls = AlterClientQuotasResponse.EntryData

    def reply(request: Any) -> Any:
        entries = []
        for entry in request.entries:
            entity = Entity({p.entity_type: p.entity_name for p in entry.entity})
            code, message = codes.get(entity, (0, None))
            entries.append(cls(error_code=code, error_message=message, entity=[
                cls.EntityData(entity_type=p.entity_type, entity_name=p.entity_name)
                for p in entry.entity]))
        return AlterClientQuotasResponse(throttle_time_ms=throttle_ms,
                                         entries=entries[::-1] if reverse else entries)

    return reply


def ok(attempts: int = 1) -> dict[str, Any]:
    return {"error_code": 0, "error_name": "NONE", "error_message": None, "attempts": attempts}


def entities_of(request: Any) -> list[Entity]:
    return [Entity({p.entity_type: p.entity_name for p in e.entity}) for e in request.entries]


ENTRIES = [QuotaEntry(Entity({"user": f"u{i}"}), {"producer_byte_rate": 1000.0 + i})
           for i in range(5)]


def test_answers_are_matched_by_entity_in_batches_of_batch_size(broker: _Broker) -> None:
    bad = ENTRIES[3].entity
    broker.reply(answer({}), answer({bad: (42, "Invalid configuration key foo")}), answer({}))
    results = alter_client_quotas(_Admin(), ENTRIES, False, batch_size=2)  # type: ignore[arg-type]
    assert results == [ok(), ok(), ok(), {"error_code": 42, "error_name": "INVALID_REQUEST",
                                          "error_message": "Invalid configuration key foo",
                                          "attempts": 1}, ok()]
    assert [entities_of(r) for r in broker.sent] == [
        [ENTRIES[0].entity, ENTRIES[1].entity], [ENTRIES[2].entity, ENTRIES[3].entity],
        [ENTRIES[4].entity]]
    assert [r.validate_only for r in broker.sent] == [False] * 3


def test_throttled_entities_alone_are_sent_again(broker: _Broker) -> None:
    throttled = ENTRIES[1].entity
    broker.reply(answer({throttled: (89, "throttled")}, throttle_ms=250), answer({}))
    results = alter_client_quotas(_Admin(), ENTRIES[:3], True, 10)  # type: ignore[arg-type]
    assert results == [ok(), ok(attempts=2), ok()]
    assert [entities_of(r) for r in broker.sent] == [[e.entity for e in ENTRIES[:3]], [throttled]]
    assert all(r.validate_only for r in broker.sent)


def test_throttling_past_the_retries_is_the_last_answer(broker: _Broker) -> None:
    throttled = {ENTRIES[0].entity: (89, "throttled")}
    broker.reply(answer(throttled), answer(throttled), answer(throttled))
    results = alter_client_quotas(_Admin(), ENTRIES[:1], False, 10)  # type: ignore[arg-type]
    assert results == [{"error_code": 89, "error_name": "THROTTLING_QUOTA_EXCEEDED",
                        "error_message": "throttled", "attempts": 3}]


def test_a_lost_answer_is_resent_unchanged_and_counted(broker: _Broker) -> None:
    broker.reply(Errors.KafkaConnectionError("socket disconnected"), answer({}))
    results = alter_client_quotas(_Admin(), ENTRIES[:2], False, 10)  # type: ignore[arg-type]
    assert results == [ok(attempts=2), ok(attempts=2)]
    assert broker.sent[0].to_dict() == broker.sent[1].to_dict()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second passes at each look at the clock: past KAFKA's 0.3 s lost deadline at the
    second loss."""
    ticks = itertools.count()
    monkeypatch.setattr(retry, "now", lambda: float(next(ticks)))


@pytest.mark.parametrize(("losses", "error"), [
    ([Errors.KafkaConnectionError("socket disconnected")] * 2,
     (-1, "KafkaConnectionError", "KafkaConnectionError: socket disconnected")),
    ([Errors.RequestTimedOutError("Request timed out after 300 ms")] * 2,
     (7, "REQUEST_TIMED_OUT", "[Error 7] RequestTimedOutError: Request timed out after 300 ms")),
    # a node backing off after the lost answer is no less uncertain about the first send
    ([Errors.KafkaConnectionError("socket disconnected"), Errors.NodeNotReadyError(1)],
     (-1, "KafkaConnectionError", "KafkaConnectionError: socket disconnected")),
])
def test_an_unanswered_batch_is_uncertain_and_the_next_batches_are_not_sent(
        broker: _Broker, clock: None, losses: list[BaseException],
        error: tuple[int, str, str]) -> None:
    broker.reply(*losses)
    admin = _Admin()
    results = alter_client_quotas(admin, ENTRIES[:5], False, 2)  # type: ignore[arg-type]
    code, name, message = error
    sends = sum(1 for e in losses if not isinstance(e, Errors.NodeNotReadyError))
    not_sent = {"error_code": -1, "error_name": "NOT_SENT", "attempts": 0,
                "error_message": f"not sent: an earlier request of this change went "
                                 f"unanswered ({message})"}
    assert results == [{"error_code": code, "error_name": name, "error_message": message,
                        "attempts": sends}] * 2 + [not_sent] * 3
    assert [quota_outcome(r["error_name"], r["attempts"], False, False) for r in results] == [
        "unknown", "unknown", "failed", "failed", "failed"]
    assert len(broker.sent) == len(losses)
    # the next change on this admin gives up at its first loss: the deadline is past
    broker.reply(Errors.KafkaConnectionError("socket disconnected"), answer({}))
    assert alter_client_quotas(admin, ENTRIES[:1], False, 2) == [  # type: ignore[arg-type]
        {"error_code": -1, "error_name": "KafkaConnectionError", "attempts": 1,
         "error_message": "KafkaConnectionError: socket disconnected"}]
    assert len(broker.script) == 1  # never resent


def test_an_answer_ends_the_admins_lost_spell(broker: _Broker) -> None:
    admin = _Admin()
    admin.lost_deadline = 0.0
    broker.reply(answer({}), Errors.KafkaConnectionError("socket disconnected"), answer({}))
    assert alter_client_quotas(admin, ENTRIES[:1], False, 2) == [ok()]  # type: ignore[arg-type]
    assert admin.lost_deadline is None
    assert alter_client_quotas(admin, ENTRIES[:1], False, 2) == [  # type: ignore[arg-type]
        ok(attempts=2)]


def test_a_broker_without_the_api_rejects_every_entity_unsent(broker: _Broker) -> None:
    broker.reply(Errors.IncompatibleBrokerVersion("no AlterClientQuotas"),
            Errors.IncompatibleBrokerVersion("no AlterClientQuotas"))
    results = alter_client_quotas(_Admin(), ENTRIES[:3], False, 2)  # type: ignore[arg-type]
    refused = {"error_code": 35, "error_name": "UNSUPPORTED_VERSION", "attempts": 0}
    assert [{k: r[k] for k in refused} for r in results] == [refused] * 3
    assert results[0]["error_message"].startswith("not sent: ")
    assert {quota_outcome(r["error_name"], 0, False, False) for r in results} == {"rejected"}


def test_an_entity_the_response_leaves_out_is_answered_so(broker: _Broker) -> None:
    def partial_reply(request: Any) -> Any:
        full = answer({})(request)
        full.entries = full.entries[1:]
        return full

    broker.reply(partial_reply)
    results = alter_client_quotas(_Admin(), ENTRIES[:2], False, 10)  # type: ignore[arg-type]
    assert results == [ok(), {"error_code": -1, "error_name": "UNKNOWN_SERVER_ERROR",
                              "error_message": "the broker's response did not answer this "
                                               "entity", "attempts": 1}]


def test_local_refusals_are_never_sent_and_the_rest_is(broker: _Broker) -> None:
    entries = [ENTRIES[0], QuotaEntry(ALICE, {}), ENTRIES[1], ENTRIES[0]]
    broker.reply(answer({}))
    results = alter_client_quotas(_Admin(), entries, False, 10)  # type: ignore[arg-type]
    assert [(r["error_name"], r["attempts"]) for r in results] == [
        ("INVALID_MANIFEST_ROW", 0), ("INVALID_MANIFEST_ROW", 0), ("NONE", 1),
        ("INVALID_MANIFEST_ROW", 0)]
    assert results[1]["error_message"] == "not sent: no quota to set or remove"
    assert [entities_of(r) for r in broker.sent] == [[ENTRIES[1].entity]]


def test_nothing_to_send_sends_nothing(broker: _Broker) -> None:
    assert alter_client_quotas(_Admin(), [], False, 10) == []  # type: ignore[arg-type]
    assert broker.sent == []


# -- describe on scripted answers ----------------------------------------------------------


def described(*entities: tuple[Entity, dict[str, float]], code: int = 0,
              message: str | None = None) -> Reply:
    cls = DescribeClientQuotasResponse.EntryData
    return lambda request: DescribeClientQuotasResponse(
        throttle_time_ms=0, error_code=code, error_message=message,
        entries=None if code else [cls(
            entity=[cls.EntityData(entity_type=k, entity_name=v) for k, v in e.items()],
            values=[cls.ValueData(key=k, value=v) for k, v in values.items()])
            for e, values in entities])


def test_every_entity_is_one_request_with_defaults_as_none(
        broker: _Broker) -> None:
    broker.reply(described((DEFAULT_USER, {"producer_byte_rate": 100.0}),
                            (PAIR, {"consumer_byte_rate": 5.0, "producer_byte_rate": 1.0})))
    assert describe_client_quotas(_Admin()) == {  # type: ignore[arg-type]
        DEFAULT_USER: {"producer_byte_rate": 100.0},
        PAIR: {"consumer_byte_rate": 5.0, "producer_byte_rate": 1.0}}
    assert [r.to_dict() for r in broker.sent] == [{"components": [], "strict": False}]


def test_a_few_entities_are_read_exactly_and_one_without_quotas_is_empty(
        broker: _Broker) -> None:
    broker.reply(described((ALICE, {"producer_byte_rate": 1.0})), described())
    assert describe_client_quotas(_Admin(), [ALICE, IP_DEFAULT]) == {  # type: ignore[arg-type]
        ALICE: {"producer_byte_rate": 1.0}, IP_DEFAULT: {}}
    assert [r.to_dict() for r in broker.sent] == [
        {"components": [{"entity_type": "user", "match_type": 0, "match": "alice"}],
         "strict": True},
        {"components": [{"entity_type": "ip", "match_type": 1, "match": None}],
         "strict": True}]


def test_many_entities_are_read_with_one_request_for_all(
        broker: _Broker) -> None:
    many = [Entity({"user": f"u{i}"}) for i in range(EXACT_READS + 1)]
    broker.reply(described((many[3], {"producer_byte_rate": 3.0}),
                            (ALICE, {"producer_byte_rate": 1.0})))
    found = describe_client_quotas(_Admin(), many)  # type: ignore[arg-type]
    assert found == {e: ({"producer_byte_rate": 3.0} if e == many[3] else {}) for e in many}
    assert len(broker.sent) == 1


@pytest.mark.parametrize(("reply", "code", "name", "message"), [
    (described(code=31, message="Cluster authorization failed."), 31,
     "CLUSTER_AUTHORIZATION_FAILED", "Cluster authorization failed."),
    (described(code=31, message=""), 31, "CLUSTER_AUTHORIZATION_FAILED", None),
    (Errors.IncompatibleBrokerVersion("no DescribeClientQuotas"), 35, "UNSUPPORTED_VERSION",
     "[Error 35] IncompatibleBrokerVersion: no DescribeClientQuotas"),
])
def test_a_request_that_fails_as_a_whole_raises_one_named_error(
        broker: _Broker, reply: Any, code: int, name: str,
        message: str | None) -> None:
    broker.reply(reply)
    with pytest.raises(QuotasUnreadable) as err:
        describe_client_quotas(_Admin())  # type: ignore[arg-type]
    assert (err.value.cluster, err.value.error_code, err.value.error_name,
            err.value.error_message) == ("scripted", code, name, message)
    assert str(err.value) == ("cluster scripted: DescribeClientQuotas failed: " + name
                              + (f": {message}" if message else ""))


# -- the compat check names the quota requests -------------------------------------------------


def test_a_release_without_the_internals_names_the_quota_requests() -> None:
    with pytest.raises(KafkaPythonIncompatible) as err:
        send_to_node(object(), None, "req", use=quotas._USE)  # type: ignore[arg-type]
    assert str(err.value).startswith(
        "kafka-python 3.0.12 has no KafkaAdminClient()._manager, which this job uses to send "
        "DescribeClientQuotas and AlterClientQuotas (kafka-python has no admin method for "
        "them);")
