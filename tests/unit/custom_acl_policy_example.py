"""Custom ACL policies the tests name in conf: one honours the contract, one breaks it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning.kinds.acls.policies import AclPolicyContext, is_grant
from provisioning.transforms.policies.base import with_violation


def no_hosts(plan: DataFrame, context: AclPolicyContext, params: Mapping[str, Any]
             ) -> DataFrame:
    """Refuse grants limited to a host other than `params["host"]`."""
    host = str(params["host"])
    return with_violation(
        plan, "no_hosts", is_grant() & (F.col("host") != F.lit(host)),
        F.format_string(f"host %s is not {host}", F.col("host")))


def drops_note(plan: DataFrame, context: AclPolicyContext, params: Mapping[str, Any]
               ) -> DataFrame:
    """Breaks the contract: loses a column."""
    return plan.drop("note")
