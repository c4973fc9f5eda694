"""Client quotas (KIP-546, `provisioning.kinds.quotas.requests`) against a real Kafka 4.3 KRaft
broker: what it holds after each kind of change, which changes it refuses and how, with
validateOnly and for real, and what a lost answer does.

The session's SASL broker (the StandardAuthorizer; emptied for this module). Users: `admin` (the
super user, every test's own), `reader` (DESCRIBE_CONFIGS on the cluster), `alterer`
(ALTER_CONFIGS on the cluster) and `nobody` (no ACL). A second listener is reached only
through a TCP proxy, for the lost-answer tests. Every test starts and ends with no quota on
the cluster, and asserts the broker's whole quota state.

A change the broker answered is in its DescribeClientQuotas a moment later (the broker's
view follows the metadata log): reads that expect a change wait for it (`settled`). A read
that expects no change first makes a change of its own and waits for it (`unchanged`): the
log is applied in order, so anything the request under test wrote would show by then.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from kafka.protocol.admin import AlterClientQuotasRequest

from dev.devkafka import KafkaCluster
from provisioning import names
from provisioning.conf import ClusterConf, Credentials, KafkaConf, Secret
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.codes import error_name
from provisioning.kafka.compat import send_to_node
from provisioning.kinds.quotas import requests as quotas
from provisioning.kinds.quotas.entities import Entity, QuotaEntry
from provisioning.kinds.quotas.names import REMOVED, SET
from provisioning.kinds.quotas.requests import (
    QuotasUnreadable,
    alter_client_quotas,
    describe_client_quotas,
    quota_outcome,
)
from tests.helpers import grant
from tests.support.brokers import ADMIN_PASSWORD, USER_PASSWORD, reset
from tests.support.tcpproxy import KafkaProxy

pytestmark = pytest.mark.integration

KAFKA = KafkaConf(request_timeout_ms=5000)
ALTER_CLIENT_QUOTAS = 49
INVALID_REQUEST = 42

State = dict[Entity, dict[str, float]]


def E(**parts: str | None) -> Entity:
    """An entity from keyword arguments: client_id= stands for the `client-id` type."""
    return Entity({k.replace("_", "-"): v for k, v in parts.items()})


@pytest.fixture(scope="module")
def secured(sasl_kafka: KafkaCluster, sasl_proxy: KafkaProxy
            ) -> Iterator[tuple[KafkaCluster, KafkaProxy]]:
    """The session's SASL broker, emptied (brokers.reset), with this module's grants, and the
    proxy its PROXIED listener advertises."""
    reset(sasl_kafka)
    sasl_proxy.reset()
    settings = sasl_kafka.client_settings()
    grant(settings, "User:reader", [("CLUSTER", "kafka-cluster", "LITERAL",
                                     ["DESCRIBE_CONFIGS"])])
    grant(settings, "User:alterer", [("CLUSTER", "kafka-cluster", "LITERAL",
                                      ["ALTER_CONFIGS"])])
    yield sasl_kafka, sasl_proxy
    sasl_proxy.reset()
    reset(sasl_kafka)


def _admin(bootstrap: str, user: str = "admin", password: str = ADMIN_PASSWORD
           ) -> ClusterAdmin:
    conf = ClusterConf("quotas", bootstrap, "SASL_PLAINTEXT", "PLAIN")
    return ClusterAdmin(conf, Credentials(Secret(user), Secret(password)), KAFKA)


def settled(admin: ClusterAdmin, expected: State, timeout_s: float = 15) -> State:
    """The cluster's quotas once they are `expected`, or as they are after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = describe_client_quotas(admin)
        if found == expected or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


_MARKER = E(user="test-barrier")


