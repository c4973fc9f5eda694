"""What every policy shares: the cluster context it may read and how it records a violation.

A policy is a factory `make(params, context) -> Callable[[DataFrame], DataFrame]`.
The returned transform takes PLAN rows and returns PLAN rows with the same
columns, having appended a POLICY_VIOLATION struct to `policy_violations` for
each row it refuses. It never drops or adds rows and never runs a Spark action.
Create policies look only at rows whose `action` is CREATE, delete policies
only at rows whose `action` is DELETE, alter policies only at ALTER rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from provisioning.errors import PolicyError
from provisioning.names import CREATE, DELETE
from schemas import PLAN, column_names

Transform = Callable[[DataFrame], DataFrame]


@dataclass(frozen=True)
class PolicyContext:
    """The live cluster facts a policy may use (KIP-170's cluster-aware policies).

    clusters: CLUSTER_STATE rows (cluster, cluster_id, controller_id, broker_ids,
      default_partitions, default_replication_factor, error, racks, fenced_broker_ids), one
      per cluster in the run.
    live: SNAPSHOT rows, every live topic of every cluster in the run.
    protected, deny_list: globs of topics no deletion may touch (DeletesConf).
    max_deletes_per_cluster: the per-run cap on deletions of one cluster.
    max_alters_per_cluster: the per-run cap on alters of one cluster.
    in_use_since: a topic with a record written at or after this time is in use (the
      delete policy's check, `deletes.in_use_days` before the run); None: writes do not
      count.
    """

    clusters: DataFrame
    live: DataFrame
    protected: tuple[str, ...] = ()
    deny_list: tuple[str, ...] = ()
    max_deletes_per_cluster: int = 10
    max_alters_per_cluster: int = 50
    in_use_since: dt.datetime | None = None


PolicyFactory = Callable[[Mapping[str, Any], PolicyContext], Transform]




def is_create() -> Column:
    """Rows a create policy judges."""
    return F.col("action") == F.lit(CREATE)


def is_delete() -> Column:
    """Rows a delete policy judges."""
    return F.col("action") == F.lit(DELETE)



def check_plan_schema(df: DataFrame, who: str, schema: StructType = PLAN,
                      table: str = "PLAN") -> None:
    """Raise PolicyError unless `df` has exactly the PLAN columns, in order, with their types.

    who: names the DataFrame in the message, e.g. "the DataFrame custom create policy
      'pkg.mod:fn' returned".
    schema, table: another plan's columns and name (another kind's policies).
    """
    expected = [(f.name, f.dataType.simpleString()) for f in schema.fields]
    actual = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
    if actual == expected:
        return
    names = [n for n, _ in actual]
    want = dict(expected)
    missing = [n for n, _ in expected if n not in names]
    extra = [n for n in names if n not in want]
    wrong = [f"{n} is {t}, expected {want[n]}" for n, t in actual if n in want and t != want[n]]
    problems = []
    if missing:
        problems.append(f"missing columns: {', '.join(missing)}")
    if extra:
        problems.append(f"extra columns: {', '.join(extra)}")
    if wrong:
        problems.append(f"wrong types: {'; '.join(wrong)}")
    if not problems:
        problems.append(f"columns out of order: {', '.join(names)}")
    raise PolicyError(f"{who} does not have exactly the {table} columns (names, order, types): "
                      f"{'; '.join(problems)}")


def as_plan(df: DataFrame) -> DataFrame:
    """A policy's closing select: the PLAN columns, in order, whatever it added on the way."""
    return df.select(*column_names(PLAN))


def violation(policy: str, message: Column) -> Column:
    """A POLICY_VIOLATION struct."""
    return F.struct(F.lit(policy).alias("policy"), message.alias("message"))


def with_violation(df: DataFrame, policy: str, violated: Column, message: Column) -> DataFrame:
    """Append a violation of `policy` to the rows where `violated` is true.

    A null `violated` counts as not violated: a policy that cannot judge a row
    (say, partitions left to the broker default) lets it through.
    """
    appended = F.filter(F.array(F.when(violated, violation(policy, message))),
                        lambda v: v.isNotNull())
    current = F.col("policy_violations")
    # Spelled as a two-way split rather than concat(coalesce(current, []), ...): that
    # would turn the column non-nullable and the output schema would differ from PLAN.
    return df.withColumn(
        "policy_violations",
        F.when(current.isNull(), appended).otherwise(F.concat(current, appended)),
    )


def per_cluster_cap(policy: str, candidate: Column, cap: int, planned: str, refused: str,
                    raise_key: str, columns: Sequence[str], weight: Column | None = None
                    ) -> Transform:
    """Over `cap` changes on one cluster in one run (the `candidate` rows, or the sum of
    their `weight`), none of that cluster's is made: a mass change is far more likely a
    broken manifest than an intent. Never lifted; the caller's `candidate` counts only what
    every earlier policy let through. The closing select is `columns`.

    planned, refused, raise_key: the message's words, as in "<n> <planned> planned on
      cluster <c> exceed the per-run cap of <cap>; <refused> on this cluster (split the
      change or raise <raise_key>)".
    """

    def transform(df: DataFrame) -> DataFrame:
        counted = (F.count(F.when(candidate, F.lit(1))) if weight is None
                   else F.sum(F.when(candidate, weight)))
        total = counted.over(Window.partitionBy("cluster"))
        message = F.format_string(
            f"%d {planned} planned on cluster %s exceed the per-run cap of %d; {refused} on "
            f"this cluster (split the change or raise {raise_key})", total, F.col("cluster"),
            F.lit(cap))
        return with_violation(df, policy, candidate & (total > cap), message).select(*columns)

    return transform


def requested_partitions() -> Column:
    """Partitions a CREATE asks for: the assignment's size, the explicit count, or null."""
    return F.coalesce(_assignment_size(), F.col("partitions"))


def _assignment_size() -> Column:
    return F.when(F.col("replica_assignment").isNotNull(),
                  F.size(F.map_keys("replica_assignment")))


def requested_replication_factor() -> Column:
    """Replication factor a CREATE asks for: the assignment's replica count, the explicit
    factor, or null (broker default)."""
    # try_: an empty assignment ({}) is a bad manifest row, not a reason to fail the run.
    first_replicas = F.try_element_at(F.map_values("replica_assignment"), F.lit(1))
    return F.coalesce(
        F.when(F.col("replica_assignment").isNotNull(), F.size(first_replicas)),
        F.col("replication_factor"),
    )
