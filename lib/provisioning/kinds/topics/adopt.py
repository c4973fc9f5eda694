"""`import` and `snapshot` of topics (see engine.py): the live topics written as a manifest
table; the live topics recorded in the snapshots table."""

from __future__ import annotations

import functools
import time

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf import Conf
from provisioning.delta.manifests import write_manifest_frame
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.kinds.topics.conf import TopicsConf
from provisioning.kinds.topics.phases import NAME, snapshot
from provisioning.kinds.topics.plan import importable, manifest_rows
from provisioning.kinds.topics.results import ImportSummary
from provisioning.kinds.topics.state import TopicState
from provisioning.run.engine import Phase, RunContext, log_phase, require
from provisioning.run.options import ImportOptions
from provisioning.run.state import RunState
from provisioning.session import job_label
from provisioning.transforms.scope import topics_matching

# The switches of a topic import (kinds.topics.cli).
WITH_ASSIGNMENT, INCLUDE_PROTECTED = "with_assignment", "include_protected"


class Import(Phase):
    """The live topics in scope as manifest rows (see `kinds.topics.plan`),
    written to the import table in one commit; Kafka is only read."""

    name = "import"
    kind = NAME
    reads = ("states",)
    writes = ("topics.live", "topics.imported")
    runs_tasks = True

    def run(self, ctx: RunContext, state: RunState) -> None:
        started = time.monotonic()
        options = ctx.options
        if not isinstance(options, ImportOptions):
            raise TypeError("the import phase needs ImportOptions")
        topics = state.of(TopicState)
        live = snapshot(ctx, state, None, always=False, record=False).transform(
            topics_matching(ctx.cluster_names, options.scope.topics_glob))
        managed = live.join(named_by_manifests(ctx, options), on=["cluster", "topic"],
                            how="left_semi").select("cluster", "topic",
                                                    F.lit(True).alias("_managed"))
        live = live.join(managed, on=["cluster", "topic"], how="left").localCheckpoint()
        is_managed = F.coalesce(F.col("_managed"), F.lit(False))
        kept = importable(protected_globs(ctx.conf),
                          bool(options.switch(INCLUDE_PROTECTED))) & ~is_managed
        rows = manifest_rows(live.where(kept), options.owner,
                             bool(options.switch(WITH_ASSIGNMENT)))
        with job_label(ctx.spark, f"import: write {options.table}"):
            # --mode error was checked before the run started; Delta's own "error" mode
            # still refuses a table created since.
            version = write_manifest_frame(rows, options.table, options.mode)
            ctx.steps.done("write")
        counts = {r["cluster"]: r for r in live.groupBy("cluster").agg(
            F.count(F.when(kept, 1)).alias("written"),
            F.count(F.when(is_managed, 1)).alias("managed"),
            F.count(F.when(~kept & ~is_managed & F.col("error_name").isNull(), 1)
                    ).alias("protected"),
            F.count(F.when(F.col("error_name").isNotNull(), 1)).alias("undescribable"),
        ).collect()}
        topics.live = live

        def count(cluster: str, name: str) -> int:
            return int(counts[cluster][name]) if cluster in counts else 0

        topics.imported = imported = [
            ImportSummary(cluster=c, rows_written=count(c, "written"),
                          left_out_managed=count(c, "managed"),
                          left_out_protected=count(c, "protected"),
                          left_out_undescribable=count(c, "undescribable"))
            for c in ctx.cluster_names]
        ctx.record.outcome_counts = {"rows_written": sum(s.rows_written for s in imported),
                                     "table_version": version}
        log_phase("import", started, live, by="cluster")


def named_by_manifests(ctx: RunContext, options: ImportOptions) -> DataFrame:
    """(cluster, topic) of every row of the conf's manifest tables that exist, other than
    the import table (it is replaced or new), and of the import table itself when it is
    appended to: a topic a manifest already names is not imported twice."""
    tables = [t for t in ctx.conf.tables.manifests if t != options.table]
    if options.mode == "append":
        tables.append(options.table)
    frames = [read_table(ctx.spark, TableRef(t)).select("cluster", "topic")
              for t in dict.fromkeys(tables) if table_exists(ctx.spark, TableRef(t))]
    if not frames:
        return ctx.spark.createDataFrame([], "cluster string, topic string")
    return functools.reduce(DataFrame.unionByName, frames)


def protected_globs(conf: Conf) -> tuple[str, ...]:
    """Every name pattern a deletion may never touch: the built-in ones, the conf's
    protected and deny lists, and the patterns of `protected_patterns` delete policies."""
    topics = conf.section(TopicsConf)
    patterns: list[str] = [*names.ALWAYS_PROTECTED, *topics.deletes.protected,
                           *topics.deletes.deny_list]
    for spec in topics.delete_policies:
        if spec.name == "protected_patterns":
            patterns += list(spec.params.get("patterns") or [])
    return tuple(dict.fromkeys(patterns))


class RecordSnapshot(Phase):
    """`snapshot`: every live topic of the run's clusters, recorded in the snapshots table."""

    name = "snapshot"
    kind = NAME
    reads = ("states",)
    writes = ("topics.live",)
    runs_tasks = True

    def run(self, ctx: RunContext, state: RunState) -> None:
        require(state.states, "states")
        state.of(TopicState).live = snapshot(ctx, state, None, always=True)
