"""Which topics an apply reads again under its lock (`kafka.snapshot.reread_rows`): the
decision over a listing, with an admin stand-in that answers from a dict."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from provisioning.kafka.client import LiveTopic
from provisioning.kafka.snapshot import reread_rows, topic_shape
from schemas import SNAPSHOT, column_names

_ABSENT = "UNKNOWN_TOPIC_OR_PARTITION"


def _topic(name: str, partitions: int = 1, topic_id: str | None = None,
           error: str | None = None) -> LiveTopic:
    return LiveTopic(name=name, topic_id=topic_id or f"id-{name}", internal=False,
                     partitions=None if error else partitions,
                     replication_factor=None if error else 1,
                     replica_assignment=None if error else {p: [1] for p in range(partitions)},
                     error_name=error)


class _Admin:
    """Lists `listed`; describes by name from `by_name` (else absent); records calls."""

    def __init__(self, listed: Sequence[LiveTopic], by_name: Sequence[LiveTopic] = ()) -> None:
        self.cluster = SimpleNamespace(name="c")
        self.listed = list(listed)
        self.by_name = {t.name: t for t in [*listed, *by_name]}
        self.calls: list[tuple[str, Any]] = []

    def describe_topics(self, names: Sequence[str] | None = None) -> list[LiveTopic]:
        self.calls.append(("describe", None if names is None else list(names)))
        if names is None:
            return self.listed
        return [self.by_name.get(n, _topic(n, error=_ABSENT)) for n in names]

    def topic_configs(self, names: Sequence[str], only_non_default: bool = True
                      ) -> dict[str, list[dict[str, Any]]]:
        self.calls.append(("configs", list(names)))
        return {n: [{"name": "retention.ms", "value": "1", "source": "DYNAMIC_TOPIC_CONFIG",
                     "read_only": False, "sensitive": False}] for n in names}

    def topics_in_use(self) -> dict[str, list[str]]:
        self.calls.append(("groups", None))
        return {"b": ["g1"]}


def _seen(*topics: LiveTopic) -> dict[str, Any]:
    return {t.name: topic_shape(t.topic_id, t.partitions, t.replication_factor,
                                t.replica_assignment, t.error_name) for t in topics}


_AT = dt.datetime(2026, 11, 25, 1, 0, tzinfo=dt.UTC)


def _read(admin: _Admin, seen: dict[str, Any], changing: set[str]
          ) -> tuple[list[tuple[str, int | None, list[str] | None]], set[str]]:
    rows, again = reread_rows(admin, "run", "cid", _AT, seen, changing)
    i = {c: n for n, c in enumerate(column_names(SNAPSHOT))}
    return ([(r[i["topic"]], r[i["partitions"]], r[i["consumer_groups"]]) for r in rows],
            again)


def test_only_the_changing_topics_and_those_the_listing_shows_otherwise_are_read() -> None:
    a, b, c, d = _topic("a"), _topic("b"), _topic("c"), _topic("d")
    # Since the first read: c got a partition, d was re-made (another id), e is new, f gone.
    admin = _Admin([a, b, _topic("c", 2), _topic("d", topic_id="new-d"), _topic("e")])
    rows, again = _read(admin, _seen(a, b, c, d, _topic("f")), {"b", "g"})
    assert again == {"b", "c", "d", "e", "f", "g"}
    # f and g are described by name and absent now: no row.
    assert rows == [("b", 1, ["g1"]), ("c", 2, []), ("d", 1, []), ("e", 1, [])]
    assert admin.calls == [("describe", None), ("groups", None),
                           ("configs", ["b", "c", "d", "e"]), ("describe", ["f", "g"])]


def test_a_hidden_topic_is_read_again_by_name_and_keeps_its_error() -> None:
    hidden = _topic("h", error="TOPIC_AUTHORIZATION_FAILED")
    admin = _Admin([_topic("a")], by_name=[hidden])
    rows, again = _read(admin, _seen(_topic("a"), hidden), set())
    assert (rows, again) == ([("h", None, None)], {"h"})


def test_nothing_changing_and_an_unchanged_listing_reads_nothing_more() -> None:
    a = _topic("a")
    admin = _Admin([a])
    assert _read(admin, _seen(a), set()) == ([], set())
    assert admin.calls == [("describe", None)]
