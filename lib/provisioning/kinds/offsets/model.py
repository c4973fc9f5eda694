"""Offset resets as pure DataFrame transforms, and their model on the entity base (`MODEL`,
`transforms.entity`): requests validated as data and planned per partition
(`kinds.offsets.plan`), judged by their policies (`kinds.offsets.policies`).

A request is not desired state: nothing live is unmanaged, and `import` writes none. Its
audit row holds, in `offset_reset`, the request and its partition, the offset committed
before and the target (with the lags), and the offset read back at verify.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.kinds.offsets import names as offset_names
from provisioning.kinds.offsets import schema as tables
from provisioning.kinds.offsets.plan import plan_resets, with_reset_row_errors
from provisioning.kinds.offsets.policies import ALWAYS_ON, OFFSET_POLICIES, reset_text
from provisioning.transforms.entity import EntityModel
from provisioning.transforms.policies.base import Transform

# The audit struct's fields read from a plan row as they are named there.
_ASKED = ("group", "topic", "to", "value")
_AFTER = ("target", "lag_before", "lag_after", "clamped", "done_by", "requested_by",
          "reason")


def reset_struct(named: str, asked: str, after: Column) -> Column:
    """The audit's `offset_reset` struct: the request and partition of the row aliased
    `named` (`""`, `"r."`), what the plan row aliased `asked` read and asked for, and the
    offset found `after`."""
    return F.struct(F.col(f"{named}request_id").alias("request_id"),
                    *[F.col(f"{asked}{c}").alias(c) for c in _ASKED],
                    F.col(f"{named}partition").alias("partition"),
                    F.col(f"{asked}committed").alias("before"),
                    after.alias("after"),
                    *[F.col(f"{asked}{c}").alias(c) for c in _AFTER])


class OffsetModel(EntityModel):
    nouns = offset_names.NOUNS
    manifest, desired = tables.OFFSET_RESET_MANIFEST, tables.OFFSET_RESET_DESIRED
    live, snapshot = tables.OFFSET_LIVE, tables.OFFSET_SNAPSHOT
    plan_schema, result = tables.OFFSET_PLAN, tables.OFFSET_RESULT
    manifest_keys = ("request_id", "cluster", "group", "topic", "to")
    key, marker = tables.OFFSET_KEY, "request_id"
    adds, removes = offset_names.RESET, offset_names.DELETE
    added, removed = offset_names.RESET_DONE, offset_names.OFFSETS_DELETED
    audit_column, identity = tables.AUDIT_COLUMN, ("request_id", "partition")
    text = staticmethod(reset_text)
    entity_list, text_column = None, "reset"
    listing_order = ("cluster", "request_id", "partition")
    policies, always_on = OFFSET_POLICIES, ALWAYS_ON
    cap_refuses = "no offset of that cluster is reset or deleted"
    flag_adds = True

    def validation(self, known_clusters: tuple[str, ...]) -> Transform:
        # `duration`'s time is read again from now when the offsets are read.
        return with_reset_row_errors(known_clusters, dt.datetime.now(dt.UTC))

    def plan(self, desired: DataFrame, live: DataFrame, remove_unlisted: bool) -> DataFrame:
        """The plan with no request done before (the run's plan reads those from the
        audit: `kinds.offsets.run`)."""
        none_done = desired.sparkSession.createDataFrame(
            [], "request_id string, run_id string")
        return plan_resets(desired, live, none_done)

    def unmanaged(self, live: DataFrame, desired: DataFrame) -> DataFrame:
        # A request names what it changes: no live offset is left out of a manifest.
        return live.limit(0)

    def manifest_rows(self, live: DataFrame, owner: str | None) -> DataFrame:
        # Requests are written by the people who ask (or `reset-offsets --execute`).
        return live.sparkSession.createDataFrame([], self.manifest)

    def plan_outcome(self) -> Column:
        """The entity base's, but a request an earlier run applied is `already_done`."""
        base = super().plan_outcome()
        return F.when(base == names.ALREADY_PRESENT, F.lit(offset_names.ALREADY_DONE)
                      ).otherwise(base)

    def plan_struct(self) -> Column:
        return reset_struct("", "", F.lit(None).cast("long"))

    def result_struct(self) -> Column:
        # Verify reads the committed offset back; apply's answer is the target or none.
        phase, outcome = F.col("r.phase"), F.col("r.outcome")
        after = (F.when(phase == names.VERIFY, F.col("r.found"))
                 .when((phase == names.APPLY) & (outcome == offset_names.RESET_DONE),
                       F.col("p.target")))
        return reset_struct("r.", "p.", after)


MODEL = OffsetModel()
