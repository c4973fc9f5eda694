"""Custom policies: a function of the team's own, named in conf, run like a built-in policy.

The counterpart of the broker's `create.topic.policy.class.name` (KIP-108) and
`delete.topic.policy.class.name` (KIP-170), evaluated by the job instead of the
broker, with the whole plan and the cluster context at hand.

Conf::

    policies:
      create:          # or delete, alter, or another kind's policies.<key>
        - name: custom
          callable: mycompany.kafka_policies:no_test_topics_in_prod   # or a.b.c.function
          environment: prod                                          # passed through

Contract of the function::

    def no_test_topics_in_prod(plan: DataFrame, context: PolicyContext,
                               params: Mapping[str, Any]) -> DataFrame: ...

- `plan` holds PLAN rows (schemas.tables.PLAN); `context` is the PolicyContext
  (CLUSTER_STATE rows, SNAPSHOT rows of every live topic, protected globs, deny
  list, delete cap); `params` is the policy's conf block without `name` and
  `callable`.
- It returns PLAN rows: the same rows and exactly the PLAN columns, in order,
  with their types. The job checks the columns and types and stops with a
  PolicyError naming the missing, extra or mistyped columns; the rows it
  cannot check without running Spark, so keeping them is the function's duty.
- It refuses a row by appending a POLICY_VIOLATION with
  `provisioning.transforms.policies.base.with_violation(df, "my_policy", violated, message)`;
  a null `violated` means "not judged". A create policy judges only rows whose
  action is CREATE (`is_create()`), a delete policy only DELETE rows (`is_delete()`),
  an alter policy only ALTER rows (`provisioning.kinds.topics.policies.alter.is_alter()`;
  `config_ops` holds the config operations, `drift` every difference); another kind's
  custom policy judges that kind's plan rows, as its own policies' module says.
- It is a lazy transform: no `collect()`, `count()` or other action, no I/O.
- A custom create policy also judges live topics for `check`: each live topic comes as
  the CREATE of itself in its current shape (partitions, replication factor, its own
  overrides plus the reported values of the configs the built-in policies read; its
  manifest row's owner), with `source_table` 'live' and its live_* columns set
  (`live_configs`: every config the broker reports, with its source). Whatever it appends
  to such a row is a violation `check` reports, with the violation's policy name as the
  rule (`checks.severity.custom` sets its severity). Full mapping in
  `provisioning.kinds.topics.rules.live`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from provisioning.conf.policies import check_custom, resolve_callable
from provisioning.errors import PolicyError
from provisioning.transforms.policies.base import Transform, check_plan_schema
from schemas import PLAN


def make_custom(kind: str, schema: StructType = PLAN, table: str = "PLAN"
                ) -> Callable[[Mapping[str, Any], Any], Transform]:
    """The factory of `custom` for `kind`'s policies ("create", "delete", "alter", or
    another kind's `policies.<key>`, whose plan rows are `schema`, named `table`)."""

    def make(params: Mapping[str, Any], context: Any) -> Transform:
        """The conf's own policy: `callable` (`package.module:function`) judges the rows."""
        problems = check_custom(params)
        if problems:
            raise PolicyError(f"custom {kind} policy: {'; '.join(problems)}")
        target = str(params["callable"])
        fn = resolve_callable(target)
        passed = {k: v for k, v in params.items() if k != "callable"}
        who = f"custom {kind} policy {target!r}"

        def transform(df: DataFrame) -> DataFrame:
            out = fn(df, context, passed)
            if not isinstance(out, DataFrame):
                raise PolicyError(f"{who} must return a DataFrame, "
                                  f"got {type(out).__name__}")
            check_plan_schema(out, f"the DataFrame {who} returned", schema, table)
            return out

        return transform

    return make
