"""Offset resets as pure transforms: requests validated as data (ids, names, partitions, `to`
and its value), and the plan per partition (targets by `to`, clamped to the log, the lags,
a topic or partition that is not there, a request done before)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from provisioning.kinds.offsets.plan import plan_resets, with_reset_row_errors
from provisioning.kinds.offsets.schema import OFFSET_LIVE, OFFSET_PLAN, OFFSET_RESET_DESIRED
from schemas import column_names
from tests.builders import rows_df

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
NOW_MS = int(NOW.timestamp() * 1000)
TOS = "earliest, latest, timestamp, duration, shift, offset, delete"


def requests(spark: SparkSession, *rows: dict[str, Any]) -> DataFrame:
    """Requests on cluster local, group g, topic t, source r@1, validated at NOW."""
    return rows_df(spark, OFFSET_RESET_DESIRED, [
        {"cluster": "local", "group": "g", "topic": "t", **r} for r in rows],
        {"source_table": "r", "source_version": 1, "row_errors": []}
    ).transform(with_reset_row_errors(("local",), NOW))


def errors(df: DataFrame) -> dict[str, list[str]]:
    return {r["request_id"]: r["row_errors"] for r in df.collect()}


def test_each_to_reads_its_value_and_bad_values_are_refused_by_name(
        spark: SparkSession) -> None:
    df = requests(
        spark,
        {"request_id": "e", "to": "earliest"},
        {"request_id": "ts", "to": "timestamp", "value": "2026-11-29T10:00:00Z"},
        {"request_id": "tz", "to": "timestamp", "value": "2026-11-29T11:00:00+01:00"},
        {"request_id": "d", "to": "duration", "value": "P1DT1H30M"},
        {"request_id": "s", "to": "shift", "value": "-20"},
        {"request_id": "o", "to": "offset", "value": "7"},
        {"request_id": "bad-to", "to": "yesterday"},
        {"request_id": "no-zone", "to": "timestamp", "value": "2026-11-29T10:00:00"},
        {"request_id": "bad-dur", "to": "duration", "value": "1 hour"},
        {"request_id": "bad-shift", "to": "shift", "value": "ten"},
        {"request_id": "neg-offset", "to": "offset", "value": "-1"},
        {"request_id": "valued", "to": "latest", "value": "3"},
    )
    got = {r["request_id"]: (r["at_ms"], r["amount"], r["row_errors"]) for r in df.collect()}
    ten = int(dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.UTC).timestamp() * 1000)
    assert got == {
        "e": (None, None, []),
        "ts": (ten, None, []),
        "tz": (ten, None, []),
        "d": (NOW_MS - (86_400 + 5_400) * 1000, None, []),
        "s": (None, -20, []),
        "o": (None, 7, []),
        "bad-to": (None, None, [f"to: 'yesterday' is not one of {TOS}"]),
        "no-zone": (None, None, ["value: '2026-11-29T10:00:00' is not an ISO-8601 time "
                                 "with its zone, such as 2026-11-28T09:00:00Z"]),
        "bad-dur": (None, None, ["value: '1 hour' is not an ISO-8601 duration back from "
                                 "now, such as PT1H or P1DT12H"]),
        "bad-shift": (None, None, ["value: 'ten' is not a signed integer, such as -100 or "
                                   "+20"]),
        "neg-offset": (None, None, ["value: '-1' is not an offset: an integer, 0 or more"]),
        "valued": (None, None, ["value: latest takes no value (got '3')"]),
    }


def test_names_partitions_and_duplicate_ids_are_refused_and_other_rows_go_on(
        spark: SparkSession) -> None:
    df = requests(
        spark,
        {"request_id": "dup", "to": "earliest"},
        {"request_id": "dup", "to": "latest", "group": "g2"},
        {"request_id": "names", "to": "earliest", "group": " ", "topic": "a topic"},
        {"request_id": "parts", "to": "earliest", "partitions": [1, 1, -2]},
        {"request_id": "where", "to": "earliest", "cluster": "elsewhere"},
        {"request_id": "fine", "to": "earliest", "partitions": [0, 2]},
    )
    dup = ("request_id: dup is also the id of another row of the same table; no copy is "
           "applied (ids are unique)")
    assert sorted(errors(df).items()) == sorted({
        "dup": [dup], "fine": [],
        "names": ["group: ' ' is not a legal group id (1 to 255 characters, no control "
                  "character, not blank)",
                  "topic: 'a topic' is not a legal topic name (1 to 249 of a-z A-Z 0-9 . _ -)"],
        "parts": ["partitions: a partition is null or negative",
                  "partitions: a partition is named twice"],
        "where": ["cluster: 'elsewhere' is not defined in the conf (known: local)"],
    }.items())
    assert [r["row_errors"] for r in df.collect() if r["request_id"] == "dup"] == [[dup], [dup]]


def live(spark: SparkSession, *rows: tuple[Any, ...]) -> DataFrame:
    return spark.createDataFrame([("local", *r) for r in rows], OFFSET_LIVE)


def plan_row(**cols: Any) -> dict[str, Any]:
    return {"cluster": "local", "group": "g", "topic": "t", "source_table": "r",
            "requested_by": cols.get("requested_by"), "owner": cols.get("requested_by"),
            "source_version": 1, "row_errors": [], "policy_violations": [], **cols}


def test_targets_are_clamped_to_the_log_with_the_lags_before_and_after(
        spark: SparkSession) -> None:
    reqs = requests(
        spark,
        {"request_id": "early", "to": "earliest"},
        {"request_id": "late", "to": "latest", "partitions": [1]},
        {"request_id": "back", "to": "shift", "value": "-50", "partitions": [0]},
        {"request_id": "past", "to": "offset", "value": "99", "partitions": [0]},
        {"request_id": "ts", "to": "timestamp", "value": "2026-11-29T10:00:00Z"},
        {"request_id": "del", "to": "delete", "partitions": [1]},
    )
    # Partition 0: log 10..40, committed 30; partition 1: log 0..5, nothing committed.
    lv = [("early", 0, 30, 10, 40, None), ("early", 1, None, 0, 5, None),
          ("late", 0, 30, 10, 40, None), ("late", 1, None, 0, 5, None),
          ("back", 0, 30, 10, 40, None), ("back", 1, None, 0, 5, None),
          ("past", 0, 30, 10, 40, None), ("past", 1, None, 0, 5, None),
          ("ts", 0, 30, 10, 40, 25), ("ts", 1, None, 0, 5, None),
          ("del", 0, 30, 10, 40, None), ("del", 1, None, 0, 5, None)]
    got = plan_resets(reqs, live(spark, *lv),
                      spark.createDataFrame([], "request_id string, run_id string"))
    cols = ("request_id", "partition", "action", "to", "value", "committed", "log_start",
            "log_end", "wanted", "target", "clamped", "lag_before", "lag_after", "note")
    ts = "2026-11-29T10:00:00Z"
    expected = [
        ("early", 0, "RESET", "earliest", None, 30, 10, 40, 10, 10, False, 10, 30, None),
        ("early", 1, "RESET", "earliest", None, None, 0, 5, 0, 0, False, None, 5, None),
        ("late", 1, "RESET", "latest", None, None, 0, 5, 5, 5, False, None, 0, None),
        ("back", 0, "RESET", "shift", "-50", 30, 10, 40, -20, 10, True, 10, 30,
         "clamped: -20 is before the log start 10"),
        ("past", 0, "RESET", "offset", "99", 30, 10, 40, 99, 40, True, 10, 0,
         "clamped: 99 is past the log end 40"),
        ("ts", 0, "RESET", "timestamp", ts, 30, 10, 40, 25, 25, False, 10, 15, None),
        ("ts", 1, "RESET", "timestamp", ts, None, 0, 5, 5, 5, False, None, 0,
         "no record at or after the time: the log end"),
        ("del", 1, "DELETE", "delete", None, None, 0, 5, None, None, None, None, None, None),
    ]
    assert_df_equality(got, spark.createDataFrame(
        [plan_row(**dict(zip(cols, e, strict=True))) for e in expected], OFFSET_PLAN),
        ignore_row_order=True, ignore_nullable=True)


def test_a_missing_topic_or_partition_and_a_shift_with_nothing_committed_are_refused(
        spark: SparkSession) -> None:
    reqs = requests(
        spark,
        {"request_id": "gone", "to": "earliest", "topic": "nope"},
        {"request_id": "p9", "to": "earliest", "partitions": [0, 9, 7]},
        {"request_id": "shift", "to": "shift", "value": "+1", "partitions": [1]},
        {"request_id": "bad", "to": "sideways"},
    )
    lv = live(spark, ("gone", None, None, None, None, None),
              ("p9", 0, 3, 0, 5, None), ("p9", 1, None, 0, 5, None),
              ("shift", 0, 3, 0, 5, None), ("shift", 1, None, 0, 5, None))
    got = plan_resets(reqs, lv, spark.createDataFrame([], "request_id string, run_id string"))
    rows = {(r["request_id"], r["partition"]): (r["action"], r["row_errors"])
            for r in got.collect()}
    assert rows == {
        ("gone", None): ("RESET", ["topic: nope does not exist on cluster local"]),
        ("p9", None): ("RESET", ["partitions: topic t has no partition 7, 9 (it has 2)"]),
        ("shift", 1): ("RESET", ["shift: partition 1 has no committed offset to shift "
                                 "from"]),
        ("bad", None): ("RESET", [f"to: 'sideways' is not one of {TOS}"]),
    }


def test_a_request_applied_before_is_planned_done_with_the_run_that_applied_it(
        spark: SparkSession) -> None:
    reqs = requests(spark, {"request_id": "once", "to": "earliest"},
                    {"request_id": "new", "to": "latest"})
    lv = live(spark, ("once", 0, 30, 10, 40, None), ("new", 0, 30, 10, 40, None))
    done = spark.createDataFrame([("once", "run-1")], "request_id string, run_id string")
    got = plan_resets(reqs, lv, done).select("request_id", "partition", "action", "target",
                                             "done_by", "note")
    assert_df_equality(got, spark.createDataFrame(
        [("once", None, "NOOP", None, "run-1", "done: applied by run run-1"),
         ("new", 0, "RESET", 40, None, None)],
        "request_id string, partition int, action string, target long, done_by string, "
        "note string"),
        ignore_row_order=True, ignore_nullable=True)
    assert column_names(OFFSET_PLAN) == plan_resets(reqs, lv, done).columns
