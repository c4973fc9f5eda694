"""Test data builders of the client quotas' tables (provisioning.kinds.quotas.schema), as
tests/builders.py: rows are dicts naming only the columns a test cares about, every other
column null (or the builder's default); a key that is not a column is an error."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from provisioning.kinds.quotas.schema import (
    QUOTA_DESIRED,
    QUOTA_LIVE,
    QUOTA_MANIFEST,
    QUOTA_PLAN,
    QUOTA_RESULT,
)
from tests.builders import rows_df


def quota_manifest_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """QUOTA_MANIFEST rows."""
    return rows_df(spark, QUOTA_MANIFEST, rows)


def quota_desired_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """QUOTA_DESIRED rows; source q@1 and no row errors unless given."""
    return rows_df(spark, QUOTA_DESIRED, rows,
                   {"source_table": "q", "source_version": 1, "row_errors": []})


def quota_live_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """QUOTA_LIVE rows."""
    return rows_df(spark, QUOTA_LIVE, rows)


def quota_plan_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """QUOTA_PLAN rows; no row error nor violation unless given."""
    return rows_df(spark, QUOTA_PLAN, rows, {"row_errors": [], "policy_violations": []})


def quota_result_df(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """QUOTA_RESULT rows."""
    return rows_df(spark, QUOTA_RESULT, rows)


def quota(entity: Mapping[str, str | None], key: str | None, value: float | None = None,
          found: float | None = None) -> dict[str, Any]:
    """One QUOTA_STRUCT (the audit's `quota`): `entity` by column (entity_user, ...)."""
    return {"entity_user": entity.get("entity_user"),
            "entity_client_id": entity.get("entity_client_id"),
            "entity_ip": entity.get("entity_ip"), "key": key, "value": value, "found": found}
