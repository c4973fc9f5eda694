"""Test data builders: DataFrames of the `schemas` tables from partial rows.

Rows are dicts naming only the columns a test cares about; every other column
is null (or the builder's default). A key that is not a column of the schema
is an error, so a typo cannot silently leave a column null.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from provisioning.kinds.acls.schema import ACL_BINDING, ACL_DESIRED, ACL_PLAN
from provisioning.registry import AUDIT
from schemas.check import VIOLATIONS
from schemas.tables import CLUSTER_STATE, DESIRED, PLAN, RUNS, SNAPSHOT


def rows_df(spark: SparkSession, schema: StructType, rows: Sequence[Mapping[str, Any]],
            defaults: Mapping[str, Any] | None = None) -> DataFrame:
    """A DataFrame of `schema` from partial rows; missing columns take `defaults`, else null.

    Nested structs may be given as dicts.
    """
    names = [f.name for f in schema.fields]
    defaults = defaults or {}
    unknown_defaults = sorted(set(defaults) - set(names))
    if unknown_defaults:
        raise KeyError(f"defaults name no column of the schema: {unknown_defaults}")
    data = []
    for i, row in enumerate(rows):
        unknown = sorted(set(row) - set(names))
        if unknown:
            raise KeyError(f"row {i} has keys that are not columns: {unknown} "
                           f"(columns: {', '.join(names)})")
        data.append(tuple(row[n] if n in row else defaults.get(n) for n in names))
    return spark.createDataFrame(data, schema)


def plan_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """PLAN rows; `policy_violations` defaults to []."""
    return rows_df(spark, PLAN, rows, {"policy_violations": []})


def cluster_states_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """CLUSTER_STATE rows."""
    return rows_df(spark, CLUSTER_STATE, rows)


def snapshot_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """SNAPSHOT rows."""
    return rows_df(spark, SNAPSHOT, rows)


def config_entry(name: str, value: str | None, source: str = "DYNAMIC_TOPIC_CONFIG",
                 sensitive: bool = False) -> dict[str, Any]:
    """One CONFIG_ENTRY, as SNAPSHOT.configs / default_configs hold it."""
    return {"name": name, "value": value, "source": source, "read_only": False,
            "sensitive": sensitive}


def partition_state(partition: int, leader: int | None, replicas: Sequence[int],
                    isr: Sequence[int] | None = None) -> dict[str, Any]:
    """One PARTITION_STATE; the ISR is every replica unless given."""
    return {"partition": partition, "leader": leader, "replicas": list(replicas),
            "isr": sorted(replicas if isr is None else isr)}


def violations_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """VIOLATIONS rows."""
    return rows_df(spark, VIOLATIONS, rows)


def runs_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """RUNS rows."""
    return rows_df(spark, RUNS, rows)


def violation(policy: str, message: str) -> dict[str, str]:
    """One POLICY_VIOLATION, as a PLAN row's `policy_violations` holds it."""
    return {"policy": policy, "message": message}


def desired_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """DESIRED rows; source m@1 and no row errors unless given."""
    return rows_df(spark, DESIRED, rows,
                   {"source_table": "m", "source_version": 1, "row_errors": []})


def audit_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """AUDIT rows."""
    return rows_df(spark, AUDIT, rows)


def acl_desired_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """ACL_DESIRED rows; source a@1 and no row errors unless given."""
    return rows_df(spark, ACL_DESIRED, rows,
                   {"source_table": "a", "source_version": 1, "row_errors": []})


def acl_binding_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """ACL_BINDING rows; host `*`, LITERAL, ALLOW unless given."""
    return rows_df(spark, ACL_BINDING, rows,
                   {"host": "*", "pattern_type": "LITERAL", "permission": "ALLOW"})


def acl_plan_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """ACL_PLAN rows; host `*`, LITERAL, ALLOW, no row error nor violation unless given."""
    return rows_df(spark, ACL_PLAN, rows,
                   {"host": "*", "pattern_type": "LITERAL", "permission": "ALLOW",
                    "row_errors": [], "policy_violations": []})
