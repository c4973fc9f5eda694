"""Desired bindings joined with the live ones: one ACL_PLAN row per binding, with an action.

GRANT    a manifest row wants the binding and the cluster lacks it
REVOKE   a manifest row says `absent` and the cluster has it; or no manifest row names a
         live binding and `acls.remove_unlisted` is on (`source_table` null, a note)
NOOP     both agree (present on both sides, or absent on both)

A manifest row is one binding per operation (`PRODUCE` is WRITE and DESCRIBE, `CONSUME`
READ and DESCRIBE). Bindings several valid rows imply are one plan row; when one of them
wants it present and another absent, present wins and `note` says which rows lost. A row
with `row_errors` is planned alone (one row per binding it implies, never merged), so its
reasons reach the audit; it is never sent.

Every function takes ACL_DESIRED rows through `validation.with_acl_row_errors` (defaults
filled) and only the run's clusters: the live side is what the caller read from them.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from provisioning.kinds.acls.names import (
    GRANT,
    LITERAL,
    REVOKE,
    SHORTHANDS,
    TOPIC_RESOURCE,
)
from provisioning.kinds.acls.schema import ACL_BINDING, ACL_MANIFEST, ACL_PLAN, BINDING_KEY
from provisioning.names import ABSENT, NOOP, PRESENT
from provisioning.transforms.validation import is_valid
from schemas import column_names

KEY = list(BINDING_KEY)
_ROW_COLUMNS = ("state", "owner", "force", "source_table", "source_version", "row_errors")
UNLISTED_NOTE = "no ACL manifest names this binding; acls.remove_unlisted revokes it"


def _operations(ops: Column) -> Column:
    """A row's operations with the shorthands spelled out, each once."""
    shorthands = F.create_map(*[
        x for name, meant in SHORTHANDS.items()
        for x in (F.lit(name), F.array(*[F.lit(m) for m in meant]))])
    return F.array_distinct(F.flatten(F.transform(
        ops, lambda o: F.coalesce(F.try_element_at(shorthands, o), F.array(o)))))


def expand_bindings(desired: DataFrame) -> DataFrame:
    """One row per binding each ACL_DESIRED row implies: its binding columns (ACL_BINDING)
    and the row's state, owner, force, source and errors. A row without operations gives
    one row with a null operation (it is invalid, and its reasons must still show)."""
    return desired.select(
        *[F.explode_outer(_operations(F.col("operations"))).alias(c) if c == "operation"
          else F.col(c) for c in column_names(ACL_BINDING)],
        *_ROW_COLUMNS)


def _source() -> Column:
    """"table@version (owner O)" of a manifest row, for notes."""
    return F.concat_ws("", F.col("source_table"), F.lit("@"),
                       F.col("source_version").cast("string"),
                       F.when(F.col("owner").isNotNull(),
                              F.format_string(" (owner %s)", F.col("owner"))))


def merge_bindings(expanded: DataFrame) -> DataFrame:
    """One row per binding of the valid expanded rows: present wins over absent.

    The winning rows give the state and, from the first of them by (owner, source table,
    source version), the owner and source; `force` holds only when every winning row says
    so (one row never forces a binding on another's behalf). `note` names the rows that
    wanted the binding absent when present won.
    """
    same = Window.partitionBy(*KEY)
    present = F.col("state") != ABSENT
    any_present = F.max(present.cast("int")).over(same) == 1
    rows = expanded.where(is_valid()).withColumn("_winner", present == any_present)
    winner = F.col("_winner")
    first = F.sort_array(F.collect_list(F.when(winner, F.struct(
        F.col("owner").isNull().alias("no_owner"), "owner", "source_table",
        "source_version"))))[0]
    merged = rows.groupBy(*KEY).agg(
        F.max(winner & present).alias("_present"),
        first.alias("_first"),
        F.min(F.when(winner, F.coalesce(F.col("force"), F.lit(False)))).alias("force"),
        F.array_sort(F.collect_set(F.when(~winner, _source()))).alias("_losers"),
    )
    wants_present = F.col("_present")
    lost = F.size("_losers") > 0
    return merged.select(
        *KEY,
        F.when(wants_present, F.lit(PRESENT)).otherwise(F.lit(ABSENT)).alias("state"),
        F.col("_first.owner").alias("owner"),
        "force",
        F.col("_first.source_table").alias("source_table"),
        F.col("_first.source_version").alias("source_version"),
        F.array().cast("array<string>").alias("row_errors"),
        F.when(wants_present & lost, F.format_string(
            "also asked absent by %s; present wins", F.array_join("_losers", ", ")))
        .alias("note"),
    )


def _with_action(df: DataFrame) -> DataFrame:
    live = F.coalesce(F.col("live"), F.lit(False))
    wants_absent = F.col("state") == ABSENT
    grant = ~wants_absent & ~live
    revoke = wants_absent & live
    agrees = (~wants_absent & live) | (wants_absent & ~live)
    return (df.withColumn("live", live)
            .withColumn("action", F.when(grant, GRANT).when(revoke, REVOKE)
                        .when(agrees, NOOP)))


def _live_side(live: DataFrame) -> DataFrame:
    return live.select(*KEY, F.lit(True).alias("live"))


def _empty_violations() -> Column:
    return F.array().cast(ACL_PLAN["policy_violations"].dataType).alias("policy_violations")