def unchanged(admin: ClusterAdmin, before: State) -> State:
    """The cluster's quotas once a change made after the request under test shows, without
    that change (the marker's own entity)."""
    value = float(secrets.randbelow(1_000_000) + 1)
    assert alter_client_quotas(admin, [QuotaEntry(_MARKER, {"producer_byte_rate": value})],
                               False, 10) == [ok()]
    found = settled(admin, {**before, _MARKER: {"producer_byte_rate": value}})
    assert found.pop(_MARKER, None) == {"producer_byte_rate": value}
    assert alter_client_quotas(admin, [QuotaEntry(_MARKER, {"producer_byte_rate": None})],
                               False, 10) == [ok()]
    assert settled(admin, before) == before
    return found


def clear(admin: ClusterAdmin) -> None:
    live = describe_client_quotas(admin)
    if live:
        results = alter_client_quotas(
            admin, [QuotaEntry(e, dict.fromkeys(keys)) for e, keys in live.items()], False, 500)
        assert {r["error_name"] for r in results} == {"NONE"}
    assert settled(admin, {}) == {}


@pytest.fixture
def admin(secured: tuple[KafkaCluster, KafkaProxy]) -> Iterator[ClusterAdmin]:
    """The super user's admin on a cluster without quotas; every quota the test leaves is
    removed after it."""
    cluster, _ = secured
    with _admin(cluster.bootstrap_servers) as connected:
        assert describe_client_quotas(connected) == {}
        yield connected
        clear(connected)


def ok(attempts: int = 1) -> dict[str, Any]:
    return {"error_code": 0, "error_name": "NONE", "error_message": None, "attempts": attempts}


def refused(message: str, code: int = INVALID_REQUEST, attempts: int = 1) -> dict[str, Any]:
    return {"error_code": code, "error_name": error_name(code), "error_message": message,
            "attempts": attempts}


def outcomes(entries: Sequence[QuotaEntry], results: Sequence[dict[str, Any]],
             validate_only: bool) -> list[str]:
    return [quota_outcome(r["error_name"], r["attempts"], validate_only, e.removes_only)
            for e, r in zip(entries, results, strict=True)]


# -- what each kind of entity holds ------------------------------------------------------------

EVERY_KIND: State = {
    E(user="alice"): {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0},
    E(user=None): {"producer_byte_rate": 1_000_000.0},
    E(client_id="app"): {"request_percentage": 150.0},
    E(user="bob", client_id="app"): {"consumer_byte_rate": 4096.0},
    E(client_id=None): {"consumer_byte_rate": 5_000_000.0},
    E(user="carol", client_id=None): {"controller_mutation_rate": 1.5},
    E(user=None, client_id="batch"): {"producer_byte_rate": 8192.0},
    E(user=None, client_id=None): {"request_percentage": 0.5},
    E(ip="10.1.2.3"): {"connection_creation_rate": 7.0},
    E(ip=None): {"connection_creation_rate": 1000.0},
}


def test_every_kind_of_entity_is_set_and_described_with_exactly_its_values(
        admin: ClusterAdmin) -> None:
    entries = [QuotaEntry(e, v) for e, v in EVERY_KIND.items()]
    results = alter_client_quotas(admin, entries, False, batch_size=4)
    assert results == [ok()] * len(entries)
    assert outcomes(entries, results, False) == [SET] * len(entries)
    assert settled(admin, EVERY_KIND) == EVERY_KIND
    # read back one by one (exact, strict filters) and as the tables spell them
    assert describe_client_quotas(admin, list(EVERY_KIND)) == EVERY_KIND
    assert sorted(sorted(e.table_names().items()) for e in describe_client_quotas(admin)) == [
        [("client-id", "<default>")],
        [("client-id", "<default>"), ("user", "<default>")],
        [("client-id", "<default>"), ("user", "carol")],
        [("client-id", "app")],
        [("client-id", "app"), ("user", "bob")],
        [("client-id", "batch"), ("user", "<default>")],
        [("ip", "10.1.2.3")],
        [("ip", "<default>")],
        [("user", "<default>")],
        [("user", "alice")]]


