"""The history of `check`: which runs count, violations per rule per day from each day's last
run, and when a topic started and stopped breaking a rule."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from provisioning.transforms.trend import (
    check_runs,
    violation_spans,
    violations_per_day,
)
from tests.builders import runs_df, violations_df

NOV = dt.datetime(2026, 11, 1)


def at(day: int, hour: int) -> dt.datetime:
    return NOV.replace(day=day, hour=hour)


def run(run_id: str, when: dt.datetime, clusters: list[str], exit_code: int = 1,
        command: str = "check", topics: str | None = None) -> dict[str, Any]:
    return {"run_id": run_id, "command": command, "started_at": when, "exit_code": exit_code,
            "arguments": json.dumps({"clusters": [], "topics": topics}),
            "clusters": [{"cluster": c, "cluster_id": f"id-{c}", "brokers": 1, "topics": None,
                          "error": None} for c in clusters]}


RUNS = [
    run("r1", at(20, 8), ["local", "east"]),
    run("r2", at(20, 20), ["local"]),
    run("r3", at(21, 9), ["local", "west"], exit_code=0),
    run("r4", at(22, 9), ["local"]),
    # not counted: failed, interrupted, over some topics only, another command
    run("failed", at(21, 12), ["local"], exit_code=5),
    run("stopped", at(21, 13), ["local"], exit_code=6),
    run("some", at(21, 23), ["local"], topics="a.*"),
    run("plan", at(21, 22), ["local"], command="plan"),
]


def seen(run_id: str, cluster: str, topic: str, rule: str, severity: str = "warning"
         ) -> dict[str, Any]:
    return {"run_id": run_id, "cluster": cluster, "topic": topic, "rule": rule,
            "severity": severity, "detail": f"{topic} {rule} in {run_id}"}


VIOLATIONS = [
    seen("r1", "local", "t1", "drift"), seen("r1", "local", "t2", "unmanaged", "info"),
    seen("r1", "local", "t3", "offline_partition", "error"),
    seen("r1", "east", "e1", "unmanaged", "info"),
    seen("r2", "local", "t1", "drift", "error"), seen("r2", "local", "t2", "unmanaged", "info"),
    seen("r3", "local", "t2", "unmanaged", "info"),
    seen("r4", "local", "t1", "drift"), seen("r4", "local", "t2", "unmanaged", "info"),
    seen("r4", "local", "t3", "offline_partition", "error"),
    # rows of runs that do not count
    seen("failed", "local", "t9", "drift"), seen("some", "local", "t1", "drift"),
    seen("stopped", "local", "t3", "offline_partition", "error"),
]


def checks(spark: SparkSession) -> DataFrame:
    return check_runs(runs_df(spark, RUNS))


def test_only_completed_check_runs_over_every_topic_count(spark: SparkSession) -> None:
    expected = spark.createDataFrame([
        ("r1", "local", at(20, 8)), ("r1", "east", at(20, 8)), ("r2", "local", at(20, 20)),
        ("r3", "local", at(21, 9)), ("r3", "west", at(21, 9)), ("r4", "local", at(22, 9)),
    ], "run_id string, cluster string, checked_at timestamp")
    assert_df_equality(checks(spark), expected, ignore_row_order=True, ignore_nullable=True)


def test_violations_per_day_come_from_each_days_last_run(spark: SparkSession) -> None:
    found = violations_per_day(violations_df(spark, VIOLATIONS), checks(spark))

    d20, d21, d22 = (dt.date(2026, 11, d) for d in (20, 21, 22))
    expected = spark.createDataFrame([
        # r2 is the 20th's last run on local: r1's offline partition is not counted
        ("local", d20, "r2", "drift", 1), ("local", d20, "r2", "unmanaged", 1),
        ("local", d20, "r2", "offline_partition", 0),
        ("local", d21, "r3", "drift", 0), ("local", d21, "r3", "unmanaged", 1),
        ("local", d21, "r3", "offline_partition", 0),
        ("local", d22, "r4", "drift", 1), ("local", d22, "r4", "unmanaged", 1),
        ("local", d22, "r4", "offline_partition", 1),
        ("east", d20, "r1", "unmanaged", 1),
        # a run that found nothing on a cluster still counts its day
        ("west", d21, "r3", None, 0),
    ], "cluster string, day date, run_id string, rule string, violations long")
    assert_df_equality(found, expected, ignore_row_order=True, ignore_nullable=True)


def test_spans_start_and_stop_with_consecutive_runs(spark: SparkSession) -> None:
    found = violation_spans(violations_df(spark, VIOLATIONS), checks(spark))

    expected = spark.createDataFrame([
        # drift on t1 in r1 and r2, gone in r3, back in r4
        ("local", "t1", "drift", "error", "t1 drift in r2", at(20, 8), "r1", at(21, 9), "r3",
         2),
        ("local", "t1", "drift", "warning", "t1 drift in r4", at(22, 9), "r4", None, None, 1),
        ("local", "t2", "unmanaged", "info", "t2 unmanaged in r4", at(20, 8), "r1", None,
         None, 4),
        ("local", "t3", "offline_partition", "error", "t3 offline_partition in r1", at(20, 8),
         "r1", at(20, 20), "r2", 1),
        ("local", "t3", "offline_partition", "error", "t3 offline_partition in r4", at(22, 9),
         "r4", None, None, 1),
        ("east", "e1", "unmanaged", "info", "e1 unmanaged in r1", at(20, 8), "r1", None, None,
         1),
    ], "cluster string, topic string, rule string, severity string, detail string, "
       "started_at timestamp, started_run_id string, stopped_at timestamp, "
       "stopped_run_id string, runs long")
    assert_df_equality(found, expected, ignore_row_order=True, ignore_nullable=True)
