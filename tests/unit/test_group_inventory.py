"""`check`'s group inventory as pure transforms (`kinds.groups.rules`): a group's lag per topic
(the log end offsets minus its committed offsets, summed over the partitions), whether the
topic is still the one it committed on (deleted; recreated by an offset past the log end, a
partition beyond the topic's, or another topic id than the inventory recorded once the broker
dropped the offsets), and the findings `group_lagging` and `stale_group`."""

from __future__ import annotations

import datetime as dt
from typing import Any

from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from provisioning.kinds.groups.rules import (
    DROPPED_GONE,
    DROPPED_NEW_ID,
    GONE,
    PAST_END,
    group_inventory,
    lagging_groups,
    stale_groups,
)
from provisioning.kinds.groups.schema import GROUP_INVENTORY, GROUP_OFFSETS, GROUP_TOPICS
from tests.builders import rows_df

AT = dt.datetime(2026, 11, 29, 12, 0)
EARLIER = dt.datetime(2026, 11, 28, 12, 0)
CLASSIC = {"cluster": "local", "type": "classic", "group_state": "Empty", "members": 0}


def offsets(spark: SparkSession, *rows: dict[str, Any]) -> DataFrame:
    return rows_df(spark, GROUP_OFFSETS, [{**CLASSIC, **r} for r in rows])


def topics(spark: SparkSession, *rows: dict[str, Any]) -> DataFrame:
    return rows_df(spark, GROUP_TOPICS, [{"cluster": "local", **r} for r in rows])


def inventory(spark: SparkSession, *rows: dict[str, Any], run_id: str = "r2",
              at: dt.datetime = AT) -> DataFrame:
    return rows_df(spark, GROUP_INVENTORY, [{"run_id": run_id, "checked_at": at, **CLASSIC,
                                             **r} for r in rows])


def no_history(spark: SparkSession) -> DataFrame:
    return rows_df(spark, GROUP_INVENTORY, [])


def test_lag_is_the_log_end_minus_the_committed_offset_summed_over_the_partitions(
        spark: SparkSession) -> None:
    got = group_inventory(
        offsets(spark,
                {"group": "g", "topic": "t", "partition": 0, "committed": 10, "log_end": 15},
                {"group": "g", "topic": "t", "partition": 1, "committed": 4, "log_end": 4},
                {"group": "g", "topic": "u", "partition": 0, "committed": 3, "log_end": 9},
                {"group": "busy", "type": "consumer", "group_state": "Stable",
                 "members": None, "topic": "t", "partition": 0, "committed": 15,
                 "log_end": 15},
                {"group": "new", "topic": None}),
        topics(spark, {"topic": "t", "topic_id": "id-t", "partitions": 2},
               {"topic": "u", "topic_id": "id-u", "partitions": 1}),
        no_history(spark), "r2", AT)
    assert_df_equality(got, inventory(
        spark,
        {"group": "g", "topic": "t", "topic_id": "id-t", "partitions": 2, "lag": 5,
         "topic_state": "live"},
        {"group": "g", "topic": "u", "topic_id": "id-u", "partitions": 1, "lag": 6,
         "topic_state": "live"},
        {"group": "busy", "type": "consumer", "group_state": "Stable", "members": None,
         "topic": "t", "topic_id": "id-t", "partitions": 1, "lag": 0, "topic_state": "live"},
        {"group": "new"}), ignore_row_order=True, ignore_nullable=True)


def test_an_unknown_log_end_leaves_the_lag_unknown_with_the_reads_error(
        spark: SparkSession) -> None:
    got = group_inventory(
        offsets(spark,
                {"group": "g", "topic": "t", "partition": 0, "committed": 1, "log_end": 5},
                {"group": "g", "topic": "t", "partition": 1, "committed": 1, "log_end": None,
                 "error": "ListOffsets LATEST: KafkaTimeoutError"}),
        topics(spark, {"topic": "t", "topic_id": "id-t", "partitions": 2}),
        no_history(spark), "r2", AT)
    assert_df_equality(got, inventory(
        spark, {"group": "g", "topic": "t", "topic_id": "id-t", "partitions": 2, "lag": None,
                "topic_state": "live", "error": "ListOffsets LATEST: KafkaTimeoutError"}),
        ignore_row_order=True, ignore_nullable=True)


