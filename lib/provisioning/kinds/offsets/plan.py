"""Offset reset requests validated as data, and planned per partition against the offsets
read for them (OFFSET_PLAN rows).

What is checked here, as rows (`with_reset_row_errors`): the request id (present, unique
across the tables read), the cluster, the group id and topic name (legal), the partitions
(none null, negative or named twice), `to`, and the value as `to` reads it (an ISO-8601
time with its zone, an ISO-8601 duration, a signed integer, an offset, or none). A request
naming a partition its topic does not have, or a topic the cluster does not have, is
refused in the plan, once its topic is read; a shift of a partition with no committed
offset is refused on that partition's row.

RESET   a move: its target is the offset `to` asks for, clamped to the log's start and end
DELETE  `to: delete`: the group's committed offsets on the topic removed
NOOP    a request an earlier run applied (`done_by` names that run)
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.kinds.offsets.names import (
    DELETE,
    DELETE_TO,
    DONE,
    DURATION,
    EARLIEST,
    LATEST,
    OFFSET,
    RESET,
    SHIFT,
    TIMESTAMP,
    TOS,
    VALUELESS,
)
from provisioning.kinds.offsets.schema import OFFSET_LIVE, OFFSET_PLAN, OFFSET_RESET_DESIRED
from provisioning.transforms.policies.base import Transform
from provisioning.transforms.validation import (
    cluster_reasons,
    is_valid,
    reason_when,
    with_copies_refused,
    with_reasons,
)
from schemas import column_names

# A group id the job manages (as the groups kind's), and a legal topic name.
GROUP_NAME = r"^(?=.*\S)[^\p{Cntrl}]{1,255}$"
TOPIC_NAME = r"^(?!\.{1,2}$)[A-Za-z0-9._-]{1,249}$"
# An ISO-8601 time with its zone (no zone: which one would be a guess).
TIME = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$"
# An ISO-8601 duration of days, hours, minutes and seconds (`P1D`, `PT1H30M`, `PT90S`).
DURATION_FORM = (r"^P(?=\d|T\d)(?:(\d{1,6})D)?"
                 r"(?:T(?=\d)(?:(\d{1,7})H)?(?:(\d{1,9})M)?(?:(\d{1,11})S)?)?$")
SIGNED = r"^[+-]?\d{1,18}$"
UNSIGNED = r"^\d{1,18}$"
_MS = {1: 86_400_000, 2: 3_600_000, 3: 60_000, 4: 1_000}


def duration_ms(value: Column) -> Column:
    """An ISO-8601 duration (DURATION_FORM) in milliseconds; null when it is not one."""
    parts = [F.coalesce(F.regexp_extract(value, DURATION_FORM, i).try_cast("long"), F.lit(0))
             * F.lit(ms) for i, ms in _MS.items()]
    total = parts[0] + parts[1] + parts[2] + parts[3]
    return F.when(value.rlike(DURATION_FORM), total)


def time_ms(value: Column) -> Column:
    """An ISO-8601 time with its zone (TIME) in milliseconds since the epoch; else null."""
    return F.when(value.rlike(TIME), F.unix_millis(F.try_to_timestamp(value)))


def with_values(now: dt.datetime) -> Transform:
    """Requests with `at_ms` (timestamp: the time; duration: `now` less the duration) and
    `amount` (shift, offset) read from `value`; null when `value` is not what `to` takes."""
    now_ms = int(now.timestamp() * 1000)

    def transform(df: DataFrame) -> DataFrame:
        to, value = F.col("to"), F.col("value")
        at = (F.when(to == TIMESTAMP, time_ms(value))
              .when(to == DURATION, F.lit(now_ms) - duration_ms(value)))
        amount = (F.when((to == SHIFT) & value.rlike(SIGNED), value.try_cast("long"))
                  .when((to == OFFSET) & value.rlike(UNSIGNED), value.try_cast("long")))
        return df.withColumn("at_ms", at).withColumn("amount", amount)

    return transform


def row_reasons(known_clusters: tuple[str, ...]) -> list[Column]:
    """The reasons a request (OFFSET_RESET_DESIRED, values read) is refused (null: fine)."""
    rid, group, topic = F.col("request_id"), F.col("group"), F.col("topic")
    to, value, parts = F.col("to"), F.col("value"), F.col("partitions")
    unread = F.col("at_ms").isNull() & F.col("amount").isNull()
    form = {TIMESTAMP: "an ISO-8601 time with its zone, such as 2026-11-28T09:00:00Z",
            DURATION: "an ISO-8601 duration back from now, such as PT1H or P1DT12H",
            SHIFT: "a signed integer, such as -100 or +20",
            OFFSET: "an offset: an integer, 0 or more"}
    named_twice = F.size(parts) != F.size(F.array_distinct(parts))
    return [
        reason_when(rid.isNull() | (F.trim(rid) == ""), "request_id: is missing"),
        *cluster_reasons(known_clusters),
        reason_when(group.isNull(), "group: is missing"),
        reason_when(group.isNotNull() & ~group.rlike(GROUP_NAME), F.format_string(
            "group: '%s' is not a legal group id (1 to 255 characters, no control "
            "character, not blank)", group)),
        reason_when(topic.isNull(), "topic: is missing"),
        reason_when(topic.isNotNull() & ~topic.rlike(TOPIC_NAME), F.format_string(
            "topic: '%s' is not a legal topic name (1 to 249 of a-z A-Z 0-9 . _ -)",
            topic)),
        reason_when(F.exists(parts, lambda p: p.isNull() | (p < 0)),
              "partitions: a partition is null or negative"),
        reason_when(named_twice, "partitions: a partition is named twice"),
        reason_when(to.isNull(), F.lit("to: is missing; one of " + ", ".join(TOS))),
        reason_when(to.isNotNull() & ~to.isin(*TOS), F.format_string(
            "to: '%s' is not one of " + ", ".join(TOS), to)),
        reason_when(to.isin(*VALUELESS) & value.isNotNull(), F.format_string(
            "value: %s takes no value (got '%s')", to, value)),
        *[reason_when((to == t) & (value.isNull() | unread), F.format_string(
            "value: '%s' is not %s", F.coalesce(value, F.lit("(null)")), F.lit(text)))
          for t, text in form.items()],
    ]


def with_reset_row_errors(known_clusters: tuple[str, ...], now: dt.datetime) -> Transform:
    """Requests as read -> OFFSET_RESET_DESIRED rows with their values and reasons; every
    request whose id another row names too is refused, naming the other rows' sources."""

    def transform(df: DataFrame) -> DataFrame:
        read = df.transform(with_values(now))
        checked = with_reasons(read, row_reasons(known_clusters))
        return with_copies_refused(
            checked, ["request_id"], F.col("request_id").isNotNull(),
            lambda others: F.format_string(
                "request_id: %s is also the id of %s; no copy is applied (ids are unique)",
                F.col("request_id"), others)).select(*column_names(OFFSET_RESET_DESIRED))

    return transform


