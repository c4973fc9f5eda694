"""An entity kind's part of the views package, written once (see `transforms.entity`): its lines
in the output of `plan` and `apply` (text, Markdown, JSON), its section of a saved plan, its
rows in `report --run-id`, and the report's views of the live entities a run leaves alone
(`--unmanaged-<name>`, and any other of the kind's: `LeftAloneView`).

A kind (`EntityView`) names its model and says what is its own: how one of its entities
reads (`label`, `change_text`, `sign`), its words for why a cluster's entities could not
be read or changed, for the manifest rows that name none of them and for its removals, the
attributes its saved changes hold besides the plan's, and its loose counts' lines.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf import Conf
from provisioning.conf.entity import EntityConf
from provisioning.delta.manifests import read_validated
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.errors import UsageError
from provisioning.results import EntitySummary, RunResult
from provisioning.transforms.entity import EntityModel
from provisioning.transforms.scope import of_clusters
from provisioning.views.kind import Need, PlanSection, ViewKind
from provisioning.views.plan_markdown import cell, code
from provisioning.views.report import latest_snapshot, rows_of

# The fields of a saved change besides the kind's key and its own attributes.
_CHANGE_HEAD = ("action", "state")
_CHANGE_TAIL = ("owner", "force", "violations", "row_errors", "note", "source_table",
                "source_version")


class EntitySection(PlanSection):
    """An entity kind's section of a saved plan: its plan rows but the clean NOOPs."""

    def __init__(self, view: EntityView) -> None:
        model, nouns = view.model, view.model.nouns
        self.view, self.nouns, self.model = view, nouns, model
        self.key = f"{nouns.prefix}_changes"
        self.diff_prefix = f"{nouns.prefix}_"
        self.fields = (*model.key, *_CHANGE_HEAD, *view.saved_attributes, *_CHANGE_TAIL)

    def collect(self, plan: DataFrame) -> list[dict[str, Any]]:
        nothing_to_do = ((F.col("action") == names.NOOP)
                         & (F.coalesce(F.size("row_errors"), F.lit(0)) <= 0)
                         & (F.coalesce(F.size("policy_violations"), F.lit(0)) <= 0))
        rows = (plan.where(~F.coalesce(nothing_to_do, F.lit(False)))
                .withColumnRenamed("policy_violations", "violations")
                .select(*self.fields).collect())
        return [self.entry(r.asDict(recursive=True)) for r in rows]

    def entry(self, row: Mapping[str, Any]) -> dict[str, Any]:
        entry = {k: row.get(k) for k in self.fields}
        entry["violations"] = [{"policy": v["policy"], "message": v["message"]}
                               for v in row.get("violations") or []]
        entry["row_errors"] = list(row.get("row_errors") or [])
        return entry

    def identity(self, entry: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(str(entry.get(k) or "") for k in self.model.key)

    def needs(self, entry: Mapping[str, Any]) -> list[Need]:
        # Additions are made by every apply (unless the kind flags them too); removals only
        # with the kind's flag.
        action = entry.get("action")
        if entry.get("violations") or entry.get("row_errors") \
                or action not in self.model.changes:
            return []
        flags = ((names.allow_option(self.nouns.removals),) if action in self.model.flagged
                 else ())
        return [Need(self.nouns.name, str(action), flags)]

    def label(self, entry: Mapping[str, Any]) -> str:
        return self.view.label(entry)

    def changed_json(self, label: str, entry: Mapping[str, Any],
                     differences: Sequence[str]) -> dict[str, Any]:
        return {self.nouns.one: label, "differences": list(differences)}

    def summary(self, added: int, removed: int, changed: int) -> str | None:
        if not (added or removed or changed):
            return None
        return f"{self.nouns.title}: {added} added, {removed} removed, {changed} changed"


@dataclass(frozen=True)
class LeftAloneView:
    """A report view of the live entities of each cluster's latest snapshot that a run
    leaves alone: `which` ones (its option is `--<which>-<name>`, its payload's key
    `<which>_<name>`), `what` they are (the view's heading), how they are found (`find`:
    the spark session, the conf, the snapshot's live rows -> the rows to list) and what to
    do about them (`then`)."""

    which: str
    what: str
    find: Callable[[SparkSession, Conf, DataFrame], DataFrame]
    then: str


class EntityView(ViewKind):
    """An entity kind's part of the views package (see the module docstring)."""

    model: ClassVar[EntityModel]
    conf_class: ClassVar[type[EntityConf]]
    # Why a cluster's entities could not be read or changed ("<phrase> (ERROR): message"),
    # the manifest rows that name none of the live ones, and its removals (counted).
    problems_phrase: ClassVar[str]
    unlisted_phrase: ClassVar[str]
    removals_phrase: ClassVar[str]
    # The plan columns a saved change holds besides the key, action and state.
    saved_attributes: ClassVar[tuple[str, ...]] = ()
    # The kind's other counts of live entities it leaves alone (`EntitySummary.left_alone`), and
    # how their lines end.
    left_alone_lines: ClassVar[tuple[tuple[str, str], ...]] = ()
    # The report views of the kind besides `--unmanaged-<name>`.
    left_alone_views: ClassVar[tuple[LeftAloneView, ...]] = ()

    def __init__(self) -> None:
        nouns = self.model.nouns
        self.name, self.title = nouns.name, nouns.title
        self.section = EntitySection(self)
        self.report_columns = (self.model.column, "note")

    # -- what the kind declares ------------------------------------------------------------

    @abstractmethod
    def label(self, entry: Mapping[str, Any]) -> str:
        """An entity (a saved change, an audit struct with its cluster) as a difference and
        `report --run-id` name it."""

    @abstractmethod
    def change_text(self, row: Mapping[str, Any]) -> str:
        """What a run does to the entity of a listed row (its audit struct's fields, its
        text and its row's columns)."""

    def sign(self, row: Mapping[str, Any]) -> str:
        """A listed row's sign in the text listing: `!` to look at, `-` a removal, `+` an
        addition of an entity not found live (before the change: its verified row's
        `found` is the value read back), `~` a change of one that was, `=` nothing."""
        model = self.model
        if row.get("outcome") in names.ATTENTION:
            return "!"
        if row.get("action") == model.removes:
            return "-"
        if row.get("action") == model.adds:
            return "+" if row.get("found") is None and row.get("phase") != names.VERIFY else "~"
        return "="

    def markdown_change(self, row: Mapping[str, Any]) -> str:
        """A listed row's change in the Markdown table (its text listing's, by default)."""
        return self.change_text(row)

    def listed_text(self, row: Mapping[str, Any]) -> str:
        """A live entity in a report view's listing."""
        return str(row[self.model.text_column])

    # -- written once --------------------------------------------------------------------

    @property
    def flag(self) -> str:
        return f"--allow-{self.model.nouns.removals}"

    def line(self, row: Mapping[str, Any]) -> str:
        """One entity of a run, as the plan shows it: its sign, cluster, change and outcome,
        then why when it did not simply happen, and its note."""
        line = f"{self.sign(row)} {row.get('cluster')} {self.change_text(row)}  " \
               f"{row.get('outcome')}"
        why = row.get("error_message") or (None if row.get("error_name") in (None, "NONE")
                                           else row.get("error_name"))
        if row.get("outcome") == names.VALIDATED and row.get("action") in self.model.flagged:
            why = why or f"made only by apply {self.flag}"
        if why:
            line += f": {why}"
        if row.get("note"):
            line += f" ({row['note']})"
        return line

    def lines(self, summary: EntitySummary, run_id: str) -> list[str]:
        """The kind's part of a run's output: entities per cluster and action, those that
        did not simply stay as they were, and what is left alone."""
        nouns = self.model.nouns
        lines = ["", nouns.title[:1].upper() + nouns.title[1:]]
        lines += [f"  {a['cluster']}: {a['action']} {a[nouns.many]}" for a in summary.actions] \
            or [f"  no {nouns.title[:-1]} in scope"]
        lines += [f"  {self.line(r)}" for r in summary.listed]
        if summary.not_listed:
            lines.append(f"  ... and {summary.not_listed} more {nouns.one}(s): report "
                         f"--run-id {run_id} lists every one")
        for cluster, why in sorted(summary.problems.items()):
            lines.append(f"  cluster {cluster}: {self.problems_phrase} ({why['error_name']}): "
                         f"{why['error_message']}")
        loose = {"unmanaged": (summary.unmanaged, (
            f"unmanaged {nouns.one}(s) ({self.unlisted_phrase}; left alone): report "
            f"--unmanaged-{nouns.name} lists them")),
            **{k: (summary.left_alone.get(k, {}), v) for k, v in self.left_alone_lines}}
        for counted, end in loose.values():
            lines += [f"  cluster {c}: {n} {end}" for c, n in sorted(counted.items()) if n]
        if summary.removals_not_allowed:
            lines.append(f"  {summary.removals_not_allowed} {self.removals_phrase} not made: "
                         f"run apply with {self.flag}")
        counts = ", ".join(f"{k}={v}" for k, v in sorted(summary.counts.items()))
        lines.append(f"  {nouns.noun} outcomes: {counts or 'nothing to do'}")
        return lines

    def markdown_lines(self, summary: EntitySummary, run_id: str) -> list[str]:
        """The kind's part of `plan --format markdown`: a table of the entities to look at."""
        nouns = self.model.nouns
        counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.counts.items()))
        lines = [f"#### {nouns.title[:1].upper() + nouns.title[1:]}", "",
                 f"**Outcomes:** {counts or 'nothing to do'}", ""]
        if summary.listed:
            lines += ["| cluster | change | verdict |", "|---|---|---|"]
            lines += [f"| {code(r.get('cluster') or '-')} | {cell(self.markdown_change(r))} | "
                      f"{cell(self.line(r).split('  ', 1)[1])} |" for r in summary.listed]
            lines.append("")
        if summary.not_listed:
            lines += [f"… and {summary.not_listed} more {nouns.one}(s): `report --run-id "
                      f"{run_id}` lists every one.", ""]
        if summary.removals_not_allowed:
            lines += [f"{summary.removals_not_allowed} {self.removals_phrase} are made only "
                      f"by `apply {self.flag}`.", ""]
        return lines

    def json(self, summary: Any) -> dict[str, Any]:
        return {self.name: None} if summary is None else summary.as_json()

    def text(self, result: RunResult, verbose: bool, kinds: Sequence[ViewKind]) -> list[str]:
        summary = result.summaries.get(self.name)
        return [] if summary is None else self.lines(summary, result.run_id)

    def markdown(self, result: RunResult, command: str, kinds: Sequence[ViewKind]
                 ) -> list[str]:
        summary = result.summaries.get(self.name)
        return [] if summary is None else self.markdown_lines(summary, result.run_id)

    def owns(self, row: Mapping[str, Any]) -> bool:
        return row.get(self.model.column) is not None

    def subject(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return (row.get("cluster"), tuple(sorted(
            (k, v) for k, v in (row.get(self.model.column) or {}).items()
            if k in self.model.identity)))

    def subject_text(self, row: Mapping[str, Any]) -> str:
        return self.label({**row[self.model.column], "cluster": row.get("cluster")})

    # -- the report's views of what a run leaves alone -------------------------------------

    @property
    def unmanaged_view(self) -> LeftAloneView:
        nouns = self.model.nouns
        return LeftAloneView("unmanaged", self.unlisted_phrase,
                         lambda spark, conf, live: self.model.unmanaged(
                             live, self.desired(spark, conf)),
                         f"adopt them with: import --{nouns.name} --table TABLE")

    def left_alone_view(self, which: str) -> LeftAloneView:
        """The kind's report view `--<which>-<name>`."""
        return next(v for v in (self.unmanaged_view, *self.left_alone_views) if v.which == which)

    def desired(self, spark: SparkSession, conf: Conf) -> DataFrame:
        """The rows of the conf's manifests of the kind, as they are now, validated."""
        tables = [t for t in conf.section(self.conf_class).manifests or ()
                  if table_exists(spark, TableRef(t))]
        return read_validated(spark, tables, self.model, tuple(conf.clusters))

    def left_alone_payload(self, spark: SparkSession, conf: Conf, clusters: Sequence[str],
                      view: LeftAloneView) -> dict[str, Any]:
        """`view`'s rows of each cluster's latest snapshot of the kind, per cluster."""
        model, nouns = self.model, self.model.nouns
        section = conf.section(self.conf_class)
        if section.manifests is None:
            raise UsageError(f"the conf manages no {nouns.title[:-1]} "
                             f"(tables.{nouns.manifests_key} is not set)")
        ref = TableRef(section.snapshots)
        if not table_exists(spark, ref):
            raise UsageError(f"no {nouns.noun} snapshot taken yet: {section.snapshots} does "
                             "not exist (run plan or apply first)")
        snapshot = latest_snapshot(read_table(spark, ref).transform(
            of_clusters(clusters)))
        live = (snapshot.where(F.col(model.marker).isNotNull())
                .select(*[f.name for f in model.live.fields]))
        when = snapshot.select("cluster", "run_id", "snapshot_at").distinct()
        rows = rows_of(view.find(spark, conf, live).join(when, on="cluster", how="left")
                       .withColumn(model.text_column, model.text())
                       .orderBy(*model.listing_order))
        per_cluster: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            per_cluster[r["cluster"]].append(r)
        return {f"{view.which}_{nouns.name}": [{"cluster": c, nouns.many: per_cluster[c]}
                                              for c in sorted(per_cluster)]}

    def render_left_alone(self, payload: Mapping[str, Any], view: LeftAloneView) -> list[str]:
        """`left_alone_payload`'s payload of `view`, as lines."""
        nouns = self.model.nouns
        blocks = payload[f"{view.which}_{nouns.name}"]
        lines = [f"{view.which} {nouns.title} (each cluster's latest {nouns.noun} snapshot, "
                 f"{view.what})"]
        if not blocks:
            return [*lines, "  none"]
        for block in blocks:
            first = block[nouns.many][0]
            lines.append(f"cluster {block['cluster']}: {len(block[nouns.many])} "
                         f"{nouns.one}(s) (snapshot {first['run_id']} at "
                         f"{first['snapshot_at']})")
            lines += [f"  ? {self.listed_text(r)}" for r in block[nouns.many]]
        lines.append(view.then)
        return lines
