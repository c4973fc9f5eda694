"""The client quotas' part of the run package, on the entity base (`run.entity`): their
requests (`kinds.quotas.requests`, `kinds.quotas.tasks`) and their finding in `check`.

AlterClientQuotas has validateOnly: every SET and REMOVE the plan allows goes to the broker
with it first, one request per cluster and `quotas.batch_size` entities, and the broker's
verdict per entity is each key's `validate` row. `apply` makes the SETs the broker passed,
and the REMOVEs only with `--allow-quota-removals`; `verify` reads every changed entity
back (DescribeClientQuotas). `check` reports each live quota no manifest row lists (rule
`unmanaged_quota`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.kinds.quotas import names as quota_names
from provisioning.kinds.quotas.conf import QuotasConf
from provisioning.kinds.quotas.model import MODEL
from provisioning.kinds.quotas.plan import entity_text
from provisioning.kinds.quotas.policies import QuotaPolicyContext
from provisioning.kinds.quotas.requests import quota_states
from provisioning.kinds.quotas.schema import ENTITY_COLUMNS, QUOTA_KEY
from provisioning.kinds.quotas.tasks import quota_results
from provisioning.run.engine import RunContext
from provisioning.run.entity import ClusterRead, EntitySlice, OneTaskKind
from provisioning.run.state import RunState

_TYPES = dict(zip(quota_names.ENTITY_TYPES, ENTITY_COLUMNS, strict=True))


class QuotaSlice(EntitySlice):
    """The client quotas' slice of the run's state."""


class QuotasKind(OneTaskKind):
    name, State, model, conf_class = "quotas", QuotaSlice, MODEL, QuotasConf
    requests_named = ("validateOnly AlterClientQuotas", "AlterClientQuotas",
                      "verify client quotas")
    summary_keys = ("removals_not_allowed", "clusters_not_readable")
    check_rule = quota_names.UNMANAGED_QUOTA
    request_columns = (*QUOTA_KEY, "action", "value")
    results = staticmethod(quota_results)

    def read_live(self, ctx: RunContext) -> tuple[Mapping[str, ClusterRead], DataFrame]:
        found: dict[str, tuple[list[tuple[Any, ...]], tuple[str, str] | None]] = {}
        for cluster, state in quota_states(ctx.clusters, ctx.credentials, ctx.conf.kafka).items():
            rows: list[tuple[Any, ...]] = []
            for entity, quotas in state.quotas.items():
                spelled = {column: (quota_names.table_name(entity[kind]) if kind in entity
                                    else None) for kind, column in _TYPES.items()}
                rows += [(cluster, *(spelled[c] for c in ENTITY_COLUMNS), key, float(value))
                         for key, value in sorted(quotas.items())]
            found[cluster] = (rows, state.problem)
        return self.live_frame(ctx, found)

    def policy_context(self, ctx: RunContext, state: RunState) -> Any:
        return QuotaPolicyContext(
            max_changes_per_cluster=self.conf(ctx).max_changes_per_cluster)

    def finding(self) -> Column:
        return F.format_string("quota %s %s %s: named by no quota manifest row (import "
                               "--quotas adopts it)", entity_text(), F.col("key"),
                               F.col("value").cast("string"))


RUN = QuotasKind()
