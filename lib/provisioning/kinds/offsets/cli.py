"""The offset resets' part of the command line, on the entity base (`cli.entity`):
`apply --allow-offset-resets`, offset resets files (`load_manifest --kind offset-resets`),
and `reset-offsets`, one request asked on the command line:

    reset-offsets --conf C --cluster C --group G --topic T[:P,...]
        (--to-earliest | --to-latest | --to-datetime T | --by-duration D | --shift-by N
         | --to-offset N | --delete) [--execute] [--requested-by WHO] [--reason WHY]

Without `--execute` it shows the request's plan (read from the broker now, judged by the
kind's policies) and changes nothing. With it, the request is appended to the first
requests table (`tables.offset_resets`) and applied by the run `apply
--allow-offset-resets` makes, narrowed to it: planned, validated, sent, read back and
audited as every request is.
"""

from __future__ import annotations

import getpass
from collections.abc import Mapping, Sequence
from typing import Any

import click

from provisioning import names
from provisioning.cli.common import (
    Command,
    Outcome,
    conf_option,
    execute,
    json_option,
    remote_option,
    verbose_option,
)
from provisioning.cli.entity import EntityCli
from provisioning.conf import select_clusters
from provisioning.errors import UsageError
from provisioning.kinds import Kind
from provisioning.kinds.offsets.conf import SECTION, OffsetsConf
from provisioning.kinds.offsets.names import NOUNS
from provisioning.kinds.offsets.schema import OFFSET_RESET_MANIFEST
from provisioning.kinds.offsets.view import VIEW

# option -> (`to`, whether it takes a value).
TO_OPTIONS = {"to_earliest": ("earliest", False), "to_latest": ("latest", False),
              "to_datetime": ("timestamp", True), "by_duration": ("duration", True),
              "shift_by": ("shift", True), "to_offset": ("offset", True),
              "delete": ("delete", False)}


def topic_partitions(spec: str) -> tuple[str, list[int] | None]:
    """"orders" -> every partition; "orders:0,2" -> partitions 0 and 2."""
    topic, _, listed = spec.partition(":")
    if not listed:
        return topic, None
    try:
        return topic, [int(p) for p in listed.split(",")]
    except ValueError:
        raise click.BadParameter(f"{spec!r}: partitions are integers, as in "
                                 f"{topic}:0,1", param_hint="--topic") from None


def asked(values: Mapping[str, Any]) -> tuple[str, str | None]:
    """The request's `to` and value, from the one --to-* option given."""
    given = [(o, v) for o, v in values.items() if o in TO_OPTIONS and v not in (None, False)]
    if len(given) != 1:
        raise click.UsageError("give exactly one of " + ", ".join(
            "--" + o.replace("_", "-") for o in TO_OPTIONS) + f" (got {len(given)})")
    option, value = given[0]
    to, takes = TO_OPTIONS[option]
    return to, str(value) if takes else None


def dry_run(cmd: Command, request: Mapping[str, Any]) -> Outcome:
    """The request's plan, as a run would make it (validated, read from the broker now,
    judged by the policies); nothing is sent or written but the runs row."""
    from provisioning.kinds.groups.conf import GroupsConf
    from provisioning.kinds.offsets.model import MODEL
    from provisioning.kinds.offsets.plan import plan_resets, with_values
    from provisioning.kinds.offsets.policies import OffsetPolicyContext
    from provisioning.kinds.offsets.requests import offset_states
    from provisioning.results import utc_now

    conf, spark = cmd.conf, cmd.session()
    section = conf.section(OffsetsConf)
    row = {**request, "source_table": "(reset-offsets)", "source_version": 0,
           "row_errors": []}
    read = spark.createDataFrame([tuple(row.get(f.name) for f in MODEL.desired.fields)],
                                 MODEL.desired)
    desired = read.transform(MODEL.validation(tuple(conf.clusters))).transform(
        with_values(utc_now())).localCheckpoint(eager=True)
    valid = [r.asDict() for r in desired.collect() if not r["row_errors"]]
    selected = select_clusters(conf, (request["cluster"],)) if valid else []
    found = offset_states(selected, cmd.credentials(), conf.kafka, valid)
    live = spark.createDataFrame([r for got, _ in found.values() for r in got], MODEL.live)
    none = spark.createDataFrame([], "request_id string, run_id string")
    context = OffsetPolicyContext(max_changes_per_cluster=section.max_changes_per_cluster,
                                  protected_groups=conf.section(GroupsConf).protected_groups)
    judged = MODEL.judged(plan_resets(desired, live, none), section.policies, context)
    rows = [r.asDict(recursive=True) for r in judged.withColumn(
        "outcome", MODEL.plan_outcome()).orderBy("partition").collect()]
    shown = []
    for r in rows:
        why = [*(r["row_errors"] or []), *(v["message"] for v in r["policy_violations"] or [])]
        shown.append({**r, "before": r["committed"], "policy_violations": None,
                      "error_message": "; ".join(why) or None,
                      "error_name": None if not why else names.POLICY_VIOLATION
                      if r["policy_violations"] else names.INVALID_MANIFEST_ROW})
    problems = {c: p for c, (_, p) in found.items() if p is not None}
    code = 1 if problems or any(r["outcome"] != names.PLANNED for r in rows) else 0

    def human() -> list[str]:
        lines = [f"reset-offsets {request['request_id']}: the plan (nothing is sent; "
                 "--execute applies it)"]
        lines += [f"  {VIEW.line(r)}" for r in shown]
        lines += [f"  cluster {c}: offsets not read ({e}): {m}"
                  for c, (e, m) in sorted(problems.items())]
        return lines

    return Outcome(code, {"executed": False, "request": dict(request),
                          "plan": [{k: v for k, v in r.items() if k not in (
                              "source_table", "source_version", "policy_violations")}
                                   for r in shown],
                          "problems": {c: {"error_name": e, "error_message": m}
                                       for c, (e, m) in problems.items()}}, human)


