"""Quota manifest rows joined with the live quotas: one QUOTA_PLAN row per (cluster, entity,
key), with an action.

SET     a present row asks for the key, and the entity lacks it or has another value
REMOVE  an absent row lists the key (or lists none) and the entity has it; or no row lists
        a live key and `quotas.remove_unlisted` is on (`source_table` null, a note)
NOOP    both agree (the value is live, or the key is already gone); or a live key no row
        lists, left alone (a note says why)

Each key of a row is judged on its own (`key_reasons`: known to Kafka, fits the entity, a
value Kafka takes), so one bad key rejects that key's row only; the row's entity-level
reasons (`validation`) reject every key row of it. A rejected row keeps the action it would
have had, so the audit shows what it asked; it is never sent.

Unlisted keys: a live key the entity's rows do not list, or of an entity no row names. An
entity a rejected row names is never touched by `remove_unlisted`: its unlisted keys stay
NOOP, so a typo in a row never removes the live quotas of its entity.

Every function takes QUOTA_DESIRED rows through `validation` and only the run's clusters:
the live side (QUOTA_LIVE) is what the caller read from them. A snapshot's marker rows (key
null) are no quota and are left out.
"""

from __future__ import annotations

import functools
import operator

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.kinds.quotas.names import IP_KEYS, KEYS, REMOVE, SET_ACTION, USER_CLIENT_KEYS
from provisioning.kinds.quotas.schema import (
    ENTITY_COLUMNS,
    QUOTA_DESIRED,
    QUOTA_KEY,
    QUOTA_LIVE,
    QUOTA_MANIFEST,
    QUOTA_PLAN,
)
from provisioning.names import ABSENT, NOOP, PRESENT
from provisioning.transforms.validation import is_valid, reason_when
from schemas import column_names

ENTITY = ["cluster", *ENTITY_COLUMNS]
KEY = list(QUOTA_KEY)
UNLISTED_KEPT = "unlisted: left alone (quotas.remove_unlisted removes it)"
UNLISTED_REMOVED = "unlisted: removed (quotas.remove_unlisted)"
UNLISTED_GUARDED = ("unlisted: left alone, as a rejected quota manifest row names its entity "
                    "(a rejected row never removes a live quota; fix the row)")

_LISTED = "_listed"


def entity_text() -> Column:
    """An entity as one line, its types in Kafka's order (user, client-id, ip), only the set
    ones: "user=orders-app", "user=<default> client-id=app", "ip=10.0.0.1"; "(no entity)"
    when none is set."""
    text = F.concat_ws(" ", *[F.when(F.col(c).isNotNull(), F.concat(F.lit(f"{name}="), c))
                              for c, name in zip(ENTITY_COLUMNS, ("user", "client-id", "ip"),
                                                 strict=True)])
    return F.when(text == "", F.lit("(no entity)")).otherwise(text)


def value_text(value: Column) -> Column:
    """A quota value as a person writes it: a whole number without `.0` (1048576), else as
    Spark spells a double (0.25, 1.0E19, NaN)."""
    whole = ~F.isnan(value) & (F.abs(value) < 1e15) & (value % 1 == 0)
    return F.when(whole, value.cast("long").cast("string")).otherwise(value.cast("string"))


def _about(text: str, *args: Column) -> Column:
    """"quotas.<key>: <text>" with `args` formatted into `text`."""
    return F.format_string(f"quotas.%s: {text}", F.col("key"), *args)


