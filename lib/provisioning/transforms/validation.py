"""Manifest rows validated as data: each problem becomes a reason in `row_errors`.

Nothing here raises for a bad row: a row with reasons is rejected in the plan
(and audited), while the other rows of the same run go on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from provisioning.names import STATES

MAX_TOPIC_LENGTH = 249


def _reasons(*checks: Column) -> Column:
    return F.filter(F.array(*checks), lambda r: r.isNotNull())


def reason_when(condition: Column, message: Column | str) -> Column:
    """`message` where `condition` holds, else null: one check of a row."""
    return F.when(condition, message if isinstance(message, Column) else F.lit(message))


def is_valid() -> Column:
    """The row has no reason against it (`row_errors` empty or null)."""
    return F.coalesce(F.size("row_errors") == 0, F.lit(True))


def with_reasons(df: DataFrame, checks: Sequence[Column]) -> DataFrame:
    """`df` with the non-null `checks` appended to its `row_errors`; spelled as a two-way
    split, as concat over coalesce would make the column non-nullable."""
    reasons, current = _reasons(*checks), F.col("row_errors")
    return df.withColumn("row_errors", F.when(current.isNull(), reasons)
                         .otherwise(F.concat(current, reasons)))


def unnamed(rows: DataFrame, named: DataFrame, key: Sequence[str]) -> DataFrame:
    """The `rows` whose `key` no row of `named` has (nulls equal to nulls)."""
    n = named.select(*key).alias("_n")
    return rows.alias("_r").join(n, on=[F.col(f"_r.{c}").eqNullSafe(F.col(f"_n.{c}"))
                                        for c in key], how="left_anti")


def with_copies_refused(df: DataFrame, key: Sequence[str], named: Column,
                        reason: Callable[[Column], Column]) -> DataFrame:
    """`df` with every `named` row whose `key` another row has too refused: `reason(others)`
    is its reason, `others` the other rows' sources (`table@version`, sorted), or "another
    row of the same table". Which copy is meant cannot be guessed, so none goes on."""
    source = F.concat_ws("@", "source_table", F.col("source_version").cast("string"))
    copies = df.withColumn("_sources", F.collect_list(source).over(Window.partitionBy(*key)))
    others = F.array_join(F.array_sort(F.array_remove("_sources", source)), ", ")
    refused = reason_when(named & (F.size("_sources") > 1), reason(
        F.when(others == "", F.lit("another row of the same table")).otherwise(others)))
    return with_reasons(copies, [refused]).drop("_sources")


def _topic_reasons() -> list[Column]:
    topic = F.col("topic")
    missing = topic.isNull() | (topic == "")
    bad_chars = ~missing & ~topic.rlike(r"^[a-zA-Z0-9._-]+$")
    too_long = ~missing & (F.length(topic) > MAX_TOPIC_LENGTH)
    dots = topic.isin(".", "..")
    return [
        reason_when(missing, "topic: is missing or empty"),
        reason_when(bad_chars, F.format_string(
            "topic: '%s' has characters outside [a-zA-Z0-9._-]", topic)),
        reason_when(too_long, F.format_string(
            "topic: name is %d characters long; Kafka allows at most %d",
            F.length(topic), F.lit(MAX_TOPIC_LENGTH))),
        reason_when(dots, F.format_string("topic: '%s' is not a legal topic name", topic)),
    ]


def cluster_reasons(known_clusters: Sequence[str]) -> list[Column]:
    """The reasons a row's `cluster` is refused (missing, or not in the conf); null when
    it is fine. Shared by every kind of manifest row."""
    cluster = F.col("cluster")
    missing = cluster.isNull() | (cluster == "")
    unknown = ~missing & ~cluster.isin(*known_clusters) if known_clusters else ~missing
    return [
        reason_when(missing, "cluster: is missing"),
        reason_when(unknown, F.format_string(
            "cluster: '%s' is not defined in the conf (known: %s)",
            cluster, F.lit(", ".join(sorted(known_clusters)) or "none"))),
    ]


