"""`import --quotas` and `check` of client quotas (see engine.py): the live quotas written
as quota manifest rows; the live quotas no manifest row lists, as `check`'s findings."""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf.quotas import QuotasConf
from provisioning.delta.manifests import write_manifest_frame
from provisioning.delta.tables import TableRef, table_exists
from provisioning.names import quotas as quota_names
from provisioning.results import utc_now
from provisioning.run.engine import Phase, RunContext, require
from provisioning.run.options import ImportOptions
from provisioning.run.quotas.phases import NAME, live_quotas, same_quota, validated_rows
from provisioning.run.quotas.state import QuotaSlice
from provisioning.run.state import RunState
from provisioning.session import job_label
from provisioning.transforms.quotas.plan import entity_text, quota_manifest_rows, unmanaged_quotas
from schemas.check import VIOLATIONS
from schemas.quotas import ENTITY_COLUMNS


class Import(Phase):
    """The live quotas of the selected clusters as quota manifest rows (one per entity,
    `transforms.quotas.plan.quota_manifest_rows`), leaving out the entities the conf's
    quota manifests already name, written in one commit. Per cluster: rows and quotas
    written, entities left out, and why a cluster had none to give."""

    name = "quota import"
    kind = NAME
    reads = ("states",)
    writes = ("quotas.live", "quotas.imported")

    def run(self, ctx: RunContext, state: RunState) -> None:
        options = ctx.options
        if not isinstance(options, ImportOptions):
            raise TypeError("the import phase needs ImportOptions")
        quotas = state.of(QuotaSlice)
        table, mode = options.table, options.mode
        with job_label(ctx.spark, "import: read live quotas"):
            found, live = live_quotas(ctx)
        tables = [t for t in (ctx.conf.section(QuotasConf).manifests or ())
                  if t != table or mode == "append"]
        tables = [t for t in dict.fromkeys(tables) if table_exists(ctx.spark, TableRef(t))]
        named = (validated_rows(ctx, tables).where(F.size("row_errors") == 0)
                 .select("cluster", *ENTITY_COLUMNS).alias("n"))
        kept = (live.alias("l").join(named, on=same_quota("l", "n", ("cluster",
                                                                     *ENTITY_COLUMNS)),
                                     how="left_anti").localCheckpoint(eager=True))
        rows = quota_manifest_rows(kept, options.owner)
        with job_label(ctx.spark, f"import: write {table}"):
            version = write_manifest_frame(rows, table, mode)
        written = {r["cluster"]: (int(r["rows"]), int(r["quotas"])) for r in
                   rows.groupBy("cluster").agg(F.count(F.lit(1)).alias("rows"),
                                               F.sum(F.size("quotas")).alias("quotas"))
                   .collect()}
        summary: list[dict[str, Any]] = []
        for c in ctx.clusters:
            cluster = found[c.name]
            n_rows, n_quotas = written.get(c.name, (0, 0))
            total = sum(len(q) for q in cluster.quotas.values())
            summary.append({"cluster": c.name, "rows_written": n_rows,
                            "quotas_written": n_quotas,
                            "left_out_managed": total - n_quotas,
                            "error_name": cluster.problem[0] if cluster.problem else None,
                            "error_message": cluster.problem[1] if cluster.problem
                            else None})
        ctx.record.outcome_counts = {"rows_written": sum(s["rows_written"] for s in summary),
                                     "table_version": version}
        quotas.live = live
        quotas.imported = {"table": table, "table_version": version, "clusters": summary}


class QuotaCheck(Phase):
    """`check`: every live quota no quota manifest row lists, as a finding of rule
    `unmanaged_quota` (severity `info` unless `checks.severity` says otherwise; `off`: not
    judged). Nothing is sent to Kafka."""

    name = "quota check"
    kind = NAME
    reads = ("quotas.desired", "quotas.live")
    writes = ("quotas.violations",)

    def needed(self, ctx: RunContext, state: RunState) -> bool:
        return state.of(QuotaSlice).live is not None

    def run(self, ctx: RunContext, state: RunState) -> None:
        quotas = state.of(QuotaSlice)
        severity = ctx.conf.checks.severity.get(quota_names.UNMANAGED_QUOTA, names.INFO)
        if severity == names.OFF:
            return
        loose = unmanaged_quotas(require(quotas.live, "live"), require(quotas.desired,
                                                                       "desired"))
        now = utc_now()
        given = {
            "run_id": F.lit(ctx.run_id),
            "cluster": F.col("cluster"),
            "topic": F.lit(None),
            "rule": F.lit(quota_names.UNMANAGED_QUOTA),
            "severity": F.lit(severity),
            "detail": F.format_string("quota %s %s %s: named by no quota manifest row "
                                      "(import --quotas adopts it)", entity_text(),
                                      F.col("key"), F.col("value").cast("string")),
            "managed": F.lit(False),
            "owner": F.lit(None),
            "snapshot_at": F.lit(now),
            "recorded_at": F.lit(now),
        }
        quotas.violations = loose.select(*[given[f.name].cast(f.dataType).alias(f.name)
                                           for f in VIOLATIONS.fields]).localCheckpoint(
            eager=True)
        ctx.steps.done("quota check")
