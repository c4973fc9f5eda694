"""Drift: the one definition of how a live topic differs from what a manifest row asks.

A difference is a DRIFT_ITEM (field, desired, actual, supported); `supported` says
whether the job changes it in place (an ALTER), the rest is reported and never fixed:

- `partitions`, when the row names a count (or an assignment, whose size is the count)
  and the live count differs; supported only when the row asks for more (Kafka adds
  partitions, never removes them);
- `replication_factor`, when the row names one and the live one differs; not changed
  in place by an ALTER (a kind that extends the topics' rows may take it over);
- `replica_assignment`, when the row gives one and its existing partitions' replicas
  differ from the live ones; never supported in place (the new partitions' replicas are
  what CreatePartitions is given);
- `config:NAME`, when the row manages configs (`configs` not null), for every config
  it lists that the live topic does not override with the same value (supported: SET),
  and for every override (source DYNAMIC_TOPIC_CONFIG) the live topic has and the row
  does not list (supported, a DELETE back to the broker default, only with
  `alters.remove_unlisted_configs`; otherwise left alone and reported). A row with
  `configs` null does not manage configs: no config is compared.

The throttled-replicas lists (`names.THROTTLED_REPLICAS_CONFIGS`) belong to whatever moves
replicas: it APPENDs to them and SUBTRACTs from them itself. They are never compared,
whether the live topic overrides them or a row lists them (`managed_config`), so they are
never drift, never removed, and never written by an import (`own_override`).

The plan uses it on the snapshot; the apply phase uses it on a topic that the broker
said already exists (TOPIC_ALREADY_EXISTS: created behind the job's back between
the snapshot and the request), so both verdicts agree.

Input columns: partitions, replication_factor, replica_assignment, configs (the
desired side) and live_partitions, live_replication_factor, live_replica_assignment,
live_configs (array of CONFIG_ENTRY).
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType

from provisioning.names import DELETE_CONFIG, SET, THROTTLED_REPLICAS_CONFIGS, TOPIC_OVERRIDE
from schemas import CONFIG_ENTRY, DRIFT_ITEM

CONFIG_PREFIX = "config:"


def managed_config(name: Column) -> Column:
    """Whether a manifest may manage config `name`: any but the throttled-replicas lists,
    which whatever moves replicas sets and clears itself."""
    return ~name.isin(*THROTTLED_REPLICAS_CONFIGS)


def own_override(entry: Column) -> Column:
    """Whether a CONFIG_ENTRY is a topic-level override (source DYNAMIC_TOPIC_CONFIG) of a
    config a manifest may manage (`managed_config`)."""
    return (entry["source"] == F.lit(TOPIC_OVERRIDE)) & managed_config(entry["name"])


def override_map(configs: Column) -> Column:
    """The topic-level overrides a manifest may manage of an array of CONFIG_ENTRY, as
    map<name, value>."""
    overrides = F.filter(configs, own_override)
    return F.map_from_entries(F.transform(
        overrides, lambda c: F.struct(c["name"].alias("key"), c["value"].alias("value"))))


def _item(field: str | Column, desired: Column, actual: Column,
          supported: Column | bool) -> Column:
    return F.struct(
        (F.lit(field) if isinstance(field, str) else field).alias("field"),
        desired.cast("string").alias("desired"),
        actual.cast("string").alias("actual"),
        (F.lit(supported) if isinstance(supported, bool) else supported).alias("supported"),
    )


def assignment_text(assignment: Column) -> Column:
    """An assignment as sorted JSON: equal assignments give equal text."""
    return F.to_json(F.array_sort(F.map_entries(assignment)))


def desired_partitions() -> Column:
    """The partition count a row asks for: its assignment's size, its count, or null."""
    return F.coalesce(
        F.when(F.col("replica_assignment").isNotNull(),
               F.size(F.map_keys("replica_assignment"))),
        F.col("partitions"))


def drift_items(remove_unlisted: bool = False) -> Column:
    """The differences between the desired and the live topic, as DRIFT_ITEM structs.

    remove_unlisted: a live override the row does not list is changed in place (removed)
      rather than left alone (`alters.remove_unlisted_configs`).
    """
    partitions = desired_partitions()
    live_partitions = F.col("live_partitions")
    rf = F.col("replication_factor")
    live_rf = F.col("live_replication_factor")
    live_assignment = F.col("live_replica_assignment")
    # Only the partitions that exist are compared: the new ones are CreatePartitions' input.
    existing = F.map_filter("replica_assignment", lambda k, _: k < live_partitions)

    partitions_differ = partitions.isNotNull() & (partitions != live_partitions)
    rf_differs = rf.isNotNull() & (rf != live_rf)
    assignment_differs = F.col("replica_assignment").isNotNull() & (
        assignment_text(existing) != assignment_text(live_assignment))

    desired_configs = F.col("configs")
    live_configs = override_map(F.coalesce(
        F.col("live_configs"), F.array().cast(ArrayType(CONFIG_ENTRY))))
    names = F.array_sort(F.filter(
        F.array_union(F.map_keys(desired_configs), F.map_keys(live_configs)), managed_config))
    config_items = F.transform(names, lambda name: _item(
        F.concat(F.lit(CONFIG_PREFIX), name),
        desired_configs[name],
        live_configs[name],
        desired_configs[name].isNotNull() | F.lit(remove_unlisted),
    ))
    config_drift = F.when(desired_configs.isNotNull(), F.filter(
        config_items, lambda d: ~d["desired"].eqNullSafe(d["actual"]))
    ).otherwise(F.array().cast(ArrayType(DRIFT_ITEM)))

    fixed = F.array(
        F.when(partitions_differ, _item(
            "partitions", partitions, live_partitions, partitions > live_partitions)),
        F.when(rf_differs, _item("replication_factor", rf, live_rf, False)),
        F.when(assignment_differs, _item(
            "replica_assignment", assignment_text(existing),
            assignment_text(live_assignment), False)),
    )
    return F.concat(F.filter(fixed, lambda d: d.isNotNull()), config_drift)


def alterable(items: Column) -> Column:
    """True when some difference in `items` is changed in place (an ALTER)."""
    return F.exists(items, lambda d: d["supported"])


def config_ops(items: Column) -> Column:
    """The IncrementalAlterConfigs operations (CONFIG_OP) of the supported config items:
    SET the desired value, or DELETE an unlisted override."""
    configs = F.filter(items, lambda d: d["field"].startswith(CONFIG_PREFIX) & d["supported"])
    return F.transform(configs, lambda d: F.struct(
        F.substring(d["field"], len(CONFIG_PREFIX) + 1, 10_000).alias("name"),
        F.when(d["desired"].isNull(), F.lit(DELETE_CONFIG)).otherwise(F.lit(SET)).alias("op"),
        d["desired"].alias("value")))


def drift_text(items: Column) -> Column:
    """Drift items as one line: "field: live -> desired; ..." ("(not set)" for nulls)."""
    def one(d: Column) -> Column:
        label = F.when(d["field"].startswith(CONFIG_PREFIX),
                       F.concat(F.lit("config "), F.substring(d["field"],
                                                              len(CONFIG_PREFIX) + 1, 10_000)))
        return F.concat(F.coalesce(label, d["field"]), F.lit(": "),
                        F.coalesce(d["actual"], F.lit("(not set)")), F.lit(" -> "),
                        F.coalesce(d["desired"], F.lit("(not set)")))

    return F.array_join(F.transform(items, one), "; ")
