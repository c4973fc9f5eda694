"""What a run tells of its ACL bindings: outcome counts, bindings per cluster and action,
the bindings to look at."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.names import acls as acl_names
from provisioning.results.acls import AclsSummary
from provisioning.transforms.acls.audit import acl_final_rows
from provisioning.transforms.acls.plan import binding_text


def _nulls_first(value: Any) -> tuple[bool, Any]:
    return (value is not None, value if value is not None else "")


# The columns of a listed binding (views.plan_text renders them).
ACL_LISTED_COLUMNS = ("cluster", "action", "phase", "outcome", "error_name", "error_message",
                      "policy_violations", "note", "owner", "source_table", "source_version")


def summarize_acls(audit_rows: Sequence[DataFrame], listing_limit: int,
                   revokes_allowed: bool) -> AclsSummary:
    """What a run did with ACL bindings, from their AUDIT rows (`acl` set): outcome counts,
    bindings per cluster and action, and the first `listing_limit` bindings that are not
    simply settled (each with its one-line `binding` text).

    revokes_allowed: False for an apply without --allow-revokes (its validated revokes are
      counted as not made).
    """
    rows = functools.reduce(DataFrame.unionByName, audit_rows)
    final = acl_final_rows(rows).localCheckpoint(eager=True)
    grouped = (final.groupBy("cluster", "action", "phase", "outcome")
               .agg(F.count(F.lit(1)).alias("n")).collect())
    counts: dict[str, int] = {}
    actions: dict[tuple[Any, Any], int] = {}
    revokes_not_allowed = 0
    for r in grouped:
        n = int(r["n"])
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + n
        actions[(r["cluster"], r["action"])] = actions.get((r["cluster"], r["action"]), 0) + n
        if (not revokes_allowed and r["phase"] == names.VALIDATE
                and r["outcome"] == names.VALIDATED and r["action"] == acl_names.REVOKE):
            revokes_not_allowed += n
    total = sum(n for outcome, n in counts.items() if outcome not in names.SETTLED)
    listed = (final.where(~F.col("outcome").isin(*names.SETTLED))
              .select(*ACL_LISTED_COLUMNS, "acl.*")
              .withColumn("binding", binding_text())
              .orderBy("cluster", "binding").limit(listing_limit).collect()) if total else []
    return AclsSummary(
        counts=counts,
        actions=[{"cluster": c, "action": a, "bindings": n} for (c, a), n in
                 sorted(actions.items(), key=lambda i: (_nulls_first(i[0][0]),
                                                        _nulls_first(i[0][1])))],
        bindings=[r.asDict(recursive=True) for r in listed],
        bindings_not_listed=max(0, total - len(listed)),
        revokes_not_allowed=revokes_not_allowed,
    )