def test_an_exact_read_is_that_entity_alone_and_empty_when_it_holds_nothing(
        admin: ClusterAdmin) -> None:
    held = {E(user="alice"): {"producer_byte_rate": 1.0},
            E(user="alice", client_id="app"): {"producer_byte_rate": 2.0},
            E(user=None): {"producer_byte_rate": 3.0}}
    alter_client_quotas(admin, [QuotaEntry(e, v) for e, v in held.items()], False, 10)
    assert settled(admin, held) == held
    assert describe_client_quotas(admin, [E(user="alice"), E(client_id="app"),
                                          E(user="alice", client_id=None)]) == {
        E(user="alice"): {"producer_byte_rate": 1.0}, E(client_id="app"): {},
        E(user="alice", client_id=None): {}}
    # past EXACT_READS: one request for every entity, the same answer
    many = [E(user="alice"), *(E(user=f"absent-{i}") for i in range(quotas.EXACT_READS))]
    assert describe_client_quotas(admin, many) == {
        e: held.get(e, {}) for e in many}


def test_removing_a_key_leaves_the_others_and_the_last_key_takes_the_entity(
        admin: ClusterAdmin) -> None:
    alice, dflt = E(user="alice"), E(ip=None)
    alter_client_quotas(admin, [
        QuotaEntry(alice, {"producer_byte_rate": 1.0, "consumer_byte_rate": 2.0,
                           "request_percentage": 30.0}),
        QuotaEntry(dflt, {"connection_creation_rate": 500.0})], False, 10)
    first = [QuotaEntry(alice, {"consumer_byte_rate": None})]
    results = alter_client_quotas(admin, first, False, 10)
    assert results == [ok()] and outcomes(first, results, False) == [REMOVED]
    assert settled(admin, {alice: {"producer_byte_rate": 1.0, "request_percentage": 30.0},
                           dflt: {"connection_creation_rate": 500.0}}) == {
        alice: {"producer_byte_rate": 1.0, "request_percentage": 30.0},
        dflt: {"connection_creation_rate": 500.0}}
    last = [QuotaEntry(alice, {"producer_byte_rate": None, "request_percentage": None}),
            QuotaEntry(dflt, {"connection_creation_rate": None})]
    assert alter_client_quotas(admin, last, False, 10) == [ok(), ok()]
    assert settled(admin, {}) == {}
    assert describe_client_quotas(admin, [alice, dflt]) == {alice: {}, dflt: {}}
    # removing what is gone is answered NONE: a resent removal is the same change again
    assert alter_client_quotas(admin, last, False, 10) == [ok(), ok()]
    assert unchanged(admin, {}) == {}


def test_a_set_and_a_remove_in_one_entry_are_one_change(admin: ClusterAdmin) -> None:
    bob = E(user="bob")
    alter_client_quotas(admin, [QuotaEntry(bob, {"producer_byte_rate": 1.0})], False, 10)
    entry = [QuotaEntry(bob, {"producer_byte_rate": None, "consumer_byte_rate": 9.0})]
    results = alter_client_quotas(admin, entry, False, 10)
    assert results == [ok()] and outcomes(entry, results, False) == [SET]
    assert settled(admin, {bob: {"consumer_byte_rate": 9.0}}) == {
        bob: {"consumer_byte_rate": 9.0}}


# -- refusals ------------------------------------------------------------------------------

COMBINATION = ("Invalid quota entity combination, IP entity shouldnot be combined with User "
               "or ClientId")