def test_a_topic_gone_or_made_again_under_the_offsets_is_deleted_or_recreated(
        spark: SparkSession) -> None:
    got = group_inventory(
        offsets(spark,
                {"group": "a", "topic": "gone", "partition": 0, "committed": 3},
                {"group": "b", "topic": "again", "partition": 0, "committed": 7, "log_end": 2},
                {"group": "c", "topic": "fewer", "partition": 3, "committed": 1,
                 "log_end": None},
                {"group": "d", "topic": "hidden", "partition": 0, "committed": 1}),
        topics(spark, {"topic": "again", "topic_id": "id-2", "partitions": 1},
               {"topic": "fewer", "topic_id": "id-3", "partitions": 2},
               {"topic": "hidden", "error": "TOPIC_AUTHORIZATION_FAILED"}),
        no_history(spark), "r2", AT)
    assert_df_equality(got, inventory(
        spark,
        {"group": "a", "topic": "gone", "partitions": 1, "topic_state": "deleted",
         "reason": GONE},
        {"group": "b", "topic": "again", "topic_id": "id-2", "partitions": 1,
         "topic_state": "recreated", "reason": PAST_END},
        {"group": "c", "topic": "fewer", "topic_id": "id-3", "partitions": 1,
         "topic_state": "recreated",
         "reason": "a committed partition is beyond the topic's 2 partitions"},
        {"group": "d", "topic": "hidden", "partitions": 1,
         "error": "the topic could not be described: TOPIC_AUTHORIZATION_FAILED"}),
        ignore_row_order=True, ignore_nullable=True)


def test_offsets_the_broker_dropped_with_the_topic_are_told_from_the_newest_earlier_rows(
        spark: SparkSession) -> None:
    history = inventory(
        spark,
        # Older rows of `gone` name another topic: only the newest with a topic count.
        {"group": "gone", "topic": "old", "topic_id": "id-o", "partitions": 1, "lag": 0},
        {"group": "again", "topic": "t2", "topic_id": "id-a", "partitions": 1, "lag": 0},
        {"group": "unread", "topic": "t0", "topic_id": "id-u", "partitions": 1, "lag": 0},
        {"group": "same", "topic": "t3", "topic_id": "id-s", "partitions": 1, "lag": 0},
        run_id="r0", at=dt.datetime(2026, 11, 27))
    history = history.unionByName(inventory(
        spark, {"group": "gone", "topic": "t1", "topic_id": "id-g", "partitions": 1, "lag": 0},
        run_id="r1", at=EARLIER))
    got = group_inventory(
        offsets(spark, {"group": "gone"}, {"group": "again"}, {"group": "same"},
                # Its offsets could not be read: unknown, never taken as dropped.
                {"group": "unread", "error": "committed offsets not read: X"}),
        topics(spark, {"topic": "old", "topic_id": "id-o", "partitions": 1},
               {"topic": "t2", "topic_id": "id-b", "partitions": 1},
               {"topic": "t3", "topic_id": "id-s", "partitions": 1}),
        history, "r2", AT)
    assert_df_equality(got, inventory(
        spark,
        {"group": "gone", "topic": "t1", "topic_id": "id-g", "partitions": 0,
         "topic_state": "deleted", "reason": DROPPED_GONE},
        {"group": "again", "topic": "t2", "topic_id": "id-a", "partitions": 0,
         "topic_state": "recreated", "reason": DROPPED_NEW_ID},
        # Same topic id: its offsets expired; the topic is the one committed on.
        {"group": "same"},
        {"group": "unread", "error": "committed offsets not read: X"}),
        ignore_row_order=True, ignore_nullable=True)


