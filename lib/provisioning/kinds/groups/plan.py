"""Group manifest rows validated as data, and joined with the live groups into GROUP_PLAN
rows: one per (cluster, group).

What is checked here, as rows (`with_group_row_errors`): the cluster, the state, the group
id's shape, the configs map (no empty name, no null value, none on an `absent` row); two
rows naming one group are both refused. Whether the broker knows a config is its own answer
to the validateOnly IncrementalAlterConfigs.

ALTER   a present row listing a config whose value differs from the group's own (only the
        configs the row lists: others are left as they are)
DELETE  an absent row and ListGroups lists the group; or a listed group no row names and
        `groups.remove_unlisted` is on (`source_table` null, a note)
NOOP    anything else (a note says why an unlisted group is left alone)

A rejected row keeps the action it would have had, so the audit shows what it asked; it is
never sent. A group is created by its consumers, never by the job: configs may be set on a
group id no consumer has used yet.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.kinds.groups import schema
from provisioning.kinds.groups.names import ALTER, DELETE
from provisioning.names import ABSENT, NOOP, PRESENT, STATES
from provisioning.transforms.policies.base import Transform
from provisioning.transforms.validation import (
    cluster_reasons,
    is_valid,
    reason_when,
    unnamed,
    with_copies_refused,
    with_reasons,
)
from schemas import column_names

KEY = list(schema.GROUP_KEY)
# A group id the job manages: 1 to 255 characters, no control character, not blank.
GROUP_NAME = r"^(?=.*\S)[^\p{Cntrl}]{1,255}$"
UNLISTED_KEPT = "unlisted: left alone (groups.remove_unlisted removes it)"
UNLISTED_REMOVED = "unlisted: removed (groups.remove_unlisted)"
UNLISTED_CONFIGS = ("unlisted: the configs of a group id ListGroups does not list; left "
                    "alone")
UNLISTED_GUARDED = ("unlisted: left alone, as a rejected group manifest row names it (a "
                    "rejected row never removes a live group; fix the row)")


def _no_configs() -> Column:
    return F.create_map().cast("map<string,string>")


def group_text() -> Column:
    """A group as one line: its id."""
    return F.coalesce(F.col("group"), F.lit("(no group)"))


def _names_where(configs: Column, bad: Callable[[Column, Column], Column]) -> Column:
    """The config names of `configs` whose entry is `bad` (a lambda's k, v), sorted, joined."""
    return F.array_join(F.array_sort(F.map_keys(F.map_filter(configs, bad))), ", ")


def row_reasons(known_clusters: tuple[str, ...]) -> list[Column]:
    """The reasons a GROUP_DESIRED row is refused (null when fine)."""
    group, state, configs = F.col("group"), F.col("state"), F.col("configs")
    blank = _names_where(configs, lambda k, v: F.trim(k) == "")
    unset = _names_where(configs, lambda k, v: v.isNull())
    return [
        *cluster_reasons(known_clusters),
        reason_when(state.isNotNull() & ~state.isin(*STATES), F.format_string(
            "state: '%s' must be present or absent", state)),
        reason_when(group.isNull(), "group: is missing"),
        reason_when(group.isNotNull() & ~group.rlike(GROUP_NAME), F.format_string(
            "group: '%s' is not a group id the job manages (1 to 255 characters, no control "
            "character, not blank)", group)),
        reason_when(F.size(F.map_filter(configs, lambda k, v: F.trim(k) == "")) > 0,
              F.format_string("configs: a config name is empty ('%s')", blank)),
        reason_when(F.size(F.map_filter(configs, lambda k, v: v.isNull())) > 0, F.format_string(
            "configs: %s has no value (null); give each config a value, or leave it out",
            unset)),
        reason_when((state == ABSENT) & (F.size(configs) > 0),
              "configs: an absent group sets no configs; leave configs out or make the row "
              "present"),
    ]


def with_group_row_errors(known_clusters: tuple[str, ...]) -> Transform:
    """GROUP_DESIRED rows with their reasons, and every row whose group another row names
    too refused, naming the other rows' sources."""

    def transform(df: DataFrame) -> DataFrame:
        checked = with_copies_refused(
            with_reasons(df, row_reasons(known_clusters)), KEY,
            F.col("cluster").isNotNull() & F.col("group").isNotNull(),
            lambda others: F.format_string(
                "duplicate: group %s on cluster %s is also named by %s; no copy is applied "
                "(one row per group)", F.col("group"), F.col("cluster"), others))
        return checked.select(*column_names(schema.GROUP_DESIRED))

    return transform


def _live(live: DataFrame) -> DataFrame:
    return live.where(F.col("group").isNotNull()).select(*column_names(schema.GROUP_LIVE))


def _empty(column: str) -> Column:
    return F.array().cast(schema.GROUP_PLAN[column].dataType).alias(column)


def _change_note(changed: Column, live: Column) -> Column:
    """"consumer.session.timeout.ms (default) -> 60000; ...": each changed config."""
    return F.array_join(F.transform(
        F.array_sort(F.map_keys(changed)),
        lambda k: F.format_string("%s %s -> %s", k, F.coalesce(
            F.try_element_at(live, k), F.lit("(default)")), F.try_element_at(changed, k))),
        "; ")


def _listed_rows(desired: DataFrame, live: DataFrame) -> DataFrame:
    d, lv = desired.alias("d"), _live(live).alias("l")
    joined = d.join(lv, on=[F.col(f"d.{c}").eqNullSafe(F.col(f"l.{c}")) for c in KEY],
                    how="left")
    # A group id with configs and no group (ListGroups does not list it) has none to delete.
    is_live = F.col("l.group_state").isNotNull()
    absent = F.coalesce(F.col("d.state") == ABSENT, F.lit(False))
    found = F.coalesce(F.col("l.configs"), _no_configs())
    changed = F.map_filter(F.coalesce(F.col("d.configs"), _no_configs()),
                           lambda k, v: ~v.eqNullSafe(F.try_element_at(found, k)))
    alter = ~absent & (F.size(changed) > 0)
    action = (F.when(absent & is_live, F.lit(DELETE)).when(alter, F.lit(ALTER))
              .otherwise(F.lit(NOOP)))
    return joined.select(
        *[F.col(f"d.{c}").alias(c) for c in KEY],
        action.alias("action"),
        F.coalesce(F.col("d.state"), F.lit(PRESENT)).alias("state"),
        F.col("d.configs").alias("configs"),
        F.when(alter, changed).alias("changed"),
        F.col("l.configs").alias("live_configs"),
        *[F.col(f"l.{c}").alias(c) for c in ("type", "group_state", "members")],
        *[F.col(f"d.{c}").alias(c) for c in ("owner", "force", "source_table",
                                             "source_version", "row_errors")],
        _empty("policy_violations"),
        F.when(alter, _change_note(changed, found)).alias("note"),
    )


def _unlisted_rows(live: DataFrame, desired: DataFrame, remove_unlisted: bool) -> DataFrame:
    unlisted = unnamed(_live(live), desired, KEY)
    guarded = (desired.where(~is_valid()).select(*KEY).distinct()
               .withColumn("_guarded", F.lit(True)))
    facts = unlisted.join(guarded, on=KEY, how="left")
    is_guarded = F.coalesce(F.col("_guarded"), F.lit(False))
    listed = F.col("group_state").isNotNull()
    removed = ~is_guarded & F.lit(remove_unlisted) & listed
    note = (F.when(is_guarded, F.lit(UNLISTED_GUARDED))
            .when(~listed, F.lit(UNLISTED_CONFIGS))
            .otherwise(F.lit(UNLISTED_REMOVED if remove_unlisted else UNLISTED_KEPT)))
    nulls = {"configs": "map<string,string>", "changed": "map<string,string>",
             "owner": "string", "force": "boolean", "source_table": "string",
             "source_version": "long"}
    return facts.select(
        *KEY,
        F.when(removed, F.lit(DELETE)).otherwise(F.lit(NOOP)).alias("action"),
        F.when(removed, F.lit(ABSENT)).otherwise(F.lit(PRESENT)).alias("state"),
        F.col("configs").alias("live_configs"), "type", "group_state", "members",
        *[F.lit(None).cast(t).alias(c) for c, t in nulls.items()],
        _empty("row_errors"), _empty("policy_violations"), note.alias("note"),
    ).select(*column_names(schema.GROUP_PLAN))


def plan_groups(desired: DataFrame, live: DataFrame, remove_unlisted: bool) -> DataFrame:
    """GROUP_PLAN rows: every GROUP_DESIRED row joined with its live group, then every live
    group no row names (kept, or removed with `remove_unlisted` unless a rejected row names
    it)."""
    return (_listed_rows(desired, live).select(*column_names(schema.GROUP_PLAN))
            .unionByName(_unlisted_rows(live, desired, remove_unlisted)))


def unmanaged_groups(live: DataFrame, desired: DataFrame) -> DataFrame:
    """The GROUP_LIVE rows no valid GROUP_DESIRED row names (what `report --unmanaged-groups`
    lists and `import --groups` writes)."""
    return unnamed(_live(live), desired.where(is_valid()), KEY).select(
        *column_names(schema.GROUP_LIVE))


def group_manifest_rows(live: DataFrame, owner: str | None) -> DataFrame:
    """GROUP_MANIFEST rows for GROUP_LIVE rows (`import --groups`): each group present, with
    its own configs (null when it has none), so that a plan over them changes nothing."""
    configs = F.when(F.size("configs") > 0, F.col("configs"))
    return (_live(live).select(
        *KEY, F.lit(PRESENT).alias("state"), configs.alias("configs"),
        F.lit(owner).cast("string").alias("owner"), F.lit(None).cast("boolean").alias("force"))
        .select(*column_names(schema.GROUP_MANIFEST)).orderBy(*KEY))
