"""The Delta side of manifests: writing a manifest table, reading and unioning them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from provisioning.delta.tables import (
    Commit,
    TableRef,
    latest_commit,
    read_table,
    table_version,
    write,
)
from provisioning.errors import UsageError
from provisioning.names import Nouns
from schemas import DESIRED, MANIFEST, column_names


def write_manifest(spark: SparkSession, rows: Sequence[tuple[Any, ...]], table: str,
                   mode: str = "overwrite", schema: StructType = MANIFEST) -> int:
    """Write manifest rows (MANIFEST, or another kind's manifest schema) as one commit;
    returns the table version written."""
    return write_manifest_frame(spark.createDataFrame(list(rows), schema), table, mode)


def write_manifest_frame(df: DataFrame, table: str, mode: str) -> int:
    """Write a MANIFEST DataFrame as one commit (`mode`: error, append or overwrite);
    returns the table version written."""
    ref = TableRef(table)
    write(df, ref, mode, {"overwriteSchema": "true"} if mode == "overwrite" else None)
    version = table_version(df.sparkSession, ref)
    if version is None:
        raise UsageError(f"manifest table {table} was not written")
    return version


def manifest_commits(spark: SparkSession, tables: Sequence[str], kind: str = "manifest"
                     ) -> list[tuple[str, Commit]]:
    """Each manifest table with its latest commit (one history lookup per table), in the
    conf's order: the versions a run reads. A missing table is a usage error naming it."""
    found = []
    for table in tables:
        commit = latest_commit(spark, TableRef(table))
        if commit is None:
            raise UsageError(f"{kind} table {table} does not exist or is not a Delta table")
        found.append((table, commit))
    return found


# Columns no manifest table may have: they would hold secrets, which belong to the places
# the conf names (environment variables, files), never to a table the teams write.
SECRET_COLUMNS = frozenset(("password", "passwd", "secret", "client_secret", "sasl_password",
                            "salted_password"))


def read_manifests(spark: SparkSession, tables: Sequence[str],
                   manifest: StructType = MANIFEST, desired: StructType = DESIRED,
                   required: Sequence[str] = ("cluster", "topic"), kind: str = "manifest",
                   commits: Sequence[tuple[str, Commit]] | None = None) -> DataFrame:
    """Union every manifest table as `desired` rows (DESIRED; another kind's desired schema,
    given with its `manifest` schema), each tagged with its table and version.

    Each table is read at the version it had when the run started (`commits`, from
    `manifest_commits`, when the caller looked them up already), so the audit can name
    exactly which manifest version asked for a topic. A table that is missing, lacks a
    `required` column or has a column of SECRET_COLUMNS (a `password` beside a user
    manifest's password_env) is a usage error naming it, before any row is read.
    """
    frames = []
    for table, commit in (manifest_commits(spark, tables, kind) if commits is None
                          else commits):
        df = read_table(spark, TableRef(table), commit.version)
        secret = [c for c in df.columns if c.lower() in SECRET_COLUMNS]
        if secret:
            raise UsageError(
                f"{kind} table {table} has a column that holds secrets ({', '.join(secret)}): "
                "a manifest names where a secret is (a user manifest: password_env or "
                "password_file), never the secret; drop the column, and rotate what it held "
                "(the table's history keeps it)")
        missing = [c for c in required if c not in df.columns]
        if missing:
            raise UsageError(
                f"{kind} table {table} lacks the required column(s) {', '.join(missing)} "
                f"(it has: {', '.join(df.columns)})"
            )
        frames.append(conform_to_manifest(df, manifest).select(
            *column_names(manifest),
            F.lit(table).alias("source_table"),
            F.lit(commit.version).cast("long").alias("source_version"),
            "row_errors",
        ))
    if not frames:
        return spark.createDataFrame([], desired)
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


class ManifestModel(Protocol):
    """What reading a kind's manifest tables needs of the kind (an entity kind's model)."""

    @property
    def manifest(self) -> StructType: ...

    @property
    def desired(self) -> StructType: ...

    @property
    def manifest_keys(self) -> tuple[str, ...]: ...

    @property
    def nouns(self) -> Nouns: ...

    def validation(self, known_clusters: tuple[str, ...]) -> Callable[[DataFrame], DataFrame]:
        ...


def read_validated(spark: SparkSession, tables: Sequence[str], model: ManifestModel,
                   clusters: Sequence[str],
                   commits: Sequence[tuple[str, Commit]] | None = None) -> DataFrame:
    """A kind's manifest tables read (`read_manifests`) and its rows validated as data
    against the conf's `clusters` (`row_errors`)."""
    return read_manifests(spark, tables, model.manifest, model.desired, model.manifest_keys,
                          f"{model.nouns.noun} manifest", commits
                          ).transform(model.validation(tuple(clusters)))


def conform_to_manifest(df: DataFrame, manifest: StructType = MANIFEST) -> DataFrame:
    """MANIFEST columns in order and type, plus `row_errors` for values of the wrong type.

    Optional columns a table lacks become null. A value that does not convert
    (partitions 'six') becomes null with a reason, instead of failing the read.
    """
    columns = []
    cast_errors = []
    for f in manifest.fields:
        if f.name not in df.columns:
            columns.append(F.lit(None).cast(f.dataType).alias(f.name))
            continue
        source = F.col(f.name)
        if df.schema[f.name].dataType == f.dataType:
            columns.append(source.alias(f.name))
            continue
        converted = source.try_cast(f.dataType)
        columns.append(converted.alias(f.name))
        cast_errors.append(F.when(
            source.isNotNull() & converted.isNull(),
            F.concat(F.lit(f"{f.name}: "), source.cast("string"),
                     F.lit(f" is not a valid {f.dataType.simpleString()}")),
        ))
    errors = F.filter(F.array(*cast_errors), lambda e: e.isNotNull()) if cast_errors \
        else F.array().cast("array<string>")
    return df.select(*columns, errors.alias("row_errors"))
