"""The latest snapshot of each cluster, as the reports read it."""

from __future__ import annotations

import datetime as dt

from chispa import assert_df_equality

from provisioning.views.report import latest_snapshot

_SCHEMA = "cluster string, topic string, run_id string, snapshot_at timestamp"


def _at(minute: int) -> dt.datetime:
    return dt.datetime(2026, 11, 25, 1, minute)


def test_the_newest_run_of_each_cluster_whole_even_with_rows_read_at_two_times(spark) -> None:
    """An apply's view read under its lock keeps the first read's rows (and times) for
    the topics it did not read again: the report takes every row of that run."""
    rows = [
        ("a", "t1", "r1", _at(0)), ("a", "t2", "r1", _at(0)),
        ("a", "t1", "r2", _at(5)), ("a", "t2", "r2", _at(7)), ("a", "t3", "r2", _at(5)),
        ("b", "t1", "r1", _at(0)), ("b", "t9", "r3", _at(3)),
    ]
    got = latest_snapshot(spark.createDataFrame(rows, _SCHEMA))
    expected = spark.createDataFrame([
        ("a", "t1", "r2", _at(5)), ("a", "t2", "r2", _at(7)), ("a", "t3", "r2", _at(5)),
        ("b", "t9", "r3", _at(3)),
    ], _SCHEMA)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
