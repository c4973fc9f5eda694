"""The offset resets' part of the run package, on the entity base (`run.entity`): their
requests (`kinds.offsets.requests`, `kinds.offsets.tasks`).

The snapshot reads what the pending requests name (their topics' partitions, the log's
start and end, the first offset at a request's time, the groups' committed offsets; from
the driver), and the plan marks done each request an earlier run's apply sent (read from
the audit table: never sent twice). Validate refuses a RESET of a group with a member;
`apply --allow-offset-resets` commits the targets and removes the offsets (OffsetDelete:
the broker refuses it while the group reads the topic); `verify` reads every partition's
committed offset back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.kinds.groups.conf import GroupsConf
from provisioning.kinds.offsets.conf import OffsetsConf
from provisioning.kinds.offsets.model import MODEL
from provisioning.kinds.offsets.names import OFFSETS_DELETED, RESET_DONE
from provisioning.kinds.offsets.plan import plan_resets, with_values
from provisioning.kinds.offsets.policies import OffsetPolicyContext
from provisioning.kinds.offsets.requests import offset_states
from provisioning.kinds.offsets.schema import OFFSET_KEY
from provisioning.kinds.offsets.tasks import offset_results
from provisioning.results import utc_now
from provisioning.run.engine import Phase, RunContext
from provisioning.run.entity import ClusterRead, EntitySlice, OneTaskKind
from provisioning.run.kind import IMPORT, PlanLayer
from provisioning.run.state import RunState

# The apply outcomes that mean a request was sent: it is never sent again.
SENT_OUTCOMES = (RESET_DONE, OFFSETS_DELETED, names.UNKNOWN)


class OffsetSlice(EntitySlice):
    """The offset resets' slice of the run's state."""


class OffsetsKind(OneTaskKind):
    name, State, model, conf_class = "offsets", OffsetSlice, MODEL, OffsetsConf
    requests_named = ("offset reset groups' members", "OffsetCommit and OffsetDelete",
                      "verify committed offsets")
    summary_keys = ("resets_not_allowed", "clusters_not_readable")
    request_columns = (*OFFSET_KEY, "group", "topic", "action", "target")
    results = staticmethod(offset_results)

    def done(self, ctx: RunContext) -> DataFrame:
        """(request_id, run_id): each request an apply of the run's clusters sent, with the
        first run that did (read from the audit table)."""
        empty = ctx.spark.createDataFrame([], "request_id string, run_id string")
        ref = TableRef(ctx.conf.tables.audit)
        if not table_exists(ctx.spark, ref):
            return empty
        audit = read_table(ctx.spark, ref)
        if self.model.column not in audit.columns:
            return empty
        sent = audit.where(F.col(self.model.column).isNotNull()
                           & (F.col("phase") == names.APPLY)
                           & F.col("outcome").isin(*SENT_OUTCOMES)
                           & F.col("cluster").isin(*ctx.cluster_names))
        return (sent.groupBy(F.col(f"{self.model.column}.request_id").alias("request_id"))
                .agg(F.min_by("run_id", "recorded_at").alias("run_id"))
                .localCheckpoint(eager=True))

    def read(self, ctx: RunContext, requests: Sequence[Mapping[str, Any]]
             ) -> tuple[Mapping[str, ClusterRead], DataFrame]:
        return self.live_frame(ctx, offset_states(ctx.clusters, ctx.credentials, ctx.conf.kafka,
                                                  requests))

    def read_live(self, ctx: RunContext) -> tuple[Mapping[str, ClusterRead], DataFrame]:
        # Offsets are read for requests only (`read_for_plan`): with none, nothing is read.
        return self.read(ctx, [])

    def asked(self, ctx: RunContext, desired: DataFrame) -> DataFrame:
        """The requests of `desired` the run is narrowed to (`reset-offsets --execute`: its
        own request; else all)."""
        ids = getattr(ctx.options, "subjects", {}).get(self.name)
        return desired if ids is None else desired.where(F.col("request_id").isin(*ids))

    def read_for_plan(self, ctx: RunContext, state: RunState
                      ) -> tuple[Mapping[str, ClusterRead], DataFrame]:
        """The offsets of the valid requests not done yet, of the run's clusters (a
        duration's time counted back from now, not from when the rows were validated)."""
        desired = self.slice(state).desired
        if desired is None:
            return self.read(ctx, [])
        pending = (self.asked(ctx, desired).where(F.coalesce(F.size("row_errors") == 0, F.lit(True))
                                 & F.col("cluster").isin(*ctx.cluster_names))
                   .join(self.done(ctx), on="request_id", how="left_anti")
                   .transform(with_values(utc_now())))
        return self.read(ctx, [r.asDict() for r in pending.select(
            "cluster", "request_id", "group", "topic", "at_ms").collect()])

    def planned_rows(self, ctx: RunContext, state: RunState, desired: DataFrame,
                     live: DataFrame) -> DataFrame:
        return plan_resets(self.asked(ctx, desired), live, self.done(ctx))

    def policy_context(self, ctx: RunContext, state: RunState) -> Any:
        conf = self.conf(ctx)
        return OffsetPolicyContext(
            max_changes_per_cluster=conf.max_changes_per_cluster,
            protected_groups=ctx.conf.section(GroupsConf).protected_groups)

    def phases(self, step: str, layers: Sequence[PlanLayer] = ()) -> Sequence[Phase]:
        # Requests are written by the people who ask: `import` writes none.
        return () if step == IMPORT else super().phases(step, layers)


RUN = OffsetsKind()