REFUSALS = {
    "unknown key": (E(user="u1"), {"foo_rate": 1.0}, "Invalid configuration key foo_rate"),
    "upper-case key": (E(user="u1"), {"PRODUCER_BYTE_RATE": 1.0},
                       "Invalid configuration key PRODUCER_BYTE_RATE"),
    "connection rate on a user": (E(user="u1"), {"connection_creation_rate": 5.0},
                                  "Invalid configuration key connection_creation_rate"),
    "connection rate on user+client": (E(user="u1", client_id="c1"),
                                       {"connection_creation_rate": 5.0},
                                       "Invalid configuration key connection_creation_rate"),
    "byte rate on an ip": (E(ip="10.0.0.1"), {"producer_byte_rate": 5.0},
                           "Invalid configuration key producer_byte_rate"),
    "byte rate on the default ip": (E(ip=None), {"consumer_byte_rate": 5.0},
                                    "Invalid configuration key consumer_byte_rate"),
    "ip out of range": (E(ip="300.1.1.1"), {"connection_creation_rate": 5.0},
                        "300.1.1.1 is not a valid IP or resolvable host."),
    "ip as a CIDR": (E(ip="10.0.0.0/8"), {"connection_creation_rate": 5.0},
                     "10.0.0.0/8 is not a valid IP or resolvable host."),
    "ip not a name": (E(ip="not an ip"), {"connection_creation_rate": 5.0},
                      "not an ip is not a valid IP or resolvable host."),
    "negative": (E(user="u1"), {"producer_byte_rate": -1.0},
                 "Quota producer_byte_rate must be greater than 0"),
    "zero": (E(user="u1"), {"consumer_byte_rate": 0.0},
             "Quota consumer_byte_rate must be greater than 0"),
    "zero percentage": (E(client_id="c1"), {"request_percentage": 0.0},
                        "Quota request_percentage must be greater than 0"),
    "zero connection rate": (E(ip="10.0.0.1"), {"connection_creation_rate": 0.0},
                             "Quota connection_creation_rate must be greater than 0"),
    "fractional byte rate": (E(user="u1"), {"producer_byte_rate": 1.5},
                             "producer_byte_rate cannot be a fractional value."),
    "fractional connection rate": (E(ip="10.0.0.1"), {"connection_creation_rate": 1.5},
                                   "connection_creation_rate cannot be a fractional value."),
    "byte rate past a long": (E(user="u1"), {"producer_byte_rate": 1e19},
                              "Proposed value for producer_byte_rate is too large for a LONG."),
    "connection rate past an int": (E(ip="10.0.0.1"), {"connection_creation_rate": 3e9},
                                    "Proposed value for connection_creation_rate is too large "
                                    "for an INT."),
    "ip with a user": (E(user="u1", ip="10.0.0.1"), {"connection_creation_rate": 5.0},
                       COMBINATION),
    "ip with a client": (E(client_id=None, ip=None), {"connection_creation_rate": 5.0},
                         COMBINATION),
    "empty user name": (E(user=""), {"producer_byte_rate": 5.0}, "Empty user not supported"),
    "empty client-id": (E(client_id=""), {"producer_byte_rate": 5.0},
                        "Empty client-id not supported"),
    "empty ip": (E(ip=""), {"connection_creation_rate": 5.0}, "Empty ip not supported"),
    "unknown entity type": (Entity({"group": "g1"}), {"producer_byte_rate": 5.0},
                            "Unhandled client quota entity type: group"),
}


@pytest.mark.parametrize("validate_only", [True, False], ids=["validate_only", "real"])
@pytest.mark.parametrize("case", list(REFUSALS))
def test_each_refusal_is_invalid_request_with_its_message_and_changes_nothing(
        admin: ClusterAdmin, case: str, validate_only: bool) -> None:
    entity, ops, message = REFUSALS[case]
    held = {E(user="held"): {"producer_byte_rate": 100.0}}
    alter_client_quotas(admin, [QuotaEntry(entity_, v) for entity_, v in held.items()],
                        False, 10)
    assert settled(admin, held) == held
    entry = [QuotaEntry(entity, ops)]
    results = alter_client_quotas(admin, entry, validate_only, 10)
    assert results == [refused(message)]
    assert outcomes(entry, results, validate_only) == [names.REJECTED]
    assert unchanged(admin, held) == held


