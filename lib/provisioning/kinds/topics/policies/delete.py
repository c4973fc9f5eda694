"""Delete policies: the always-on guards (KIP-170's delete policy, run by the job) and the
configurable ones.

Always on, in this order: protected_topics (internal topics, the built-in globs
`__*`, `_schemas`, `connect-*` plus context.protected, and context.deny_list),
topic_in_use (committed consumer-group offsets, or unknown because the job's principal
may not see every consumer group; a record written within `deletes.in_use_days`, or
unknown because its time could not be read; unless the row says `force`),
max_deletes_per_cluster (counts only deletions the first two let through).

Configurable (conf `policies.delete: [{name: ..., <params>}]`):

- protected_patterns: patterns ([globs]).
- custom: see provisioning.transforms.policies.custom.

Globs: `*` any run of characters, `?` one character, anything else itself,
matched against the whole topic name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.conf.policies import require_valid
from provisioning.kinds.topics.conf import DELETE_POLICIES
from provisioning.names import ALWAYS_PROTECTED
from provisioning.transforms.policies.base import (
    PolicyContext,
    PolicyFactory,
    Transform,
    as_plan,
    is_delete,
    per_cluster_cap,
    with_violation,
)
from provisioning.transforms.policies.columns import listed, no_violations_yet
from provisioning.transforms.scope import matching_globs
from schemas import PLAN, column_names


def _matches(globs: Column) -> Column:
    return F.size(globs) > 0


def protected_topics(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """Internal topics, topics matching the protected globs and deny-listed topics are never
    deleted."""

    def transform(df: DataFrame) -> DataFrame:
        internal = F.coalesce(F.col("live_internal"), F.lit(False))
        protected = matching_globs(
            F.col("topic"), tuple(dict.fromkeys(ALWAYS_PROTECTED + context.protected)))
        denied = matching_globs(F.col("topic"), context.deny_list)
        refused = is_delete() & (internal | _matches(protected) | _matches(denied))
        reasons = F.concat_ws(
            "; ",
            F.when(internal, F.lit("it is internal to Kafka")),
            F.when(_matches(protected), F.format_string(
                "it matches the protected pattern(s) %s", F.array_join(protected, ", "))),
            F.when(_matches(denied), F.format_string(
                "it matches the deny list pattern(s) %s", F.array_join(denied, ", "))),
        )
        message = F.format_string(
            "topic %s may not be deleted: %s; drop its `state: absent` manifest row",
            F.col("topic"), reasons)
        return as_plan(with_violation(df, "protected_topics", refused, message))

    return transform


def topic_in_use(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """A topic with committed consumer-group offsets, or with a record written since
    `context.in_use_since`, is in use; `force` overrides.

    A DELETE's live consumer groups are null when the job's principal may not see
    every group (SNAPSHOT.consumer_groups): then nobody can tell, and it is refused too;
    so is a DELETE whose newest record's time could not be read (PLAN.live_last_write_*).
    """
    since = context.in_use_since

    def transform(df: DataFrame) -> DataFrame:
        groups = F.col("live_consumer_groups")
        forced = F.coalesce(F.col("force"), F.lit(False))
        in_use = is_delete() & (F.size(groups) > 0) & ~forced
        message = F.format_string(
            "topic %s is in use: consumer group(s) %s have committed offsets on it; stop them "
            "and delete the groups, or set `force: true` on its manifest row to delete it "
            "anyway", F.col("topic"), listed(groups))
        unknown = is_delete() & groups.isNull() & ~forced
        unknown_message = F.format_string(
            "cannot tell whether topic %s is in use: the job's principal may not see every "
            "consumer group; grant it Describe on Group '*' (or on the cluster), or set "
            "`force: true` on its manifest row to delete it anyway", F.col("topic"))
        judged = with_violation(df, "topic_in_use", in_use, message)
        judged = with_violation(judged, "topic_in_use", unknown, unknown_message)
        if since is None:
            return as_plan(judged)
        written = F.col("live_last_write_at")
        recent = is_delete() & (written >= F.lit(since).cast("timestamp")) & ~forced
        recent_message = F.format_string(
            "topic %s is in use: its newest record was written at %s, within "
            "deletes.in_use_days (since %s); stop its producers, or set `force: true` on its "
            "manifest row to delete it anyway", F.col("topic"),
            F.date_format(written, "yyyy-MM-dd HH:mm:ss 'UTC'"),
            F.lit(since.strftime("%Y-%m-%d %H:%M:%S UTC")))
        unread = is_delete() & F.col("live_last_write_error").isNotNull() & ~forced
        unread_message = F.format_string(
            "cannot tell whether topic %s is in use: its newest record's time could not be "
            "read (%s); set `force: true` on its manifest row to delete it anyway",
            F.col("topic"), F.col("live_last_write_error"))
        judged = with_violation(judged, "topic_in_use", recent, recent_message)
        return as_plan(with_violation(judged, "topic_in_use", unread, unread_message))

    return transform


def max_deletes_per_cluster(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """Over the per-run cap, no deletion at all is made on that cluster."""
    return per_cluster_cap("max_deletes_per_cluster", is_delete() & no_violations_yet(),
                           context.max_deletes_per_cluster, "deletions", "no deletion is made",
                           "deletes.max_per_cluster", column_names(PLAN))


ALWAYS_ON: tuple[tuple[str, PolicyFactory], ...] = (
    ("protected_topics", protected_topics),
    ("topic_in_use", topic_in_use),
    ("max_deletes_per_cluster", max_deletes_per_cluster),
)


def protected_patterns(params: Mapping[str, Any], context: PolicyContext) -> Transform:
    """Topics matching any of the conf's globs are never deleted."""
    require_valid(DELETE_POLICIES, "delete", "protected_patterns", params)
    patterns: list[str] = params["patterns"]

    def transform(df: DataFrame) -> DataFrame:
        matched = matching_globs(F.col("topic"), patterns)
        refused = is_delete() & _matches(matched)
        message = F.format_string(
            "topic %s may not be deleted: it matches the protected pattern(s) %s of policy "
            "protected_patterns; drop its `state: absent` manifest row",
            F.col("topic"), F.array_join(matched, ", "))
        return as_plan(with_violation(df, "protected_patterns", refused, message))

    return transform
