"""The Delta side of manifests: writing a manifest table, reading and unioning them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import SparkSession

from provisioning.delta_io import TableRef, current_version
from schemas import MANIFEST


def write_manifest(spark: SparkSession, rows: Sequence[tuple[Any, ...]], table: str,
                   mode: str = "overwrite") -> int:
    """Write MANIFEST rows as one commit; returns the table version written."""
    ref = TableRef(table)
    writer = spark.createDataFrame(list(rows), MANIFEST).write.format("delta").mode(mode)
    if mode == "overwrite":
        writer = writer.option("overwriteSchema", "true")
    if ref.is_path:
        writer.save(ref.text)
    else:
        writer.saveAsTable(ref.text)
    return current_version(spark, ref)