def test_lagging_is_a_lag_over_the_threshold(spark: SparkSession) -> None:
    rows = inventory(
        spark, {"group": "g", "topic": "t", "lag": 6},
        {"group": "g", "topic": "u", "lag": 5},
        {"group": "k", "type": "consumer", "group_state": "Stable", "members": None,
         "topic": "t", "lag": 9},
        {"group": "h", "type": "classic", "group_state": "Stable", "members": 2,
         "topic": "t", "lag": 100},
        {"group": "x", "topic": "gone", "lag": None, "topic_state": "deleted"})
    assert sorted(tuple(r) for r in lagging_groups(rows, 5).collect()) == [
        ("local", "g", "t", 6, "group g (type classic, state Empty, 0 members) lags 6 records "
                               "on topic t, over groups.lag_threshold 5"),
        ("local", "h", "t", 100, "group h (type classic, state Stable, 2 members) lags 100 "
                                 "records on topic t, over groups.lag_threshold 5"),
        ("local", "k", "t", 9, "group k (type consumer, state Stable, members unknown) lags 9 "
                               "records on topic t, over groups.lag_threshold 5")]


def test_stale_is_an_empty_group_whose_every_topic_is_gone(spark: SparkSession) -> None:
    rows = inventory(
        spark,
        {"group": "s", "topic": "a", "topic_state": "deleted", "reason": GONE},
        {"group": "s", "topic": "b", "topic_state": "recreated", "reason": PAST_END},
        # One live topic left: not stale.
        {"group": "m", "topic": "a", "topic_state": "deleted", "reason": GONE},
        {"group": "m", "topic": "c", "topic_state": "live", "lag": 0},
        # Members: not stale, whatever its topics.
        {"group": "busy", "group_state": "Stable", "members": 1, "topic": "a",
         "topic_state": "deleted", "reason": GONE},
        # No offsets at all: nothing points anywhere.
        {"group": "bare"},
        # A topic it may not describe: not known to be gone.
        {"group": "h", "topic": "x", "error": "the topic could not be described: X"})
    assert sorted(tuple(r) for r in stale_groups(rows).collect()) == [
        ("local", "s", "group s (type classic, state Empty, 0 members): every topic it "
                       f"committed offsets on is gone: a deleted ({GONE}); b recreated "
                       f"({PAST_END})")]


def test_the_sites_group_page_shows_each_groups_lag_and_escapes_its_id() -> None:
    from provisioning.kinds.groups.view import ROLE, VIEW, GroupSite, site_pages
    from provisioning.views.site.data import SiteData, TableRead

    marked = "<script>window.injected = 1</script> & 'q'"
    data = SiteData(clusters=["local"], tables=[TableRead(ROLE, "inv_groups", 3, AT)],
                    days=[EARLIER.date(), AT.date()], kinds=(VIEW,))
    site = GroupSite(
        latest=[{"cluster": "local", "group": marked, "type": "consumer",
                 "group_state": "Stable", "members": None, "topic": "t", "lag": 1200,
                 "topic_state": "live", "reason": None, "checked_at": AT},
                {"cluster": "local", "group": "old", "type": "classic",
                 "group_state": "Empty", "members": 0, "topic": "gone", "lag": None,
                 "topic_state": "deleted", "reason": GONE, "checked_at": AT}],
        series=[{"cluster": "local", "group": marked, "topic": "t",
                 "points": [{"day": AT.date(), "lag": 1200}]}])
    page = site_pages(data, site)["groups/index.html"]
    escaped = "&lt;script&gt;window.injected = 1&lt;/script&gt; &amp; &#x27;q&#x27;"
    assert "<script>window" not in page
    # The kind's entry of the navigation bar, after the shared ones.
    assert ('<a href="../inventory.html">Inventory</a><a href="../groups/index.html" '
            'class=here>Groups</a></header>') in page
    assert (f"<tr><td>local</td><td>{escaped}</td><td>consumer</td><td>Stable</td>"
            "<td class=n>unknown</td><td>t</td><td class=n>1,200</td><td>live</td></tr>"
            ) in page
    assert ("<tr><td>local</td><td>old</td><td>classic</td><td>Empty</td><td class=n>0</td>"
            "<td>gone</td><td class=n>-</td><td>deleted</td></tr>") in page
    # One chart, the group with a known lag: no point the day before, 1200 today.
    assert page.count("<svg") == 1
    assert f'data-chart="lag of {escaped} on t (local)"' in page
    assert 'data-x="2026-11-29" data-y="1200"' in page
