"""The site's run pages: the recent runs, and each run's changes grouped by kind (its
subjects' chains of phases, failures first); their markup is templates/runs.html and
run.html.

A row's kind is the kind that owns it (`views.kind.owner_of`), or the kind extending that
one whose actions it carries (`views.kind.extensions_of`), among the kinds the site was
given (`SiteData.kinds`): none is named here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from provisioning import names
from provisioning.views.kind import ViewKind, extensions_of, owner_of
from provisioning.views.report import counts_text, phase_chains
from provisioning.views.site.data import SiteData
from provisioning.views.site.html import Link, Mark, Table, page, run_file, when

# The outcomes a subject's chain is listed first for.
TROUBLE = (names.FAILED, names.UNKNOWN, names.REJECTED, names.BLOCKED)
ROLES = ("runs", "audit")
# Subjects a run page lists per kind (failures first); the rest are counted.
LISTED = 1000


def kind_of(kinds: Sequence[ViewKind], row: Mapping[str, Any]) -> ViewKind:
    """The kind (of `kinds`) an audit row shows under: its owner, or the extending kind of
    its action."""
    owner = owner_of(kinds, row)
    return next((k for k in extensions_of(kinds, owner.name)
                 if row.get("action") in k.actions), owner)


def duration(run: Mapping[str, Any]) -> str:
    if run.get("started_at") is None or run.get("finished_at") is None:
        return "-"
    seconds = (run["finished_at"] - run["started_at"]).total_seconds()
    return f"{seconds:.1f} s"


def runs_index(data: SiteData) -> str:
    """runs/index.html: every run of the window, newest first."""
    return page("runs/index.html", "runs.html", "Runs", data, ROLES,
                runs=len(data.runs), first=data.days[0] if data.days else "-",
                last=data.days[-1] if data.days else "-", table=Table(
                    ("run", "command", "status", "exit", "started", "duration", "clusters",
                     "outcomes"),
                    [[Link(run_file(r["run_id"]).removeprefix("runs/"), r["run_id"]),
                      r["command"], Mark(r["status"]), r["exit_code"], when(r["started_at"]),
                      duration(r), ", ".join(r["clusters"] or []), counts_text(_counts(r))]
                     for r in data.runs], numeric=(3,)))


def _counts(run: Mapping[str, Any]) -> dict[str, int]:
    counts = run.get("outcome_counts") or {}
    return dict(counts.items()) if isinstance(counts, Mapping) else dict(counts)


def _chain_rank(steps: Sequence[Mapping[str, Any]]) -> int:
    return 0 if steps[-1]["outcome"] in TROUBLE else 1


def run_groups(kinds: Sequence[ViewKind], rows: Sequence[Mapping[str, Any]]
               ) -> list[tuple[ViewKind, list[tuple[list[Mapping[str, Any]], str]]]]:
    """A run's audit rows as each kind's chains (in the order of `kinds`), failures first,
    then by subject."""
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_kind.setdefault(kind_of(kinds, r).name, []).append(r)
    groups = []
    for kind in kinds:
        found = by_kind.get(kind.name)
        if not found:
            continue
        ordered = sorted(found, key=row_order)
        chains = sorted(phase_chains(kinds, ordered),
                        key=lambda c: (_chain_rank(c[0]), kind.subject_text(c[0][-1])))
        groups.append((kind, chains))
    return groups


_PHASES = (names.PLAN, names.VALIDATE, names.APPLY, names.VERIFY)


def row_order(r: Mapping[str, Any]) -> tuple[Any, ...]:
    phase = _PHASES.index(r["phase"]) if r["phase"] in _PHASES else len(_PHASES)
    return (r.get("recorded_at") is None, r.get("recorded_at"), phase, r["phase"])


def _kind_part(kind: ViewKind, every: Sequence[tuple[list[Mapping[str, Any]], str]]
               ) -> dict[str, Any]:
    """A kind's part of a run page: its changed subjects (failures first), and how many are
    unchanged and how many not listed."""
    chains = [c for c in every if any(s["action"] != names.NOOP for s in c[0])]
    return {"name": kind.name, "title": kind.title or kind.name, "changed": len(chains),
            "failing": sum(1 for steps, _ in chains if _chain_rank(steps) == 0),
            "unchanged": len(every) - len(chains), "more": max(len(chains) - LISTED, 0),
            "table": Table(("subject", "action", "outcome", "phases"), [
                [kind.subject_text(steps[-1]), steps[-1]["action"],
                 Mark(steps[-1]["outcome"]), chain]
                for steps, chain in chains[:LISTED]], css="changes")}


def run_page(data: SiteData, run: Mapping[str, Any],
             rows: Sequence[Mapping[str, Any]]) -> str:
    """One run: its row, then its changes grouped by kind."""
    return page(run_file(run["run_id"]), "run.html", f"Run {run['run_id']}", data,
                ROLES, run_id=run["run_id"], message=run.get("message"), table=Table(
                    ("command", "status", "exit", "started", "finished", "duration",
                     "clusters", "outcomes"),
                    [[run["command"], Mark(run["status"]), run["exit_code"],
                      when(run["started_at"]), when(run["finished_at"]), duration(run),
                      ", ".join(run["clusters"] or []), counts_text(_counts(run))]]),
                kinds=[_kind_part(kind, every) for kind, every in run_groups(data.kinds, rows)])


def run_pages(data: SiteData) -> dict[str, str]:
    """Every run's page, by path."""
    of_run: dict[str, list[Mapping[str, Any]]] = {}
    for r in data.audit:
        of_run.setdefault(r["run_id"], []).append(r)
    return {run_file(r["run_id"]): run_page(data, r, of_run.get(r["run_id"], []))
            for r in data.runs}