def executed(cmd: Command, kinds: Sequence[Kind], request: Mapping[str, Any]) -> Outcome:
    """The request appended to the first requests table, then applied by a run narrowed to
    it (the offset resets kind alone, `--allow-offset-resets`)."""
    from provisioning.delta.manifests import write_manifest
    from provisioning.run.commands import run_plan
    from provisioning.run.options import ApplyOptions, Scope
    from provisioning.views.plan_text import render_run, run_json

    conf, spark = cmd.conf, cmd.session()
    tables = conf.section(OffsetsConf).manifests
    if not tables:
        raise UsageError(f"reset-offsets --execute appends the request to the first table "
                         f"of tables.{NOUNS.manifests_key}, which the conf does not set")
    write_manifest(spark, [tuple(request.get(f.name) for f in OFFSET_RESET_MANIFEST.fields)],
                   tables[0], "append", OFFSET_RESET_MANIFEST)
    own = [k for k in kinds if k.name == NOUNS.name]
    selected = select_clusters(conf, (request["cluster"],))
    options = ApplyOptions(scope=Scope(tuple(c.name for c in selected), None),
                           allowed=frozenset({NOUNS.removals}),
                           subjects={NOUNS.name: (request["request_id"],)})
    record = cmd.record
    assert record is not None
    result = run_plan(spark, tuple(k.run for k in own), conf, selected, cmd.credentials(),
                      record, options, cmd.stop, cmd.pending)
    record.outcome_counts = result.counts
    views = tuple(k.view for k in own)
    return Outcome(result.exit_code, {**run_json(views, result), "executed": True,
                                      "request": dict(request), "table": tables[0]},
                   lambda: render_run(views, result, "apply", False, None))


def reset_offsets_command(kinds: Sequence[Kind]) -> click.Command:
    """`reset-offsets`, run over the registered `kinds` (the conf holds every section)."""

    @click.command("reset-offsets")
    @remote_option
    @conf_option
    @click.option("--cluster", required=True, help="The cluster (a name under `clusters`).")
    @click.option("--group", required=True, help="The consumer group id.")
    @click.option("--topic", "topic_spec", required=True, metavar="TOPIC[:P,...]",
                  help="The topic, and the partitions to reset (default: every one).")
    @click.option("--to-earliest", is_flag=True, help="To the log's start.")
    @click.option("--to-latest", is_flag=True, help="To the log's end.")
    @click.option("--to-datetime", metavar="TIME",
                  help="To the first offset at or after an ISO-8601 time with its zone.")
    @click.option("--by-duration", metavar="DURATION",
                  help="To the first offset at or after now less an ISO-8601 duration "
                       "(PT1H).")
    @click.option("--shift-by", metavar="N", help="By N from the committed offset (signed).")
    @click.option("--to-offset", metavar="N", help="To offset N.")
    @click.option("--delete", is_flag=True,
                  help="Delete the group's committed offsets on the topic (OffsetDelete).")
    @click.option("--execute", "execute_", is_flag=True,
                  help="Append the request to the requests table and apply it (without: "
                       "show its plan, change nothing).")
    @click.option("--requested-by", default=None, help="Who asks (default: the OS user).")
    @click.option("--reason", default=None, help="Why.")
    @json_option
    @verbose_option
    def reset_offsets(conf_path: str, cluster: str, group: str, topic_spec: str,
                      execute_: bool, requested_by: str | None, reason: str | None,
                      as_json: bool, verbose: bool, **values: Any) -> None:
        """Reset a consumer group's committed offsets on a topic, as one request: its plan
        without --execute; with it, applied and audited as the requests of
        tables.offset_resets are."""
        to, value = asked(values)
        topic, partitions = topic_partitions(topic_spec)
        who = requested_by or getpass.getuser()
        arguments = {"cluster": cluster, "group": group, "topic": topic_spec, "to": to,
                     "value": value, "execute": execute_}

        def work(cmd: Command) -> Outcome:
            assert cmd.record is not None
            request = {"request_id": f"reset-{cmd.record.run_id}", "cluster": cluster,
                       "group": group, "topic": topic, "partitions": partitions, "to": to,
                       "value": value, "requested_by": who, "reason": reason}
            return executed(cmd, kinds, request) if execute_ else dry_run(cmd, request)

        execute("reset-offsets", kinds, conf_path, as_json, verbose, arguments, work)

    return reset_offsets


class OffsetsCli(EntityCli):
    view, section, removal = VIEW, SECTION, "reset"
    manifest_kind = SECTION.file_kind
    lists_unmanaged = False
    flag_help = ("Commit the offsets the offset reset requests (tables.offset_resets) ask "
                 "for, and delete those they ask to delete; off by default: planned, "
                 "validated and counted only.")

    def row_label(self, item: Mapping[str, Any]) -> str:
        return f"request {item.get('request_id')}"

    def imports(self) -> bool:
        return False

    def commands(self, kinds: Sequence[Kind]) -> tuple[click.Command, ...]:
        return (reset_offsets_command(kinds),)


CLI = OffsetsCli()
