"""A DataFrame shaped as a table's schema: every column of it, in its order and type."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType


def to_schema(df: DataFrame, schema: StructType, given: Mapping[str, Column] | None = None,
              sources: tuple[str, ...] = ("",),
              known: Mapping[str, Sequence[str]] | None = None) -> DataFrame:
    """`df` as `schema`'s columns: each from `given`, else the first of the `sources`
    prefixes (`"r."`, `"p."`: aliased sides of a join) whose side has a column of that
    name, else null. So a kind's rows fill the columns they own, and carry those another
    kind's layer added (or leave them null) without naming them.

    known: each prefix's columns where the caller has them (the sides' own DataFrames,
      whose schemas a Spark Connect client keeps once asked): otherwise each side's columns
      are a schema question to the server."""
    given = given or {}
    known = known or {}
    sides = {prefix: set(known[prefix]) if prefix in known
             else set(df.select(f"{prefix}*").columns) if prefix else set(df.columns)
             for prefix in sources}
    columns: list[Column] = []
    for field in schema.fields:
        name = field.name
        if name in given:
            columns.append(given[name].cast(field.dataType).alias(name))
            continue
        prefix = next((p for p in sources if name in sides[p]), None)
        columns.append((F.col(f"{prefix}{name}") if prefix is not None
                        else F.lit(None)).cast(field.dataType).alias(name))
    return df.select(*columns)
