"""The history `check` leaves: violations per rule per day, and when each topic started and
stopped breaking a rule.

Both read VIOLATIONS rows and the check runs (`check_runs`: one row per cluster a
completed `check` run judged in full). A run that finds nothing writes no VIOLATIONS row,
so only the runs can say that a rule stopped being broken, or that a day had none.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

CHECK_COMMAND = "check"


def check_runs(runs: DataFrame, command: str = CHECK_COMMAND) -> DataFrame:
    """(run_id, cluster, checked_at) for each cluster a completed check run judged in full.

    runs: RUNS rows. Completed: exit code 0 (no error violation) or 1 (some); a failed or
    interrupted run may have judged part of its topics. In full: no `--topics` glob (the
    `topics` key of RUNS.arguments null or empty), since a run over some topics says
    nothing of the others. The clusters are RUNS.clusters; checked_at is started_at.
    """
    glob = F.get_json_object(F.col("arguments"), "$.topics")
    return (runs.where((F.col("command") == F.lit(command)) & F.col("exit_code").isin(0, 1)
                       & (glob.isNull() | (glob == F.lit(""))))
            .select("run_id", F.explode("clusters").alias("_cluster"),
                    F.col("started_at").alias("checked_at"))
            .select("run_id", F.col("_cluster.cluster").alias("cluster"), "checked_at"))


def violations_per_day(violations: DataFrame, checks: DataFrame) -> DataFrame:
    """(cluster, day, run_id, rule, violations): per cluster and day, the violations of each
    rule that the day's last check run (of `checks`) found.

    Every rule seen on the cluster in those runs has a row for every day, 0 when the run
    found none; a cluster whose counted runs found nothing has one row per day with rule
    null and 0.
    """
    day = F.to_date("checked_at")
    latest_first = Window.partitionBy("cluster", "_day").orderBy(
        F.col("checked_at").desc(), F.col("run_id").desc())
    last = (checks.withColumn("_day", day)
            .withColumn("_n", F.row_number().over(latest_first))
            .where(F.col("_n") == 1)
            .select("cluster", F.col("_day").alias("day"), "run_id"))
    counted = (violations.join(last.select("run_id", "cluster"), on=["run_id", "cluster"],
                               how="left_semi")
               .groupBy("run_id", "cluster", "rule").agg(F.count(F.lit(1)).alias("_count")))
    rules = counted.select("cluster", "rule").distinct()
    return (last.join(rules, on="cluster", how="left")
            .join(counted, on=["run_id", "cluster", "rule"], how="left")
            .select("cluster", "day", "run_id", "rule",
                    F.coalesce(F.col("_count"), F.lit(0)).cast("long").alias("violations")))


def violation_spans(violations: DataFrame, checks: DataFrame) -> DataFrame:
    """One row per stretch of consecutive check runs (of its cluster, in `checks`) in which
    a topic broke a rule: (cluster, topic, rule, severity, detail, started_at,
    started_run_id, stopped_at, stopped_run_id, runs).

    started_*: the first run of the stretch; stopped_*: the first run after it, which no
    longer found the violation (null: it still stands); severity and detail: as the
    stretch's last run found them; runs: how many runs found it.
    """
    in_order = Window.partitionBy("cluster").orderBy("checked_at", "run_id")
    seq = checks.select("run_id", "cluster", "checked_at").withColumn(
        "_n", F.row_number().over(in_order))
    seen = violations.select("run_id", "cluster", "topic", "rule", "severity", "detail").join(
        seq, on=["run_id", "cluster"], how="inner")
    # Consecutive runs keep _n - (the violation's own count) constant: one stretch each.
    own = Window.partitionBy("cluster", "topic", "rule").orderBy("_n")
    stretches = (seen.withColumn("_stretch", F.col("_n") - F.row_number().over(own))
                 .groupBy("cluster", "topic", "rule", "_stretch")
                 .agg(F.min("_n").alias("_first"), F.max("_n").alias("_last"),
                      F.count(F.lit(1)).alias("runs"),
                      F.max_by(F.struct("severity", "detail"), F.col("_n")).alias("_latest")))
    start = seq.select("cluster", F.col("_n").alias("_first"),
                       F.col("checked_at").alias("started_at"),
                       F.col("run_id").alias("started_run_id"))
    stop = seq.select("cluster", (F.col("_n") - 1).alias("_last"),
                      F.col("checked_at").alias("stopped_at"),
                      F.col("run_id").alias("stopped_run_id"))
    return (stretches.join(start, on=["cluster", "_first"], how="inner")
            .join(stop, on=["cluster", "_last"], how="left")
            .select("cluster", "topic", "rule", F.col("_latest.severity").alias("severity"),
                    F.col("_latest.detail").alias("detail"), "started_at", "started_run_id",
                    "stopped_at", "stopped_run_id", F.col("runs").cast("long").alias("runs")))
