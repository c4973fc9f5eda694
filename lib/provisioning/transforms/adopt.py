"""Adopting existing clusters: live topics as manifest rows, and the live topics no
manifest mentions.

An imported row asks for exactly what the topic is: its partitions, its replication
factor and its own overrides (config source DYNAMIC_TOPIC_CONFIG; never a broker
default, never a sensitive value the broker hides, never the throttled-replicas
lists: `transforms.drift.own_override`), so a plan over a freshly imported
manifest is all NOOP (see `provisioning.transforms.drift`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.names import PRESENT
from provisioning.transforms.drift import own_override
from provisioning.transforms.scope import matching_globs
from schemas import MANIFEST, column_names


def own_overrides(configs: Column) -> Column:
    """The topic's own overrides a manifest may manage (`own_override`) as map<name, value>,
    without the ones the broker hides (sensitive: their value is not readable, so they
    cannot be written back)."""
    shown = F.filter(configs, lambda c: own_override(c)
                     & c["value"].isNotNull() & ~F.coalesce(c["sensitive"], F.lit(False)))
    return F.map_from_entries(F.transform(
        shown, lambda c: F.struct(c["name"].alias("key"), c["value"].alias("value"))))


def importable(protected: Sequence[str], include_protected: bool) -> Column:
    """SNAPSHOT rows an import writes: described topics that are not internal and, unless
    `include_protected`, match none of the `protected` globs."""
    keep = F.col("error_name").isNull()
    if not include_protected:
        keep = (keep & ~F.coalesce(F.col("internal"), F.lit(False))
                & (F.size(matching_globs(F.col("topic"), tuple(protected))) == 0))
    return keep


def manifest_rows(live: DataFrame, owner: str | None, with_assignment: bool) -> DataFrame:
    """MANIFEST rows that ask for each SNAPSHOT row's topic as it is."""
    return live.select(
        "cluster", "topic",
        F.lit(PRESENT).alias("state"),
        "partitions",
        "replication_factor",
        (F.col("replica_assignment") if with_assignment
         else F.lit(None).cast(MANIFEST["replica_assignment"].dataType)
         ).alias("replica_assignment"),
        F.coalesce(own_overrides(F.col("configs")),
                   F.create_map().cast(MANIFEST["configs"].dataType)).alias("configs"),
        F.lit(owner).cast("string").alias("owner"),
        F.lit(None).cast("boolean").alias("force"),
    ).select(*column_names(MANIFEST))


def unmanaged(live: DataFrame, desired: DataFrame) -> DataFrame:
    """The SNAPSHOT rows of topics that are not internal and that no DESIRED row names."""
    mentioned = desired.select("cluster", "topic").where(
        F.col("cluster").isNotNull() & F.col("topic").isNotNull())
    return (live.where(~F.coalesce(F.col("internal"), F.lit(False)))
            .join(mentioned, on=["cluster", "topic"], how="left_anti"))