def key_reasons(judge_value: Column) -> list[Column]:
    """The reasons a listed key of a row is refused (null when fine): unknown to Kafka, not
    taken by the entity (only an ip takes connection_creation_rate, and an ip nothing else),
    and, where `judge_value` holds (a present row), a value that is null, not finite (a
    broker stores NaN) or <= 0. What else Kafka refuses of a value (a fraction of a byte
    rate, one too large for the broker's LONG or INT) is the broker's own verdict, given
    at the validateOnly pass."""
    key, value = F.col("key"), F.col("value")
    user, client, ip = (F.col(c) for c in ENTITY_COLUMNS)
    is_ip = ip.isNotNull() & user.isNull() & client.isNull()
    is_user_client = ip.isNull() & (user.isNotNull() | client.isNotNull())
    finite = ~F.isnan(value) & (F.abs(value) != float("inf"))
    judged = judge_value & value.isNotNull() & finite
    reasons = [
        reason_when(~key.isin(*KEYS), _about("unknown quota key (Kafka's: %s)",
                                       F.lit(", ".join(KEYS)))),
        reason_when(is_user_client & key.isin(*IP_KEYS), _about(
            "only an ip entity takes it, and %s is not one", entity_text())),
        reason_when(is_ip & key.isin(*USER_CLIENT_KEYS), _about(
            "an ip entity takes only %s", F.lit(", ".join(IP_KEYS)))),
        reason_when(judge_value & value.isNull(), _about("no value given")),
        reason_when(judge_value & value.isNotNull() & ~finite, _about(
            "%s is not a finite number", value_text(value))),
        reason_when(judged & (value <= 0), _about(
            "must be > 0, got %s (to drop a quota, list it in a `state: absent` row)",
            value_text(value))),
    ]
    return reasons


def _wants_absent(state: Column) -> Column:
    return F.coalesce(state == ABSENT, F.lit(False))


def _same(a: str, b: str, columns: list[str]) -> Column:
    """Null-safe equality of `columns` between the aliased sides `a` and `b` (a null entity
    column means "type not part of the entity", the same on both sides)."""
    return functools.reduce(operator.and_, [F.col(f"{a}.{c}").eqNullSafe(F.col(f"{b}.{c}"))
                                            for c in columns])


def _live_side(live: DataFrame) -> DataFrame:
    return live.where(F.col("key").isNotNull()).select(*KEY, F.col("value").alias("live_value"))


def _empty(column: str) -> Column:
    return F.array().cast(QUOTA_PLAN[column].dataType).alias(column)


def _key_rows(desired: DataFrame, live: DataFrame) -> DataFrame:
    """QUOTA_PLAN rows (and `_listed`: the row listed the key) of every key each row lists,
    and of every live key of the entity of an absent row that lists none (one row with key
    null when it has none, or when a present row lists none)."""
    rows = desired.select(*[c for c in column_names(QUOTA_DESIRED) if c != "quotas"],
                          F.explode_outer("quotas").alias("key", "value"))
    d, lv = rows.alias("d"), _live_side(live).alias("l")
    absent = _wants_absent(F.col("d.state"))
    listed = F.col("d.key").isNotNull()
    on = _same("d", "l", ENTITY) & ((F.col("d.key") == F.col("l.key"))
                                    | (~listed & absent))
    joined = d.join(lv, on=on, how="left")
    live_value = F.col("l.live_value")
    is_live = live_value.isNotNull()
    value = F.col("d.value")
    same = is_live & F.coalesce(value == live_value, F.lit(False))
    action = (F.when(absent & is_live, F.lit(REMOVE))
              .when(absent & ~is_live, F.lit(NOOP))
              .when(~absent & same, F.lit(NOOP))
              .when(~absent & ~same, F.lit(SET_ACTION)))
    state = F.col("d.state")
    planned = joined.select(
        *[F.col(f"d.{c}").alias(c) for c in ENTITY],
        F.coalesce(F.col("d.key"), F.col("l.key")).alias("key"),
        action.alias("action"),
        F.when(state.isNull(), F.lit(PRESENT)).otherwise(state).alias("state"),
        F.when(~absent, value).alias("value"),
        live_value.alias("live_value"),
        *[F.col(f"d.{c}").alias(c) for c in ("owner", "force", "source_table",
                                             "source_version", "row_errors")],
        _empty("policy_violations"),
        F.lit(None).cast("string").alias("note"),
        listed.alias(_LISTED),
    )
    reasons = F.filter(F.array(*[F.when(F.col(_LISTED), r) for r in key_reasons(
        ~_wants_absent(F.col("state")))]), lambda r: r.isNotNull())
    current = F.col("row_errors")
    return planned.withColumn("row_errors", F.when(current.isNull(), reasons)
                              .otherwise(F.concat(current, reasons)))


def _uncovered(live: DataFrame, planned: DataFrame) -> DataFrame:
    """The live QUOTA_LIVE rows (markers left out) no row of `planned` names."""
    lv = live.where(F.col("key").isNotNull()).alias("l")
    named = planned.where(F.col("key").isNotNull()).select(*KEY).alias("p")
    return lv.join(named, on=_same("l", "p", KEY), how="left_anti").select(
        *column_names(QUOTA_LIVE))


