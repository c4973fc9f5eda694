"""`import`: write the live topics of the selected clusters as a manifest table."""

from __future__ import annotations

import click

from provisioning.cli.common import Command, Outcome, common_options, execute
from provisioning.conf import select_clusters
from provisioning.run.options import IMPORT_MODES, ImportOptions, Scope


@click.command("import")
@common_options
@click.option("--table", required=True,
              help="The manifest table to write (a path or a catalog name).")
@click.option("--owner", default=None, help="The owner of every imported row (default: none).")
@click.option("--mode", type=click.Choice(IMPORT_MODES), default="error", show_default=True,
              help="error: refuse a table that exists; append: add the rows; overwrite: "
                   "replace the table's rows.")
@click.option("--with-assignment", is_flag=True,
              help="Also write each topic's replica assignment (default: null, any "
                   "assignment accepted).")
@click.option("--include-protected", is_flag=True,
              help="Also import internal topics and the ones the delete policies protect.")
@click.option("--acls", is_flag=True,
              help="Import the live ACL bindings (as ACL manifest rows) instead of topics.")
def import_(conf_path: str, clusters: tuple[str, ...], topics_glob: str | None,
            as_json: bool, verbose: bool, table: str, owner: str | None, mode: str,
            with_assignment: bool, include_protected: bool, acls: bool) -> None:
    """Write the live topics (or, with --acls, ACL bindings) as manifest rows (one commit);
    changes nothing on Kafka."""
    if acls:
        for flag, on in (("--topics", topics_glob), ("--with-assignment", with_assignment),
                         ("--include-protected", include_protected)):
            if on:
                raise click.UsageError(f"{flag} is for topics; it does not go with --acls")
        _import_acls(conf_path, clusters, as_json, verbose, table, owner, mode)
        return
    options = ImportOptions(table=table, scope=Scope(clusters, topics_glob), mode=mode,
                            owner=owner, with_assignment=with_assignment,
                            include_protected=include_protected)

    def work(cmd: Command) -> Outcome:
        from provisioning.run.commands import import_topics

        record = cmd.record
        assert record is not None
        selected = select_clusters(cmd.conf, clusters)
        credentials = cmd.credentials()
        summaries = import_topics(cmd.session(), cmd.conf, selected, credentials, record,
                                  options, cmd.stop)
        version = record.outcome_counts.get("table_version")

        def human() -> list[str]:
            total = sum(s.rows_written for s in summaries)
            lines = [f"import {record.run_id}: {total} manifest row(s) written to {table} "
                     f"(version {version})"]
            for s in summaries:
                left_out = []
                if s.left_out_managed:
                    left_out.append(f"{s.left_out_managed} already named by a manifest")
                if s.left_out_protected:
                    left_out.append(f"{s.left_out_protected} internal or protected "
                                    "(--include-protected imports them)")
                if s.left_out_undescribable:
                    left_out.append(f"{s.left_out_undescribable} not describable by this "
                                    "principal")
                lines.append(f"  cluster {s.cluster}: {s.rows_written} row(s)"
                             + (f"; left out {', '.join(left_out)}" if left_out else ""))
            lines.append("next: review the table, then add it to tables.manifests and run "
                         "plan: every imported topic plans as NOOP")
            return lines

        return Outcome(0, {"table": table, "table_version": version,
                           "clusters": [s.as_dict() for s in summaries]}, human)

    execute("import", conf_path, as_json, verbose,
            {"clusters": list(clusters), "topics": topics_glob, "table": table,
             "owner": owner, "mode": mode, "with_assignment": with_assignment,
             "include_protected": include_protected}, work)


def _import_acls(conf_path: str, clusters: tuple[str, ...], as_json: bool, verbose: bool,
                 table: str, owner: str | None, mode: str) -> None:
    def work(cmd: Command) -> Outcome:
        from provisioning.run.commands import import_acls

        record = cmd.record
        assert record is not None
        selected = select_clusters(cmd.conf, clusters)
        payload = import_acls(cmd.session(), cmd.conf, selected, cmd.credentials(), record,
                              table, mode, owner)

        def human() -> list[str]:
            total = sum(c["rows_written"] for c in payload["clusters"])
            lines = [f"import {record.run_id}: {total} ACL manifest row(s) written to {table} "
                     f"(version {payload['table_version']})"]
            for c in payload["clusters"]:
                line = (f"  cluster {c['cluster']}: {c['rows_written']} row(s), "
                        f"{c['bindings_written']} binding(s)")
                if c["left_out_managed"]:
                    line += f"; left out {c['left_out_managed']} already named by a manifest"
                if c["error_name"]:
                    line += f"; none read: {c['error_message']}"
                lines.append(line)
            lines.append("next: review the table, then add it to tables.acl_manifests and run "
                         "plan: every imported binding plans as NOOP")
            return lines

        return Outcome(0, payload, human)

    execute("import", conf_path, as_json, verbose,
            {"clusters": list(clusters), "table": table, "owner": owner, "mode": mode,
             "acls": True}, work)
