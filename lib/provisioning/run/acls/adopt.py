"""`import --acls` (see engine.py): the live ACL bindings of the selected clusters written as
ACL manifest rows; Kafka is only read."""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

from provisioning.conf.acls import AclsConf
from provisioning.delta.manifests import write_manifest_frame
from provisioning.delta.tables import TableRef, table_exists
from provisioning.run.acls.phases import NAME, live_bindings, validated_rows
from provisioning.run.acls.state import AclSlice
from provisioning.run.engine import Phase, RunContext
from provisioning.run.options import ImportOptions
from provisioning.run.state import RunState
from provisioning.session import job_label
from provisioning.transforms.acls.plan import acl_manifest_rows, unmanaged_bindings


class Import(Phase):
    """The live bindings of the selected clusters as ACL manifest rows
    (`transforms.acls.plan.acl_manifest_rows`), leaving out those the conf's ACL manifests
    already name, written in one commit. Per cluster: rows and bindings written, bindings
    left out, and why a cluster had none to give (no authorizer, no DESCRIBE)."""

    name = "acl import"
    kind = NAME
    reads = ("states",)
    writes = ("acls.live", "acls.imported")

    def run(self, ctx: RunContext, state: RunState) -> None:
        options = ctx.options
        if not isinstance(options, ImportOptions):
            raise TypeError("the import phase needs ImportOptions")
        acls = state.of(AclSlice)
        table, mode = options.table, options.mode
        with job_label(ctx.spark, "import: read live ACLs"):
            found, live = live_bindings(ctx)
        tables = [t for t in (ctx.conf.section(AclsConf).manifests or ())
                  if t != table or mode == "append"]
        tables = [t for t in dict.fromkeys(tables) if table_exists(ctx.spark, TableRef(t))]
        kept = unmanaged_bindings(live, validated_rows(ctx, tables)).localCheckpoint(
            eager=True)
        rows = acl_manifest_rows(kept, options.owner)
        with job_label(ctx.spark, f"import: write {table}"):
            version = write_manifest_frame(rows, table, mode)
        written = {r["cluster"]: (int(r["rows"]), int(r["bindings"])) for r in
                   rows.groupBy("cluster").agg(F.count(F.lit(1)).alias("rows"),
                                               F.sum(F.size("operations")).alias("bindings"))
                   .collect()}
        summary: list[dict[str, Any]] = []
        for c in ctx.clusters:
            cluster = found[c.name]
            n_rows, n_bindings = written.get(c.name, (0, 0))
            none = cluster.problem is not None and not cluster.bindings
            summary.append({"cluster": c.name, "rows_written": n_rows,
                            "bindings_written": n_bindings,
                            "left_out_managed": len(cluster.bindings) - n_bindings,
                            "error_name": cluster.problem[0] if none and cluster.problem
                            else None,
                            "error_message": cluster.problem[1] if none and cluster.problem
                            else None})
        ctx.record.outcome_counts = {"rows_written": sum(s["rows_written"] for s in summary),
                                     "table_version": version}
        acls.live = live
        acls.imported = {"table": table, "table_version": version, "clusters": summary}
