"""Rows between Spark and the Kafka package's task functions, as Arrow record batches.

The admin tasks run as `mapInArrow` (classic and Spark Connect alike): their input
arrives as record batches, turned here into plain dict rows (maps as dicts, structs
as dicts), and the tuples they yield (in the schema's column order) go back as
record batches of the schema's Arrow type. Timestamps are UTC: the job's naive
datetimes are UTC wall time.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestampType,
)

# Rows per output record batch: results carry ~30 config entries a topic, so batches
# stay a few MB.
BATCH_ROWS = 1000

_SIMPLE: dict[type[DataType], pa.DataType] = {
    StringType: pa.string(),
    IntegerType: pa.int32(),
    LongType: pa.int64(),
    BooleanType: pa.bool_(),
    DoubleType: pa.float64(),
    TimestampType: pa.timestamp("us", tz="UTC"),
}


def arrow_type(data_type: DataType) -> pa.DataType:
    """The Arrow type Spark reads back as `data_type` (the types the job's schemas use)."""
    simple = _SIMPLE.get(type(data_type))
    if simple is not None:
        return simple
    if isinstance(data_type, ArrayType):
        return pa.list_(arrow_type(data_type.elementType))
    if isinstance(data_type, MapType):
        return pa.map_(arrow_type(data_type.keyType), arrow_type(data_type.valueType))
    if isinstance(data_type, StructType):
        return pa.struct([pa.field(f.name, arrow_type(f.dataType), nullable=True)
                          for f in data_type.fields])
    raise TypeError(f"no Arrow type for {data_type.simpleString()}")


def arrow_schema(schema: StructType) -> pa.Schema:
    """`schema` as an Arrow schema (every field nullable, as the job's tables are)."""
    return pa.schema([pa.field(f.name, arrow_type(f.dataType), nullable=True)
                      for f in schema.fields])


def dict_rows(batches: Iterable[pa.RecordBatch]) -> Iterator[dict[str, Any]]:
    """Every row of `batches` as a dict (maps as dicts), one batch in memory at a time."""
    for batch in batches:
        yield from batch.to_pylist(maps_as_pydicts="strict")


def record_batches(rows: Iterable[tuple[Any, ...]], schema: pa.Schema,
                   size: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """`rows` (tuples in `schema`'s column order) as record batches of at most `size` rows."""
    it = iter(rows)
    while chunk := list(itertools.islice(it, size)):
        columns = list(zip(*chunk, strict=True))
        yield pa.RecordBatch.from_arrays(
            [pa.array(list(values), type=field.type) for values, field in zip(columns, schema,
                                                                             strict=True)],
            schema=schema)