def _shape_reasons() -> list[Column]:
    state = F.col("state")
    partitions = F.col("partitions")
    rf = F.col("replication_factor")
    assignment = F.col("replica_assignment")
    configs = F.col("configs")

    has_assignment = assignment.isNotNull()
    keys = F.array_sort(F.map_keys(assignment))
    replica_counts = F.array_distinct(F.transform(F.map_values(assignment), F.size))
    expected_keys = F.sequence(F.lit(0), F.size(keys) - 1)
    gapped = has_assignment & (keys != expected_keys)
    uneven = has_assignment & (F.size(replica_counts) > 1)
    no_replicas = has_assignment & F.array_contains(replica_counts, 0)
    repeated_broker = has_assignment & F.exists(
        F.map_values(assignment), lambda b: F.size(F.array_distinct(b)) != F.size(b))
    null_config = configs.isNotNull() & F.exists(F.map_values(configs), lambda v: v.isNull())
    empty_config_key = configs.isNotNull() & F.exists(F.map_keys(configs), lambda k: k == "")

    return [
        reason_when(state.isNotNull() & ~state.isin(*STATES), F.format_string(
            "state: '%s' must be present or absent", state)),
        reason_when(partitions < 1, F.format_string(
            "partitions: must be >= 1 (or null for the broker default), got %d", partitions)),
        reason_when(rf < 1, F.format_string(
            "replication_factor: must be >= 1 (or null for the broker default), got %d", rf)),
        reason_when(has_assignment & (partitions.isNotNull() | rf.isNotNull()),
              "replica_assignment: excludes partitions and replication_factor (KIP-4); "
              "give one or the other"),
        reason_when(gapped, F.format_string(
            "replica_assignment: partitions must be numbered 0..n-1, got [%s]",
            F.array_join(keys.cast("array<string>"), ", "))),
        reason_when(uneven, F.format_string(
            "replica_assignment: every partition needs the same number of replicas, got [%s]",
            F.array_join(F.array_sort(replica_counts).cast("array<string>"), ", "))),
        reason_when(no_replicas, "replica_assignment: a partition lists no broker"),
        reason_when(repeated_broker, "replica_assignment: a partition lists the same broker twice"),
        reason_when(null_config, F.format_string(
            "configs: no value given for %s",
            F.array_join(F.map_keys(F.map_filter(configs, lambda _, v: v.isNull())), ", "))),
        reason_when(empty_config_key, "configs: a config name is empty"),
    ]


def with_row_errors(known_clusters: Sequence[str]) -> Callable[[DataFrame], DataFrame]:
    """Append a reason to `row_errors` for every problem of a DESIRED row.

    An empty `replica_assignment` map is read as none (null), as the broker reads a
    CreateTopics entry with an empty assignment list: partitions and replication factor
    then decide.
    """

    def transform(df: DataFrame) -> DataFrame:
        checks = [*cluster_reasons(known_clusters), *_topic_reasons(), *_shape_reasons()]
        assignment = F.col("replica_assignment")
        df = df.withColumn("replica_assignment", F.when(F.size(assignment) > 0, assignment))
        return df.withColumn(
            "row_errors", F.concat(F.coalesce("row_errors", F.array().cast("array<string>")),
                                   _reasons(*checks)))

    return transform


def with_duplicate_errors(df: DataFrame) -> DataFrame:
    """Reject every copy of a (cluster, topic) that appears more than once (KIP-4).

    A CreateTopics request naming a topic twice is invalid as a whole, and which
    copy is meant cannot be guessed, so no copy goes on.
    """
    same_topic = Window.partitionBy("cluster", "topic")
    copies = F.count(F.lit(1)).over(same_topic)
    sources = F.array_join(F.array_sort(F.collect_list(
        F.concat_ws("@", "source_table", F.col("source_version").cast("string"))
    ).over(same_topic)), ", ")
    duplicate = F.col("cluster").isNotNull() & F.col("topic").isNotNull() & (copies > 1)
    reason = F.format_string(
        "duplicate: (%s, %s) appears %d times, in %s; no copy is applied",
        F.col("cluster"), F.col("topic"), copies, sources)
    return df.withColumn(
        "row_errors", F.concat("row_errors", _reasons(reason_when(duplicate, reason))))

