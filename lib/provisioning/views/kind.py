"""A kind's part of the views package: its lines in the output of `plan` and `apply` (text,
Markdown, JSON), its section of a saved plan, its rows in `report --run-id`.

The run's output (`views.plan_text`, `views.plan_markdown`), the saved plan
(`views.planfile`) and the report (`views.report`) loop over the kinds the command line
hands them (each kind's part of this package, in registry order) through this interface and
name none of them. A kind that extends
another kind's rows styles its rows inside that kind's
listing: its actions (`actions`), status texts, detail lines, notes and the fields its rows
add to the extended kind's saved changes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import DataFrame

from provisioning.conf import Conf
from provisioning.results import RunResult

if TYPE_CHECKING:
    from provisioning.views.site.data import SiteData


# The site's reader of a kind's own table: (role, table) -> the table at its latest version,
# or None when it does not exist (`ViewKind.site_data`).
SiteRead = Callable[[str, str], "DataFrame | None"]


@dataclass(frozen=True)
class ActionStyle:
    """How a plan action shows: its sign in the text listing, its words in the counts line,
    its Markdown section heading and summary column."""

    sign: str
    word: str
    heading: str
    column: str


@dataclass(frozen=True)
class Need:
    """What one saved change needs of an apply: the kind that makes it, its action, and the
    `apply` options that must all be given for it to be made (none: every apply makes it).
    The saved plan's `needs` section counts them (`views.planfile`), which is all a
    scheduler reads to tell whether an apply would do anything."""

    kind: str
    action: str
    flags: tuple[str, ...] = ()


class PlanSection(ABC):
    """A kind's section of a saved plan (`views.planfile`): what it holds of the kind's plan
    rows, how two entries are told apart, and how a difference reads."""

    # The document's key of the section, and whether it stays when empty (a section
    # left out when empty keeps the digest of plans that have none). Plain attributes: a
    # section on a shared base (`views.entity`) is made from its kind's names.
    key: str
    required: ClassVar[bool] = False
    # The fields of one entry, in the order a difference is reported; those an entry may
    # lack (read as null, left out when null).
    fields: tuple[str, ...]
    optional: ClassVar[tuple[str, ...]] = ()
    # The prefix of the section's keys in the JSON of a difference (`added`, `removed`,
    # `changed`).
    diff_prefix: str = ""

    @abstractmethod
    def collect(self, plan: DataFrame) -> list[dict[str, Any]]:
        """The entries of the kind's judged plan rows (collected on the driver)."""

    @abstractmethod
    def entry(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """One entry as plain JSON values, from a row or a saved entry."""

    @abstractmethod
    def identity(self, entry: Mapping[str, Any]) -> tuple[str, ...]:
        """What names the entry's subject: entries of one identity are compared."""

    @abstractmethod
    def label(self, entry: Mapping[str, Any]) -> str:
        """The subject, as a line of a difference names it."""

    @abstractmethod
    def needs(self, entry: Mapping[str, Any]) -> list[Need]:
        """What an apply must be allowed to make the entry's changes (none for an entry it
        never changes anything for: a NOOP, a refused or invalid row, drift)."""

    def added_json(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """An entry in one plan and not the other, as the difference's JSON shows it."""
        return dict(entry)

    def changed_json(self, label: str, entry: Mapping[str, Any],
                     differences: Sequence[str]) -> dict[str, Any]:
        return {"label": label, "differences": list(differences)}

    def summary(self, added: int, removed: int, changed: int) -> str | None:
        """The count line of a difference (None: no line when nothing differs)."""
        if not (added or removed or changed):
            return None
        return f"{self.key}: {added} added, {removed} removed, {changed} changed"


class ViewKind(ABC):
    """One kind's part of the views package."""

    # Plain attributes: a kind on a shared base (`views.entity`) takes them from its model.
    name: str
    # How pages and headings name the kind's subjects, in the plural.
    title: str = ""
    # The kind whose rows this one extends (its rows show in that kind's listing).
    extends: ClassVar[str | None] = None
    # The plan actions of its rows, and how each shows; an extending kind's outcomes and
    # their marks in the extended kind's Markdown.
    actions: ClassVar[Mapping[str, ActionStyle]] = {}
    marks: ClassVar[Mapping[str, str]] = {}
    # Its saved-plan section (None: the kind has none; an extending kind adds fields to
    # the extended kind's entries instead).
    section: PlanSection | None = None
    # An extending kind: the fields its rows add to the extended kind's saved entries.
    entry_fields: ClassVar[tuple[str, ...]] = ()
    # The AUDIT columns of its rows the report shows, beside the shared ones.
    report_columns: tuple[str, ...] = ()

    def json(self, summary: Any) -> dict[str, Any]:
        """What the kind adds to the JSON document of `plan` and `apply` (its summary may
        be None: the run did not manage it)."""
        return {} if summary is None else summary.as_json()

    def plan_section(self, kinds: Sequence[ViewKind]) -> PlanSection | None:
        """The kind's saved-plan section (`section`; a kind that others extend makes its
        own with theirs, of `kinds`)."""
        return self.section

    def text(self, result: RunResult, verbose: bool, kinds: Sequence[ViewKind]) -> list[str]:
        """The kind's lines in the text output of `plan` and `apply` (`kinds`: every kind's
        part of this package, for a kind that others extend)."""
        return []

    def markdown(self, result: RunResult, command: str, kinds: Sequence[ViewKind]
                 ) -> list[str]:
        """The kind's part of `plan --format markdown` (`kinds` as for `text`)."""
        return []

    def status(self, row: Mapping[str, Any]) -> str | None:
        """An extending kind: the status text of one of its listed rows (None: the
        extended kind's own)."""
        return None

    def details(self, row: Mapping[str, Any]) -> list[str]:
        """An extending kind: detail lines of a listed row of the extended kind."""
        return []

    def notes(self, result: RunResult) -> list[str]:
        """An extending kind: notes under the extended kind's text listing."""
        return []

    def markdown_notes(self, result: RunResult) -> list[str]:
        """An extending kind: notes under the extended kind's Markdown."""
        return []

    def entry(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """An extending kind: its fields of a saved entry of the extended kind (left out
        when null)."""
        return {}

    def needs(self, entry: Mapping[str, Any]) -> list[Need]:
        """An extending kind: what its fields of a saved entry of the extended kind need of
        an apply (`PlanSection.needs`)."""
        return []

    # The kind's entries of the site's navigation bar (path under the site's root, label),
    # after the shared ones.
    site_nav: ClassVar[tuple[tuple[str, str], ...]] = ()

    def site_data(self, read: SiteRead, conf: Conf, clusters: Sequence[str],
                  checks: DataFrame) -> Any:
        """What the kind's own pages of the site show beyond the shared tables (None:
        nothing), kept in `SiteData.kinds_data` under its name: its tables read with `read`
        (role, table name: the table at its latest version, None when it does not exist;
        the site lists it among the tables it read), aggregated by Spark over `checks` (the
        `check` runs of `clusters` in the site's window: run_id, cluster, checked_at), only
        what the pages show collected."""
        return None

    def site_pages(self, data: SiteData) -> dict[str, str]:
        """The kind's own files of the static site (`report --site`), by path under its
        root (`data`: what the site read)."""
        return {}

    def owns(self, row: Mapping[str, Any]) -> bool:
        """Whether an AUDIT row (as a dict) is about this kind's subject (`report
        --run-id`); the kind with no claim of its own (None) takes the rest."""
        return False

    def subject(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        """What an AUDIT row of this kind is about: its rows of one run and subject make
        one chain of phases in `report --run-id`."""
        return (row.get("cluster"),)

    def subject_text(self, row: Mapping[str, Any]) -> str:
        """The subject of an AUDIT row, as `report --run-id` names it."""
        return str(row.get("cluster"))


def extensions_of(kinds: Sequence[ViewKind], name: str) -> tuple[ViewKind, ...]:
    """The parts (of `kinds`) of the kinds that extend the kind `name`."""
    return tuple(k for k in kinds if k.extends == name)


def owner_of(kinds: Sequence[ViewKind], row: Mapping[str, Any]) -> ViewKind:
    """The kind (of `kinds`) an AUDIT row is about: the first whose `owns` claims it, else
    the kind with no claim of its own (the first kind that extends none)."""
    return next((k for k in kinds if k.owns(row)),
                next(k for k in kinds if k.extends is None))
