"""The digests that let a run leave an unchanged snapshot unrecorded
(`provisioning.delta.snapshots`): what changes them and what does not."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from provisioning.delta.snapshots import (
    DIGESTS_KEY,
    digests,
    recorded_digests,
    same_rows,
    unchanged,
)
from tests.builders import config_entry, snapshot_df

AT = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def _rows(run: str, retention: str = "86400000", at: dt.datetime = AT) -> list[dict[str, Any]]:
    return [
        {"run_id": run, "cluster": "a", "topic": "t1", "partitions": 3, "snapshot_at": at,
         "configs": [config_entry("retention.ms", retention)]},
        {"run_id": run, "cluster": "a", "topic": "t2", "partitions": 1, "snapshot_at": at},
        {"run_id": run, "cluster": "b", "topic": "t1", "partitions": 1, "snapshot_at": at},
    ]


def test_the_same_state_in_another_run_and_order_has_the_same_digests(spark: Any) -> None:
    first = digests(snapshot_df(spark, _rows("r1")))
    later = digests(snapshot_df(spark, list(reversed(_rows("r2", at=AT + dt.timedelta(1))))))
    assert sorted(first) == ["a", "b"]
    assert later == first
    assert first["a"] != first["b"]
    # a join puts its keys first: the columns' order is not the state
    keys = spark.createDataFrame([("a", "t1"), ("a", "t2"), ("b", "t1")],
                                 "cluster string, topic string")
    joined = snapshot_df(spark, _rows("r3")).join(keys, ["cluster", "topic"], "left_semi")
    assert joined.columns[:2] == ["cluster", "topic"]
    assert digests(joined) == first


def test_a_changed_value_changes_only_its_clusters_digest(spark: Any) -> None:
    first = digests(snapshot_df(spark, _rows("r1")))
    changed = digests(snapshot_df(spark, _rows("r2", retention="3600000")))
    assert changed["a"] != first["a"]
    assert changed["b"] == first["b"]
    # a value moved from one row to another is a change too, as is a row gone
    moved = _rows("r3")
    moved[0]["partitions"], moved[1]["partitions"] = 1, 3
    assert digests(snapshot_df(spark, moved))["a"] != first["a"]
    assert digests(snapshot_df(spark, _rows("r4")[1:]))["a"] != first["a"]


def test_two_reads_have_the_same_rows_only_when_every_clusters_digest_is_the_same(
        spark: Any) -> None:
    first = snapshot_df(spark, _rows("r1"))
    keys = spark.createDataFrame([("a", "t2"), ("a", "t1")], "cluster string, topic string")
    # rows read again, in another run, order and column order, against the first read's
    assert same_rows(first.join(keys, ["cluster", "topic"], "left_semi"),
                     snapshot_df(spark, list(reversed(_rows("r2", at=AT + dt.timedelta(1))[:2]))))
    assert same_rows(first, snapshot_df(spark, _rows("r2")))
    assert not same_rows(first, snapshot_df(spark, _rows("r2", retention="3600000")))
    # a row gone, a cluster gone
    assert not same_rows(first, snapshot_df(spark, _rows("r2")[1:]))
    assert not same_rows(first, snapshot_df(spark, _rows("r2")[:2]))
    assert not same_rows(first.where("cluster = 'b'"), first.where("cluster = 'a'"))


def test_a_view_is_unchanged_only_when_every_cluster_has_the_recorded_digest() -> None:
    last = recorded_digests(json.dumps({DIGESTS_KEY: {"a": "x", "b": "y"}}))
    assert last == {"a": "x", "b": "y"}
    assert unchanged({"a": "x"}, last)
    assert unchanged({"a": "x", "b": "y"}, last)
    assert not unchanged({"a": "x", "b": "z"}, last)
    assert not unchanged({"a": "x", "c": "y"}, last)
    assert not unchanged({}, last)


def test_commit_metadata_without_digests_names_none() -> None:
    assert recorded_digests(None) == {}
    assert recorded_digests("") == {}
    assert recorded_digests("not json") == {}
    assert recorded_digests(json.dumps(["a"])) == {}
    assert recorded_digests(json.dumps({"other": 1})) == {}
    assert recorded_digests(json.dumps({DIGESTS_KEY: "a"})) == {}
