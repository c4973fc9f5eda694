"""What a run tells of its client quotas: outcome counts, quotas per cluster and action, the
quotas to look at."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.names import quotas as quota_names
from provisioning.results.quotas import QuotasSummary
from provisioning.transforms.quotas.audit import quota_final_rows
from provisioning.transforms.quotas.plan import entity_text

# The columns of a listed quota (views.quotas renders them).
LISTED_COLUMNS = ("cluster", "action", "phase", "outcome", "error_name", "error_message",
                  "policy_violations", "note", "owner", "source_table", "source_version")


def _nulls_first(value: Any) -> tuple[bool, Any]:
    return (value is not None, value if value is not None else "")


def summarize_quotas(audit_rows: Sequence[DataFrame], listing_limit: int,
                     removals_allowed: bool) -> QuotasSummary:
    """What a run did with client quotas, from their AUDIT rows (`quota` set): outcome
    counts, quotas per cluster and action, and the first `listing_limit` quotas that are not
    simply settled (each with its `entity` text).

    removals_allowed: False for an apply without --allow-quota-removals (its validated
      removals are counted as not made).
    """
    rows = functools.reduce(DataFrame.unionByName, audit_rows)
    final = quota_final_rows(rows).localCheckpoint(eager=True)
    grouped = (final.groupBy("cluster", "action", "phase", "outcome")
               .agg(F.count(F.lit(1)).alias("n")).collect())
    counts: dict[str, int] = {}
    actions: dict[tuple[Any, Any], int] = {}
    removals_not_allowed = 0
    for r in grouped:
        n = int(r["n"])
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + n
        actions[(r["cluster"], r["action"])] = actions.get((r["cluster"], r["action"]), 0) + n
        if (not removals_allowed and r["action"] == quota_names.REMOVE
                and ((r["phase"] == names.VALIDATE and r["outcome"] == names.VALIDATED)
                     or (r["phase"] == names.PLAN and r["outcome"] == names.PLANNED))):
            removals_not_allowed += n
    total = sum(n for outcome, n in counts.items() if outcome not in names.SETTLED)
    listed = (final.where(~F.col("outcome").isin(*names.SETTLED))
              .select(*LISTED_COLUMNS, "quota.*")
              .withColumn("entity", entity_text())
              .orderBy("cluster", "entity", "key").limit(listing_limit).collect()
              ) if total else []
    return QuotasSummary(
        counts=counts,
        actions=[{"cluster": c, "action": a, "quotas": n} for (c, a), n in
                 sorted(actions.items(), key=lambda i: (_nulls_first(i[0][0]),
                                                        _nulls_first(i[0][1])))],
        quotas=[r.asDict(recursive=True) for r in listed],
        quotas_not_listed=max(0, total - len(listed)),
        removals_not_allowed=removals_not_allowed,
    )
