"""Drift: the one definition of how a live topic differs from what a manifest row asks.

A difference is a DRIFT_ITEM (field, desired, actual, supported):

- `partitions`, when the row names a count and the live count differs; supported
  (Kafka can add partitions) only when the row asks for more;
- `replication_factor`, when the row names one and the live one differs; never
  supported in place (it needs a reassignment);
- `replica_assignment`, when the row gives one and the live assignment differs;
  never supported in place;
- `config:NAME`, for every config that the row lists and the live topic does not
  override with the same value, and for every override (source
  DYNAMIC_TOPIC_CONFIG) the live topic has and the row does not list: the manifest
  row is the whole of the topic's own configs.

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

from provisioning.names import TOPIC_OVERRIDE
from schemas import CONFIG_ENTRY

CONFIG_PREFIX = "config:"


def override_map(configs: Column) -> Column:
    """The topic-level overrides of an array of CONFIG_ENTRY, as map<name, value>."""
    overrides = F.filter(configs, lambda c: c["source"] == F.lit(TOPIC_OVERRIDE))
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


def drift_items() -> Column:
    """The differences between the desired and the live topic, as DRIFT_ITEM structs."""
    partitions = F.col("partitions")
    live_partitions = F.col("live_partitions")
    rf = F.col("replication_factor")
    live_rf = F.col("live_replication_factor")
    assignment = F.col("replica_assignment")
    live_assignment = F.col("live_replica_assignment")

    partitions_differ = partitions.isNotNull() & (partitions != live_partitions)
    rf_differs = rf.isNotNull() & (rf != live_rf)
    assignment_differs = assignment.isNotNull() & (
        assignment_text(assignment) != assignment_text(live_assignment))

    desired_configs = F.coalesce(F.col("configs"), F.create_map().cast("map<string,string>"))
    live_configs = override_map(F.coalesce(
        F.col("live_configs"), F.array().cast(ArrayType(CONFIG_ENTRY))))
    names = F.array_sort(F.array_union(F.map_keys(desired_configs), F.map_keys(live_configs)))
    config_items = F.transform(names, lambda name: _item(
        F.concat(F.lit(CONFIG_PREFIX), name),
        desired_configs[name],
        live_configs[name],
        True,
    ))
    config_drift = F.filter(config_items, lambda d: ~d["desired"].eqNullSafe(d["actual"]))

    fixed = F.array(
        F.when(partitions_differ, _item(
            "partitions", partitions, live_partitions,
            # Kafka can add partitions but never remove them.
            partitions > live_partitions)),
        F.when(rf_differs, _item("replication_factor", rf, live_rf, False)),
        F.when(assignment_differs, _item(
            "replica_assignment", assignment_text(assignment),
            assignment_text(live_assignment), False)),
    )
    return F.concat(F.filter(fixed, lambda d: d.isNotNull()), config_drift)


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