ACCEPTED = {
    "request_percentage above 100": (E(user="u1"), {"request_percentage": 250.0}),
    "fractional request_percentage": (E(user="u1"), {"request_percentage": 0.25}),
    "fractional controller_mutation_rate": (E(user="u1"), {"controller_mutation_rate": 0.5}),
    "client-id alone": (E(client_id="c1"), {"producer_byte_rate": 5.0}),
    "an IPv6 address": (E(ip="::1"), {"connection_creation_rate": 5.0}),
    # the broker resolves a host name: it is a valid ip entity, kept as named
    "a host name as ip": (E(ip="localhost"), {"connection_creation_rate": 5.0}),
    # a user literally named <default> is not the default user to a KRaft broker
    "a user named <default>": (E(user="<default>"), {"producer_byte_rate": 5.0}),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_what_the_broker_accepts_is_validated_without_change_then_set(
        admin: ClusterAdmin, case: str) -> None:
    entity, ops = ACCEPTED[case]
    entry = [QuotaEntry(entity, ops)]
    results = alter_client_quotas(admin, entry, True, 10)
    assert results == [ok()] and outcomes(entry, results, True) == [names.VALIDATED]
    assert unchanged(admin, {}) == {}
    results = alter_client_quotas(admin, entry, False, 10)
    assert results == [ok()] and outcomes(entry, results, False) == [SET]
    assert settled(admin, {entity: dict(ops)}) == {entity: dict(ops)}


def test_without_alter_configs_every_entity_is_refused_before_it_is_judged(
        secured: tuple[KafkaCluster, KafkaProxy], admin: ClusterAdmin) -> None:
    cluster, _ = secured
    held = {E(user="held"): {"producer_byte_rate": 100.0}}
    alter_client_quotas(admin, [QuotaEntry(e, v) for e, v in held.items()], False, 10)
    assert settled(admin, held) == held
    entries = [QuotaEntry(E(user="x"), {"producer_byte_rate": 5.0}),
               QuotaEntry(E(user="y"), {"foo_rate": 5.0})]
    denied = refused("Cluster authorization failed.", code=31)
    for user in ("reader", "nobody"):
        with _admin(cluster.bootstrap_servers, user, USER_PASSWORD) as limited:
            for validate_only in (True, False):
                results = alter_client_quotas(limited, entries, validate_only, 10)
                assert results == [denied, denied]
                assert outcomes(entries, results, validate_only) == [names.REJECTED] * 2
    # DESCRIBE_CONFIGS reads them; ALTER_CONFIGS implies it; nothing at all reads nothing
    with _admin(cluster.bootstrap_servers, "reader", USER_PASSWORD) as reader:
        assert describe_client_quotas(reader) == held
    with _admin(cluster.bootstrap_servers, "alterer", USER_PASSWORD) as alterer:
        assert describe_client_quotas(alterer) == held
        assert alter_client_quotas(alterer, entries, False, 10) == [
            ok(), refused("Invalid configuration key foo_rate")]
    with _admin(cluster.bootstrap_servers, "nobody", USER_PASSWORD) as nobody, \
            pytest.raises(QuotasUnreadable) as err:
        describe_client_quotas(nobody)
    assert (err.value.error_code, err.value.error_name, err.value.error_message) == (
        31, "CLUSTER_AUTHORIZATION_FAILED", None)
    assert str(err.value) == ("cluster quotas: DescribeClientQuotas failed: "
                              "CLUSTER_AUTHORIZATION_FAILED")
    after = {**held, E(user="x"): {"producer_byte_rate": 5.0}}
    assert settled(admin, after) == after


# -- a batch is answered entity by entity ----------------------------------------------------


@pytest.mark.parametrize("validate_only", [True, False], ids=["validate_only", "real"])
def test_good_entities_are_made_beside_bad_ones_in_one_request(
        admin: ClusterAdmin, validate_only: bool) -> None:
    entries = [
        QuotaEntry(E(user="good-1"), {"producer_byte_rate": 1000.0}),
        QuotaEntry(E(user="bad-key"), {"foo_rate": 1.0}),
        QuotaEntry(E(ip="10.2.2.2"), {"connection_creation_rate": 3.0}),
        QuotaEntry(E(user="bad-value"), {"consumer_byte_rate": -5.0}),
        QuotaEntry(E(user="good-2", client_id=None), {"consumer_byte_rate": 2000.0}),
        QuotaEntry(E(user="bad-combination", ip=None), {"connection_creation_rate": 1.0}),
    ]
    results = alter_client_quotas(admin, entries, validate_only, batch_size=100)
    assert results == [
        ok(), refused("Invalid configuration key foo_rate"), ok(),
        refused("Quota consumer_byte_rate must be greater than 0"), ok(),
        refused(COMBINATION)]
    done = names.VALIDATED if validate_only else SET
    assert outcomes(entries, results, validate_only) == [
        done, names.REJECTED, done, names.REJECTED, done, names.REJECTED]
    if validate_only:
        assert unchanged(admin, {}) == {}
    else:
        good = {e.entity: dict(e.ops) for e in entries[0::2]}
        assert settled(admin, good) == good


def test_validate_only_changes_nothing_of_sets_and_removals(admin: ClusterAdmin) -> None:
    held = {E(user="alice"): {"producer_byte_rate": 1.0, "consumer_byte_rate": 2.0},
            E(ip=None): {"connection_creation_rate": 800.0}}
    alter_client_quotas(admin, [QuotaEntry(e, v) for e, v in held.items()], False, 10)
    assert settled(admin, held) == held
    entries = [QuotaEntry(E(user="alice"), {"producer_byte_rate": None,
                                            "consumer_byte_rate": None}),
               QuotaEntry(E(ip=None), {"connection_creation_rate": 900.0}),
               QuotaEntry(E(user="new"), {"request_percentage": 10.0})]
    results = alter_client_quotas(admin, entries, True, 2)
    assert results == [ok()] * 3
    assert outcomes(entries, results, True) == [names.VALIDATED] * 3
    assert unchanged(admin, held) == held


# -- what the broker does with requests this module never sends ---------------------------------


def raw_alter(admin: ClusterAdmin, entries: Sequence[tuple[Sequence[tuple[str, str | None]],
                                                           Sequence[tuple[str, float | None]]]],
              validate_only: bool = False) -> list[tuple[list[tuple[str, str | None]], int,
                                                         str | None]]:
    """An AlterClientQuotas request as given (duplicates and all); its answers sorted."""
    cls = AlterClientQuotasRequest.EntryData
    request = AlterClientQuotasRequest(entries=[cls(
        entity=[cls.EntityData(entity_type=t, entity_name=n) for t, n in entity],
        ops=[cls.OpData(key=k, value=0.0 if v is None else v, remove=v is None)
             for k, v in ops]) for entity, ops in entries], validate_only=validate_only)
    response = send_to_node(admin.client, None, request)
    return sorted(([(p.entity_type, p.entity_name) for p in e.entity], int(e.error_code),
                   e.error_message) for e in response.entries)


def test_an_entity_twice_in_one_request_is_applied_once_and_answered_invalid(
        admin: ClusterAdmin) -> None:
    duplicate = "Ignoring duplicate entity ClientQuotaEntity(entries={user=d1})"
    answers = raw_alter(admin, [([("user", "d1")], [("producer_byte_rate", 1.0)]),
                                ([("user", "d2")], [("producer_byte_rate", 2.0)]),
                                ([("user", "d1")], [("consumer_byte_rate", 3.0)])])
    assert answers == [([("user", "d1")], INVALID_REQUEST, duplicate),
                       ([("user", "d2")], 0, None)]
    # the first entry was made although its only answer says INVALID_REQUEST
    expected = {E(user="d1"): {"producer_byte_rate": 1.0},
                E(user="d2"): {"producer_byte_rate": 2.0}}
    assert settled(admin, expected) == expected
    # which is why the module never sends an entity twice
    entries = [QuotaEntry(E(user="d3"), {"producer_byte_rate": 1.0}),
               QuotaEntry(E(user="d3"), {"consumer_byte_rate": 1.0})]
    twice = {"error_code": -1, "error_name": names.INVALID_MANIFEST_ROW, "attempts": 0,
             "error_message": "not sent: Entity({'user': 'd3'}) appears 2 times in this "
                              "change: one entry per entity"}
    results = alter_client_quotas(admin, entries, False, 10)
    assert results == [twice, twice]
    assert outcomes(entries, results, False) == [names.REJECTED] * 2
    assert unchanged(admin, expected) == expected


def test_a_key_twice_an_empty_entity_infinity_and_no_op_are_changes_of_nothing(
        admin: ClusterAdmin) -> None:
    assert raw_alter(admin, [([("user", "k1")], [("producer_byte_rate", 1.0),
                                                 ("producer_byte_rate", None)])]) == [
        ([("user", "k1")], INVALID_REQUEST,
         "Ignoring duplicate entity ClientQuotaEntity(entries={user=k1})")]
    assert raw_alter(admin, [([], [("producer_byte_rate", 1.0)])]) == [
        ([], INVALID_REQUEST, "Invalid empty client quota entity")]
    assert raw_alter(admin, [([("user", "k2")], [("producer_byte_rate", float("inf"))])]) == [
        ([("user", "k2")], INVALID_REQUEST,
         "Proposed value for producer_byte_rate is too large for a LONG.")]
    # an entry without ops is answered NONE and changes nothing
    assert raw_alter(admin, [([("user", "k3")], [])]) == [([("user", "k3")], 0, None)]
    # two names of one type: the last one is the entity
    assert raw_alter(admin, [([("user", "k4"), ("user", "k5")],
                              [("producer_byte_rate", 1.0)])]) == [([("user", "k5")], 0, None)]
    expected = {E(user="k5"): {"producer_byte_rate": 1.0}}
    assert settled(admin, expected) == expected
    assert unchanged(admin, expected) == expected


def test_nan_is_stored_by_the_broker_so_the_module_never_sends_it(admin: ClusterAdmin) -> None:
    assert raw_alter(admin, [([("user", "n1")], [("producer_byte_rate", float("nan"))])]) == [
        ([("user", "n1")], 0, None)]
    deadline = time.monotonic() + 15
    while not (found := describe_client_quotas(admin)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(found) == [E(user="n1")]
    assert list(found[E(user="n1")]) == ["producer_byte_rate"]
    assert found[E(user="n1")]["producer_byte_rate"] != found[E(user="n1")][
        "producer_byte_rate"]  # NaN
    entry = [QuotaEntry(E(user="n2"), {"producer_byte_rate": float("nan")})]
    assert alter_client_quotas(admin, entry, False, 10) == [{
        "error_code": -1, "error_name": names.INVALID_MANIFEST_ROW, "attempts": 0,
        "error_message": "not sent: producer_byte_rate: not a finite number"}]


# -- a lost answer ---------------------------------------------------------------------------


@pytest.fixture
def proxied(secured: tuple[KafkaCluster, KafkaProxy], admin: ClusterAdmin
            ) -> Iterator[tuple[KafkaProxy, ClusterAdmin]]:
    """An admin whose every request crosses the proxy (and the direct admin's cleanup)."""
    _, proxy = secured
    with _admin(f"127.0.0.1:{proxy.port}") as through:
        yield proxy, through
    proxy.reset()


@pytest.mark.parametrize("validate_only", [True, False], ids=["validate_only", "real"])
def test_a_request_whose_answer_is_lost_is_sent_again_as_the_same_change(
        proxied: tuple[KafkaProxy, ClusterAdmin], admin: ClusterAdmin,
        validate_only: bool) -> None:
    proxy, through = proxied
    held = {E(user="alice"): {"producer_byte_rate": 1.0, "consumer_byte_rate": 2.0}}
    alter_client_quotas(admin, [QuotaEntry(e, v) for e, v in held.items()], False, 10)
    assert settled(admin, held) == held
    entries = [QuotaEntry(E(user="alice"), {"consumer_byte_rate": None}),
               QuotaEntry(E(user="bob"), {"producer_byte_rate": 5.0})]
    proxy.arm("cut", api_key=ALTER_CLIENT_QUOTAS)
    results = alter_client_quotas(through, entries, validate_only, 10)
    assert proxy.fired == ["cut"]
    assert proxy.requests[ALTER_CLIENT_QUOTAS] == 2
    assert results == [ok(attempts=2)] * 2
    if validate_only:
        assert outcomes(entries, results, True) == [names.VALIDATED] * 2
        assert unchanged(admin, held) == held
    else:
        assert outcomes(entries, results, False) == [REMOVED, SET]
        after = {E(user="alice"): {"producer_byte_rate": 1.0},
                 E(user="bob"): {"producer_byte_rate": 5.0}}
        assert settled(admin, after) == after


def test_a_cluster_gone_dark_leaves_the_batch_unknown_and_sends_no_more(
        proxied: tuple[KafkaProxy, ClusterAdmin], admin: ClusterAdmin) -> None:
    proxy, through = proxied
    entries = [QuotaEntry(E(user=f"dark-{i}"), {"producer_byte_rate": 10.0 + i})
               for i in range(5)]
    proxy.arm("dark", api_key=ALTER_CLIENT_QUOTAS)
    started = time.monotonic()
    results = alter_client_quotas(through, entries, False, batch_size=2)
    elapsed = time.monotonic() - started
    assert proxy.fired == ["dark"]
    # the first send and a resend on a new connection, each unanswered in its timeout
    # (kafka-python gives a connection being set up twice the request timeout)
    timeout = KAFKA.request_timeout_ms
    assert results[:2] == [{
        "error_code": 7, "error_name": "REQUEST_TIMED_OUT", "attempts": 2,
        "error_message": f"[Error 7] RequestTimedOutError: Request timed out after "
                         f"{results[0]['error_message'].split()[-2]} ms"}] * 2
    assert 0 < int(results[0]["error_message"].split()[-2]) <= timeout
    gone = results[0]["error_message"]
    assert results[2:] == [{"error_code": -1, "error_name": "NOT_SENT", "attempts": 0,
                            "error_message": "not sent: an earlier request of this change "
                                             f"went unanswered ({gone})"}] * 3
    assert outcomes(entries, results, False) == [names.UNKNOWN] * 2 + [names.FAILED] * 3
    assert 3 * timeout / 1000 <= elapsed < 4 * timeout / 1000
    # nothing crossed the proxy: the broker holds nothing
    assert unchanged(admin, {}) == {}
    proxy.restore()
    # a new admin (this one's lost deadline has passed): the same entries, all set
    with _admin(f"127.0.0.1:{proxy.port}") as again:
        assert alter_client_quotas(again, entries, False, 2) == [ok()] * 5
    expected = {e.entity: dict(e.ops) for e in entries}
    assert settled(admin, expected) == expected


# -- scale -------------------------------------------------------------------------------------


def test_a_thousand_entities_are_set_in_five_requests_and_read_back_exactly(
        admin: ClusterAdmin, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[int] = []
    real_send = quotas.send_to_node

    def counting(client: Any, node: Any, request: Any, use: str) -> Any:
        if isinstance(request, AlterClientQuotasRequest):
            sent.append(len(request.entries))
        return real_send(client, node, request, use=use)

    monkeypatch.setattr(quotas, "send_to_node", counting)
    wanted: State = {E(user=f"bench-{i:04d}"): {"producer_byte_rate": 1_000_000.0 + i,
                                                "consumer_byte_rate": 2_000_000.0 + i}
                     for i in range(1000)}
    entries = [QuotaEntry(e, v) for e, v in wanted.items()]
    started = time.monotonic()
    results = alter_client_quotas(admin, entries, False, batch_size=200)
    set_s = time.monotonic() - started
    assert sent == [200] * 5
    assert results == [ok()] * 1000
    assert settled(admin, wanted) == wanted
    started = time.monotonic()
    assert describe_client_quotas(admin, list(wanted)) == wanted
    read_s = time.monotonic() - started
    removals = [QuotaEntry(e, dict.fromkeys(v)) for e, v in wanted.items()]
    results = alter_client_quotas(admin, removals, False, batch_size=200)
    assert sent == [200] * 10
    assert outcomes(removals, results, False) == [REMOVED] * 1000
    assert settled(admin, {}) == {}
    print(f"1,000 entities: set in 5 requests {set_s:.2f} s, read back {read_s:.2f} s")
