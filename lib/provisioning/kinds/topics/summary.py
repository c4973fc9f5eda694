"""What a run tells of its topics: outcome counts, actions per cluster, the topics to look
at (the rows of the kinds that extend the topics' rows included: they are topic rows); what
`snapshot` counts of the live topics, per cluster (`summarize_snapshot`)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from provisioning import names
from provisioning.kinds.topics.results import TopicsSummary
from provisioning.run.summary import by_cluster_and_action, counted_and_listed, tally
from provisioning.transforms.audit import final_rows

# The columns of a listed topic (views.plan_text renders them).
LISTED_COLUMNS = ("cluster", "topic", "action", "phase", "outcome", "error_name",
                  "error_message", "drift", "policy_violations", "result_partitions",
                  "result_replication_factor", "result_configs", "source_table",
                  "source_version", "topic_id", "requested_partitions",
                  "requested_replication_factor", "requested_configs", "requested_assignment",
                  "before_partitions", "before_configs", "config_ops")


def summarize(audit_rows: Sequence[DataFrame], listing_limit: int,
              deletes_allowed: bool, alters_allowed: bool = True,
              final_counts: Sequence[Mapping[str, Any]] | None = None,
              listed_extra: Sequence[str] = ()) -> TopicsSummary:
    """The run's topics summary from every topic AUDIT row it recorded: the final rows
    counted and the first `listing_limit` topics that are not simply settled listed
    (`run.summary.counted_and_listed`); no Spark job when the counts are known and every
    topic is settled.

    deletes_allowed: False for an apply without --allow-deletes (its planned deletions are
      counted as not made); True otherwise.
    alters_allowed: False for an apply without --allow-alter (its validated alters are
      counted as not made); True otherwise.
    final_counts: the final rows counted per cluster, action, phase and outcome (`n`),
      when the run knows them already (only its plan phase recorded rows).
    listed_extra: columns of a listed topic the kinds extending the topics' rows show.
    """
    final = final_rows(functools.reduce(DataFrame.unionByName, audit_rows))

    def listed(rows: DataFrame) -> DataFrame:
        return (rows.where(~F.col("outcome").isin(*names.SETTLED))
                .orderBy("cluster", "topic")
                .select(*LISTED_COLUMNS, *[c for c in listed_extra if c not in LISTED_COLUMNS]))

    grouped: Sequence[Row | Mapping[str, Any]]
    if final_counts is None:
        grouped, shown = counted_and_listed(final, listed, listing_limit)
    else:
        # No Spark job when every topic is settled.
        grouped = final_counts
        shown = listed(final).limit(listing_limit).collect() if tally(grouped)[2] else []
    counts, actions, total = tally(grouped)
    deletes_not_allowed = alters_not_allowed = 0
    for r in grouped:
        if (not deletes_allowed and r["phase"] == names.PLAN and r["outcome"] == names.PLANNED
                and r["action"] == names.DELETE):
            deletes_not_allowed += int(r["n"])
        if (not alters_allowed and r["phase"] == names.VALIDATE
                and r["outcome"] == names.VALIDATED and r["action"] == names.ALTER):
            alters_not_allowed += int(r["n"])
    return TopicsSummary(
        counts=counts,
        actions=by_cluster_and_action(actions, "topics"),
        topics=[r.asDict(recursive=True) for r in shown],
        topics_not_listed=max(0, total - len(shown)),
        deletes_not_allowed=deletes_not_allowed,
        alters_not_allowed=alters_not_allowed,
    )


def summarize_snapshot(live: DataFrame) -> DataFrame:
    """Per cluster: topic, internal topic, partition and in-use counts (SNAPSHOT rows in).
    The in-use count is null when a topic's readers are unknown (the consumer groups could
    not be read, or not all of them are visible): a count of 0 would say nobody reads."""
    in_use = F.sum(F.when(F.size("consumer_groups") > 0, 1).otherwise(0))
    unknown = F.max(F.col("consumer_groups").isNull().cast("int")) == 1
    return live.groupBy("cluster").agg(
        F.count("topic").alias("topics"),
        F.sum(F.when(F.col("internal"), 1).otherwise(0)).alias("internal_topics"),
        F.sum(F.coalesce(F.col("partitions"), F.lit(0))).alias("partitions"),
        F.when(unknown, F.lit(None)).otherwise(in_use).alias("topics_in_use"),
        F.sum(F.when(F.col("error_name").isNotNull(), 1).otherwise(0))
        .alias("undescribable_topics"),
    )
