"""Custom policies the tests name in conf: some honour the contract, some break it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning.transforms.policies.base import (
    PolicyContext,
    is_create,
    is_delete,
    with_violation,
)


def refuse_word(plan: DataFrame, context: PolicyContext, params: Mapping[str, Any]) -> DataFrame:
    """Create policy: refuse topics whose name contains `params["word"]`."""
    word = str(params["word"])
    return with_violation(
        plan, "no_word", is_create() & F.col("topic").contains(word),
        F.format_string(f"topic %s contains the word {word!r}", F.col("topic")))


def keep_owner(plan: DataFrame, context: PolicyContext, params: Mapping[str, Any]) -> DataFrame:
    """Delete policy: refuse deleting the topics of `params["owner"]`."""
    owner = str(params["owner"])
    return with_violation(
        plan, "keep_owner", is_delete() & (F.col("owner") == F.lit(owner)),
        F.format_string("topics of %s are kept", F.col("owner")))


def drops_owner(plan: DataFrame, context: PolicyContext, params: Mapping[str, Any]) -> DataFrame:
    """Breaks the contract: loses a column and adds one."""
    return plan.drop("owner").withColumn("note", F.lit("x"))


def retypes_partitions(plan: DataFrame, context: PolicyContext,
                       params: Mapping[str, Any]) -> DataFrame:
    """Breaks the contract: changes a column's type."""
    return plan.withColumn("partitions", F.col("partitions").cast("long"))


def returns_nothing(plan: DataFrame, context: PolicyContext, params: Mapping[str, Any]) -> None:
    """Breaks the contract: forgets to return the DataFrame."""
    return None


NOT_CALLABLE = 42