def plan_acls(desired: DataFrame, live: DataFrame, remove_unlisted: bool = False
              ) -> DataFrame:
    """ACL_PLAN rows: the bindings the ACL_DESIRED rows imply (valid ones merged) joined
    with the live ACL_BINDING rows, with their action.

    remove_unlisted: `acls.remove_unlisted`: also plan a REVOKE for every live binding no
      manifest row names (`unmanaged_bindings`).
    """
    expanded = expand_bindings(desired)
    valid = merge_bindings(expanded).join(_live_side(live), on=KEY, how="left")
    # Never merged: each keeps its reasons. Null binding columns match no live binding.
    invalid = (expanded.where(~is_valid())
               .join(_live_side(live), on=KEY, how="left")
               .withColumn("note", F.lit(None).cast("string")))
    planned = (valid.unionByName(invalid.select(*valid.columns))
               .transform(_with_action)
               .withColumn("policy_violations", _empty_violations()))
    if remove_unlisted:
        planned = planned.unionByName(
            revoke_rows(unmanaged_bindings(live, desired), UNLISTED_NOTE)
            .select(*planned.columns))
    return planned.select(*column_names(ACL_PLAN))


def revoke_rows(bindings: DataFrame, note: str | Column) -> DataFrame:
    """ACL_PLAN REVOKE rows for live ACL_BINDING rows no manifest row asked about: state
    absent, no owner nor source, `note` saying why."""
    return bindings.select(
        *KEY,
        F.lit(REVOKE).alias("action"),
        F.lit(ABSENT).alias("state"),
        F.lit(None).cast("string").alias("owner"),
        F.lit(None).cast("boolean").alias("force"),
        F.lit(None).cast("string").alias("source_table"),
        F.lit(None).cast("long").alias("source_version"),
        F.array().cast("array<string>").alias("row_errors"),
        _empty_violations(),
        F.lit(True).alias("live"),
        (note if isinstance(note, Column) else F.lit(note)).alias("note"),
    ).select(*column_names(ACL_PLAN))


def unmanaged_bindings(live: DataFrame, desired: DataFrame) -> DataFrame:
    """The live ACL_BINDING rows no ACL_DESIRED row names, present or absent.

    An invalid row names the bindings it implies too: a row refused for a typo must not
    turn its live bindings into unlisted ones that `remove_unlisted` would revoke.
    """
    named = expand_bindings(desired).select(*KEY)
    return live.join(named, on=KEY, how="left_anti").select(*column_names(ACL_BINDING))


def binding_text() -> Column:
    """A binding as one line, as the plan shows it: "ALLOW User:orders-app READ TOPIC
    orders. (PREFIXED) host *"."""
    return F.format_string("%s %s %s %s %s (%s) host %s", *[F.col(c) for c in (
        "permission", "principal", "operation", "resource_type", "resource_name",
        "pattern_type", "host")])


def _literal_topic() -> Column:
    return (F.col("resource_type") == TOPIC_RESOURCE) & (F.col("pattern_type") == LITERAL)


def orphaned_bindings(live_bindings: DataFrame, live_topics: DataFrame) -> DataFrame:
    """The LITERAL TOPIC ACL_BINDING rows that name no live topic of their cluster (the `*`
    wildcard names every topic and is never orphaned).

    live_topics: SNAPSHOT rows (cluster, topic) of the same clusters.
    """
    topics = live_topics.select("cluster", F.col("topic").alias("resource_name"))
    return (live_bindings.where(_literal_topic() & (F.col("resource_name") != F.lit("*")))
            .join(topics, on=["cluster", "resource_name"], how="left_anti")
            .select(*column_names(ACL_BINDING)))


def deleted_topic_bindings(live_bindings: DataFrame, deleted_topics: DataFrame) -> DataFrame:
    """ACL_PLAN REVOKE rows for the LITERAL TOPIC bindings of topics being deleted, so that a
    topic recreated under the name never inherits them (`acls.revoke_with_deleted_topics`).

    deleted_topics: rows with `cluster` and `topic` (the deletions this run made).
    """
    deleted = (deleted_topics.select("cluster", F.col("topic").alias("resource_name"))
               .dropDuplicates())
    bindings = (live_bindings.where(_literal_topic())
                .join(deleted, on=["cluster", "resource_name"], how="left_semi"))
    note = F.format_string("topic %s is deleted by this run; its literal bindings go with "
                           "it (acls.revoke_with_deleted_topics)", F.col("resource_name"))
    return revoke_rows(bindings, note)


def acl_manifest_rows(live: DataFrame, owner: str | None) -> DataFrame:
    """ACL_MANIFEST rows for live ACL_BINDING rows (`import --acls`): one row per principal,
    host, resource pattern and permission, with its operations as a sorted array; state
    present. A plan over them plans every binding NOOP."""
    group = [c for c in column_names(ACL_BINDING) if c != "operation"]
    return (live.groupBy(*group)
            .agg(F.array_sort(F.collect_set("operation")).alias("operations"))
            .select(*[F.col(c) for c in group[:6]], "operations", "permission",
                    F.lit(PRESENT).alias("state"), F.lit(owner).cast("string").alias("owner"),
                    F.lit(None).cast("boolean").alias("force"))
            .select(*column_names(ACL_MANIFEST))
            .orderBy("cluster", "resource_type", "resource_name", "principal", "permission"))