def _unlisted_rows(unlisted: DataFrame, desired: DataFrame, remove_unlisted: bool
                   ) -> DataFrame:
    """QUOTA_PLAN rows of the live keys no row lists: NOOP (left alone), or REMOVE with
    `remove_unlisted` unless a rejected row names the entity."""
    guarded = (desired.where(~is_valid()).select(*ENTITY).distinct()
               .withColumn("_guarded", F.lit(True)).alias("g"))
    u = unlisted.alias("u")
    facts = u.join(guarded, on=_same("u", "g", ENTITY), how="left").select(
        "u.*", F.coalesce(F.col("g._guarded"), F.lit(False)).alias("_guarded"))
    is_guarded = F.col("_guarded")
    removed = ~is_guarded if remove_unlisted else F.lit(False)
    note = (F.when(is_guarded, F.lit(UNLISTED_GUARDED))
            .when(~is_guarded, F.lit(UNLISTED_REMOVED if remove_unlisted else UNLISTED_KEPT)))
    return facts.select(
        *KEY,
        F.when(removed, F.lit(REMOVE)).otherwise(F.lit(NOOP)).alias("action"),
        F.when(removed, F.lit(ABSENT)).otherwise(F.lit(PRESENT)).alias("state"),
        F.lit(None).cast("double").alias("value"),
        F.col("value").alias("live_value"),
        F.lit(None).cast("string").alias("owner"),
        F.lit(None).cast("boolean").alias("force"),
        F.lit(None).cast("string").alias("source_table"),
        F.lit(None).cast("long").alias("source_version"),
        _empty("row_errors"),
        _empty("policy_violations"),
        note.alias("note"),
    )


def plan_quotas(desired: DataFrame, live: DataFrame, remove_unlisted: bool) -> DataFrame:
    """QUOTA_PLAN rows: every key the QUOTA_DESIRED rows list (or, for an absent row listing
    none, every live key of its entity) joined with the QUOTA_LIVE rows, then every live key
    no row lists.

    remove_unlisted: `quotas.remove_unlisted`: plan the unlisted keys REMOVE (but never
      those of an entity a rejected row names).
    """
    planned = _key_rows(desired, live).drop(_LISTED)
    unlisted = _unlisted_rows(_uncovered(live, planned), desired, remove_unlisted)
    return planned.unionByName(unlisted).select(*column_names(QUOTA_PLAN))


def unmanaged_quotas(live: DataFrame, desired: DataFrame) -> DataFrame:
    """The QUOTA_LIVE rows no valid QUOTA_DESIRED row lists: every key of an entity no valid
    row names, and the keys a managed entity's rows leave out (what `report
    --unmanaged-quotas` lists and `check` reports). An absent row that lists no key manages
    every key of its entity. Rejected rows manage nothing: their entities' quotas are shown
    as unmanaged until the rows are fixed."""
    return _uncovered(live, _key_rows(desired.where(is_valid()), live))


def unnamed_entities(live: DataFrame, desired: DataFrame) -> DataFrame:
    """The QUOTA_LIVE rows of the entities no valid QUOTA_DESIRED row names (what `import
    --quotas` writes: an entity a manifest names already is left out whole)."""
    named = desired.where(is_valid()).select(*ENTITY).alias("n")
    return live.alias("l").join(named, on=_same("l", "n", ENTITY), how="left_anti").select(
        *column_names(QUOTA_LIVE))


def quota_manifest_rows(live: DataFrame, owner: str | None) -> DataFrame:
    """QUOTA_MANIFEST rows for QUOTA_LIVE rows (`import --quotas`): one present row per
    entity with all its keys. A plan over them plans every key NOOP."""
    entries = F.array_sort(F.collect_list(F.struct("key", "value")))
    return (live.where(F.col("key").isNotNull())
            .groupBy(*ENTITY)
            .agg(F.map_from_entries(entries).alias("quotas"))
            .select(*ENTITY, "quotas", F.lit(PRESENT).alias("state"),
                    F.lit(owner).cast("string").alias("owner"),
                    F.lit(None).cast("boolean").alias("force"))
            .select(*column_names(QUOTA_MANIFEST))
            .orderBy(*[F.col(c).asc_nulls_first() for c in ENTITY]))