def _topic_reasons(requests: DataFrame, live: DataFrame) -> DataFrame:
    """Valid requests refused when their topic, as read, lacks it or a partition they name;
    a topic the cluster does not have was read as one live row with partition null."""
    have = (live.groupBy("request_id")
            .agg(F.array_sort(F.collect_list("partition")).alias("_have"),
                 F.max(F.col("partition").isNull().cast("int")).alias("_gone")))
    joined = requests.join(have, on="request_id", how="left")
    gone = F.coalesce(F.col("_gone") == 1, F.lit(False))
    lacking = F.array_sort(F.array_except("partitions", F.coalesce("_have", F.array())))
    read = F.col("_have").isNotNull() & ~gone
    checks = [
        reason_when(is_valid() & F.col("_have").isNull(), F.format_string(
            "cluster %s: the request's offsets could not be read; nothing is planned",
            F.col("cluster"))),
        reason_when(is_valid() & gone, F.format_string(
            "topic: %s does not exist on cluster %s", F.col("topic"), F.col("cluster"))),
        reason_when(is_valid() & read & (F.size(lacking) > 0), F.format_string(
            "partitions: topic %s has no partition %s (it has %d)", F.col("topic"),
            F.array_join(lacking, ", "), F.size("_have"))),
    ]
    return with_reasons(joined, checks).drop("_have", "_gone")


def _targets(rows: DataFrame) -> DataFrame:
    """Each partition row's wanted offset, its target clamped to the log, the lags, and a
    note when clamped or when no record is that late."""
    to = F.col("to")
    committed, start, end = F.col("committed"), F.col("log_start"), F.col("log_end")
    wanted = (F.when(to == EARLIEST, start).when(to == LATEST, end)
              .when(to.isin(TIMESTAMP, DURATION), F.coalesce(F.col("at_offset"), end))
              .when(to == SHIFT, committed + F.col("amount"))
              .when(to == OFFSET, F.col("amount")))
    target = F.least(F.greatest(F.col("wanted"), start), end)
    below, above = F.col("wanted") < start, F.col("wanted") > end
    late = to.isin(TIMESTAMP, DURATION) & F.col("at_offset").isNull()
    note = (F.when(below, F.format_string("clamped: %d is before the log start %d",
                                          F.col("wanted"), start))
            .when(above, F.format_string("clamped: %d is past the log end %d",
                                         F.col("wanted"), end))
            .when(late, F.lit("no record at or after the time: the log end")))
    no_base = (to == SHIFT) & committed.isNull()
    return (rows.withColumn("wanted", wanted)
            .withColumn("target", F.when(to != DELETE_TO, target))
            .withColumn("clamped", F.when(to != DELETE_TO, below | above))
            .withColumn("lag_before", end - committed)
            .withColumn("lag_after", end - F.col("target"))
            .withColumn("note", note)
            .transform(with_reasons, [reason_when(no_base, F.format_string(
                "shift: partition %d has no committed offset to shift from",
                F.col("partition")))]))


def plan_resets(requests: DataFrame, live: DataFrame, done: DataFrame) -> DataFrame:
    """OFFSET_PLAN rows: each valid request's partitions (those it names, or all its topic
    has) with their target; each refused request as one row (partition null); a request in
    `done` (request_id, run_id: the run whose apply sent it) is one NOOP row (partition
    null), never sent again."""
    ran = done.select("request_id", F.col("run_id").alias("done_by"))
    marked = requests.join(ran, on="request_id", how="left")
    is_done = F.col("done_by").isNotNull()
    read = live.select(*column_names(OFFSET_LIVE)).drop("cluster")
    checked = _topic_reasons(marked.where(~is_done | ~is_valid()), read)
    named = F.col("partitions").isNull() | F.array_contains("partitions", F.col("partition"))
    parts = (checked.where(is_valid()).join(read.where(F.col("partition").isNotNull()),
                                          on="request_id", how="inner")
             .where(named).transform(_targets))
    whole = [F.lit(None).cast(OFFSET_PLAN[c].dataType).alias(c) for c in
             ("partition", "committed", "log_start", "log_end", "wanted", "target",
              "clamped", "lag_before", "lag_after", "note")]
    refused = checked.where(~is_valid()).select("*", *whole)
    finished = marked.where(is_done & is_valid()).select("*", *whole)
    rows = (parts.unionByName(refused, allowMissingColumns=True)
            .unionByName(finished, allowMissingColumns=True))
    action = (F.when(is_done, F.lit(DONE)).when(F.col("to") == DELETE_TO, F.lit(DELETE))
              .otherwise(F.lit(RESET)))
    note = F.when(is_done, F.format_string("done: applied by run %s", F.col("done_by"))
                  ).otherwise(F.col("note"))
    return rows.select(
        *[F.col(c) for c in ("request_id", "cluster", "group", "topic", "partition")],
        action.alias("action"),
        *[F.col(c) for c in ("to", "value", "committed", "log_start", "log_end", "wanted",
                             "target", "clamped", "lag_before", "lag_after", "done_by",
                             "requested_by", "reason")],
        F.col("requested_by").alias("owner"),
        F.lit(None).cast("string").alias("state"),
        F.lit(None).cast("boolean").alias("force"),
        *[F.col(c) for c in ("source_table", "source_version", "row_errors")],
        F.array().cast(OFFSET_PLAN["policy_violations"].dataType).alias("policy_violations"),
        note.alias("note"),
    ).select(*column_names(OFFSET_PLAN))
