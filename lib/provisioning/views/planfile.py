"""Saved plans: the canonical document `plan --out` writes and `apply --plan` checks.

A saved plan holds what an operator approves: the conf digest, the run's scope (clusters,
topic glob) and, per kind, its section (`ViewKind.plan_section`, `views.kind.PlanSection`):
the topics' changes (action, request, drift, violations, row errors, the live topic id
the plan saw, the manifest table and version that asked for it; clean NOOPs left out),
each other kind's changes. A section with nothing in it is left out of the
document unless the kind keeps it always, so a plan's digest does not change when a kind
with nothing to say is added.

Beside the sections, `needs` says what an apply of the plan would make: per kind, action
and the `apply --allow-*` options it takes, how many changes (each section's
`PlanSection.needs`). It is derived from the sections and always present, so a scheduler
(the Airflow DAG) decides whether an apply has anything to do from it alone, and a kind
added to the registry is in it without the scheduler knowing the kind.

`apply --plan FILE` builds a fresh plan and proceeds only when every kind's section of it
equals the saved one; a saved section no fresh plan of this run made (its kind was not
planned: say `--topics` narrowed the run) is a difference too (`stale_check`). Run ids,
timestamps and outcome counts live in the file's `meta` block and never take part in the
comparison.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from provisioning.errors import UsageError
from provisioning.views.kind import Need, PlanSection, ViewKind

FORMAT = "topic-provisioning-plan/1"


def canonical_json(value: Any) -> str:
    """The one spelling of a JSON value that digests and comparisons use."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Sections(dict[str, PlanSection]):
    """Kind name -> its saved-plan section, in registry order; `order`: every kind's name in
    registry order (a kind with no section of its own, one that extends another's rows, may
    still have changes in a plan: `needs_of` lists them in that order)."""

    def __init__(self, found: Mapping[str, PlanSection], order: Sequence[str]) -> None:
        super().__init__(found)
        self.order = tuple(order)


def sections(kinds: Sequence[ViewKind]) -> Sections:
    """The saved-plan section of each of `kinds` that has one, by kind name, in order."""
    return Sections({k.name: s for k in kinds if (s := k.plan_section(kinds)) is not None},
                    [k.name for k in kinds])


# The document's key of what an apply of the plan needs (`needs_of`).
NEEDS = "needs"


def needs_of(known: Sections, entries: Mapping[str, Sequence[Mapping[str, Any]]]
             ) -> list[dict[str, Any]]:
    """What an apply of a plan with these sections' entries would make: one item per kind,
    action and `apply` options needed, with how many changes, in registry order."""
    counted: dict[Need, int] = {}
    for name, section in known.items():
        for entry in entries.get(name, ()):
            for need in section.needs(entry):
                counted[need] = counted.get(need, 0) + 1
    order = {name: i for i, name in enumerate(known.order)}
    return [{"kind": n.kind, "action": n.action, "flags": list(n.flags), "changes": c}
            for n, c in sorted(counted.items(), key=lambda i: (
                order.get(i[0].kind, len(order)), i[0].action, i[0].flags))]


class StalePlan(UsageError):
    """The saved plan no longer matches what a fresh plan says; nothing was applied."""

    def __init__(self, path: str, diff: PlanDiff) -> None:
        self.path = path
        self.diff = diff
        lines = "\n".join(f"  {line}" for line in diff.lines())
        super().__init__(
            f"the saved plan {path} is stale: a fresh plan differs from it, so nothing was "
            f"validated or applied. Review a new plan (plan --out) and apply that.\n{lines}")

    @property
    def details(self) -> dict[str, Any]:
        """What `--json` adds to the error document."""
        return {"reason": "stale_plan", "plan_file": self.path, "plan_diff": self.diff.as_dict()}


@dataclass(frozen=True)
class PlanDocument:
    """The canonical content of a plan: what is compared, digested and approved."""

    conf_digest: str
    clusters: tuple[str, ...]
    topics: str | None
    # kind name -> its section's entries, canonical and sorted.
    entries: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    # The sections the entries are of (what reads them; no part of the content).
    sections: Sections = field(default_factory=lambda: Sections({}, ()), compare=False,
                               repr=False)

    @classmethod
    def build(cls, found: Sections, conf_digest: str, clusters: Sequence[str],
              topics: str | None, entries: Mapping[str, Sequence[Mapping[str, Any]]]
              ) -> PlanDocument:
        unknown = sorted(set(entries) - set(found))
        if unknown:
            raise ValueError(f"no registered kind has a saved-plan section {unknown}")
        made = {}
        for name, section in found.items():
            canonical = [section.entry(e) for e in entries.get(name, ())]
            made[name] = tuple(sorted(canonical, key=_ordered(section)))
        return cls(conf_digest, tuple(sorted(clusters)), topics, made, found)

    def canonical(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"conf_digest": self.conf_digest,
                               "scope": {"clusters": list(self.clusters),
                                         "topics": self.topics}}
        for name, section in self.sections.items():
            kept = self.entries.get(name, ())
            if kept or section.required:
                doc[section.key] = [dict(e) for e in kept]
        doc[NEEDS] = needs_of(self.sections, self.entries)
        return doc

    @property
    def digest(self) -> str:
        return hashlib.sha256(canonical_json(self.canonical()).encode("utf-8")).hexdigest()

    def with_section(self, kind: str, entries: Sequence[Mapping[str, Any]]) -> PlanDocument:
        """This document with `kind`'s section replaced by `entries`."""
        return PlanDocument.build(self.sections, self.conf_digest, self.clusters,
                                  self.topics, {**self.entries, kind: entries})


def _ordered(section: PlanSection) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """A section's entries in the document's order: by identity, then canonically."""
    def key(entry: dict[str, Any]) -> tuple[Any, ...]:
        return (section.identity(entry), canonical_json(entry))
    return key


def collect_document(found: Sections, kind: str, plan: DataFrame, conf_digest: str,
                     clusters: Sequence[str], topics: str | None) -> PlanDocument:
    """The canonical document of a run's plan rows of `kind` (collected on the driver)."""
    return PlanDocument.build(found, conf_digest, clusters, topics,
                              {kind: found[kind].collect(plan)})


@dataclass(frozen=True)
class SavedPlan:
    path: str
    document: PlanDocument
    meta: Mapping[str, Any]


def save_plan(path: str | Path, document: PlanDocument, meta: Mapping[str, Any]) -> None:
    """Write the plan file: format, digest, canonical plan and the run's meta, atomically."""
    target = Path(path)
    payload = {"format": FORMAT, "digest": document.digest, "plan": document.canonical(),
               "meta": dict(meta)}
    text = json.dumps(payload, sort_keys=True, indent=2, ensure_ascii=False, default=str)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(target)
    except OSError as exc:
        raise UsageError(f"cannot write the plan file {path}: {exc.strerror or exc}") from None


def load_plan(path: str | Path, known: Sections) -> SavedPlan:
    """Read a plan file of the kinds whose sections are `known`; UsageError names what is
    wrong with it."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read the plan file {p}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"the plan file {p} is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        raise UsageError(f"the plan file {p} is not a saved plan of format {FORMAT} "
                         f"(format: {found!r})")
    try:
        plan = data["plan"]
        scope = plan["scope"]
        extra = sorted(k for k in plan if k not in ("conf_digest", "scope", NEEDS)
                       and k not in {s.key for s in known.values()})
        if extra:
            raise UsageError(f"the plan file {p} has sections no registered kind reads: "
                             f"{', '.join(extra)}")
        entries: dict[str, list[Any]] = {}
        for name, section in known.items():
            if section.key not in plan and section.required:
                raise KeyError(section.key)
            saved = plan.get(section.key) or []
            missing = [f"{section.key}[{i}].{k}" for i, c in enumerate(saved)
                       for k in section.fields if k not in c and k not in section.optional]
            if missing:
                raise UsageError(f"the plan file {p} lacks {', '.join(missing[:5])}")
            entries[name] = saved
        document = PlanDocument.build(known, plan["conf_digest"], scope["clusters"],
                                      scope["topics"], entries)
    except (KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"the plan file {p} is malformed: missing or bad {exc}") from None
    # `needs` is what the sections say an apply makes: one edited alone is an edit too.
    if document.digest != data.get("digest") \
            or plan.get(NEEDS) != needs_of(known, document.entries):
        raise UsageError(f"the plan file {p} was modified after it was saved (its digest "
                         "does not match its content); run plan --out again")
    return SavedPlan(str(p), document, data.get("meta") or {})


def _short(value: Any) -> str:
    if isinstance(value, str):
        return value
    return canonical_json(value)


def field_differences(section: PlanSection, saved: Mapping[str, Any],
                      fresh: Mapping[str, Any]) -> list[str]:
    """"field: saved -> fresh" for every field of the section's entries that differs."""
    return [f"{name}: {_short(saved.get(name))} -> {_short(fresh.get(name))}"
            for name in section.fields if saved.get(name) != fresh.get(name)]


@dataclass(frozen=True)
class SectionDiff:
    """How one kind's section differs: entries in one plan and not the other, and changed
    subjects (label, an entry, "field: a -> b" lines)."""

    kind: str
    added: tuple[dict[str, Any], ...] = ()
    removed: tuple[dict[str, Any], ...] = ()
    changed: tuple[tuple[str, dict[str, Any], tuple[str, ...]], ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


@dataclass(frozen=True)
class PlanDiff:
    """How a fresh plan differs from a saved one."""

    conf_digest: tuple[str, str] | None = None
    scope: tuple[dict[str, Any], dict[str, Any]] | None = None
    sections: tuple[SectionDiff, ...] = ()
    # The sections compared (what reads them; no part of the difference).
    known: Sections = field(default_factory=lambda: Sections({}, ()), compare=False,
                            repr=False)

    @property
    def empty(self) -> bool:
        return not (self.conf_digest or self.scope
                    or any(not s.empty for s in self.sections))

    def lines(self, limit: int = 50) -> list[str]:
        """What an operator reads: the conf and scope, then one line per subject."""
        out = []
        if self.conf_digest:
            out.append(f"conf changed: digest {self.conf_digest[0][:12]} -> "
                       f"{self.conf_digest[1][:12]}")
        if self.scope:
            out.append(f"scope changed: {canonical_json(self.scope[0])} -> "
                       f"{canonical_json(self.scope[1])}")
        known = self.known
        subjects: list[str] = []
        for diff in self.sections:
            section = known[diff.kind]
            subjects += [f"+ {section.label(c)} {c['action']}: in the fresh plan, not in the "
                         "saved one" for c in diff.added]
            subjects += [f"- {section.label(c)} {c['action']}: in the saved plan, not in "
                         "the fresh one" for c in diff.removed]
            subjects += [f"~ {label}: {'; '.join(d)}" for label, _, d in diff.changed]
        out += subjects[:limit]
        if len(subjects) > limit:
            out.append(f"... and {len(subjects) - limit} more topic(s)")
        for diff in self.sections:
            line = known[diff.kind].summary(len(diff.added), len(diff.removed),
                                            len(diff.changed))
            if line:
                out.append(line)
        return out

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "conf_digest": None if self.conf_digest is None else {
                "saved": self.conf_digest[0], "fresh": self.conf_digest[1]},
            "scope": None if self.scope is None else {
                "saved": self.scope[0], "fresh": self.scope[1]},
        }
        known = self.known
        for diff in self.sections:
            section = known[diff.kind]
            if diff.empty and not section.required:
                continue
            prefix = section.diff_prefix
            doc[f"{prefix}added"] = [section.added_json(c) for c in diff.added]
            doc[f"{prefix}removed"] = [section.added_json(c) for c in diff.removed]
            doc[f"{prefix}changed"] = [section.changed_json(label, c, d)
                                       for label, c, d in diff.changed]
        return doc


def _section_diff(kind: str, section: PlanSection, saved: Sequence[dict[str, Any]],
                  fresh: Sequence[dict[str, Any]]) -> SectionDiff:
    old: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    new: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for e in saved:
        old[section.identity(e)].append(e)
    for e in fresh:
        new[section.identity(e)].append(e)
    added: list[dict[str, Any]] = []
    removed: list[dict[str, Any]] = []
    changed: list[tuple[str, dict[str, Any], tuple[str, ...]]] = []
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, []), new.get(key, [])
        if before == after:
            continue
        if not before:
            added += after
        elif not after:
            removed += before
        elif len(before) == len(after) == 1:
            changed.append((section.label(after[0]), after[0],
                            tuple(field_differences(section, before[0], after[0]))))
        else:
            changed.append((section.label(after[0]), after[0], (
                f"{len(before)} manifest row(s) saved, {len(after)} in the fresh plan",)))
    return SectionDiff(kind, tuple(added), tuple(removed), tuple(changed))


def diff_plans(saved: PlanDocument, fresh: PlanDocument) -> PlanDiff:
    """The differences between a saved and a fresh plan, subject by subject."""
    conf = None if saved.conf_digest == fresh.conf_digest else (
        saved.conf_digest, fresh.conf_digest)
    saved_scope = {"clusters": list(saved.clusters), "topics": saved.topics}
    fresh_scope = {"clusters": list(fresh.clusters), "topics": fresh.topics}
    scope = None if saved_scope == fresh_scope else (saved_scope, fresh_scope)
    known = fresh.sections
    return PlanDiff(conf, scope, tuple(
        _section_diff(name, section, saved.entries.get(name, ()), fresh.entries.get(name, ()))
        for name, section in known.items()), known)


def recorder(known: Sections, conf_digest: str, clusters: Sequence[str], topics: str | None
             ) -> tuple[dict[str, Callable[[DataFrame], None]], Callable[[], PlanDocument]]:
    """Plan hooks (kind name -> hook) that keep the run's canonical document, and a getter
    for it (the sections of the kinds whose plan ran; the others empty)."""
    kept: dict[str, list[dict[str, Any]]] = {}
    made: list[bool] = []

    def hook(kind: str) -> Callable[[DataFrame], None]:
        def keep(plan: DataFrame) -> None:
            kept[kind] = known[kind].collect(plan)
            made.append(True)
        return keep

    def document() -> PlanDocument:
        if not made:
            raise RuntimeError("the plan hook was never called")
        return PlanDocument.build(known, conf_digest, clusters, topics, kept)

    return {name: hook(name) for name in known}, document


def stale_check(saved: SavedPlan, conf_digest: str, clusters: Sequence[str],
                topics: str | None
                ) -> tuple[dict[str, Callable[[DataFrame], None]], Callable[[], None]]:
    """Plan hooks (kind name -> hook) that raise StalePlan unless each kind's fresh plan
    equals its section of `saved`, and the check once every plan of the run is made: the
    conf and scope, and every saved section whose kind planned nothing in this run (its
    entries, in the saved plan and not in the fresh one). All of it runs before anything
    is sent to Kafka."""
    compared: set[str] = set()
    known = saved.document.sections

    def hook(kind: str) -> Callable[[DataFrame], None]:
        def check(plan: DataFrame) -> None:
            # The other kinds' sections as saved: each is compared at its own plan.
            fresh = PlanDocument.build(known, conf_digest, clusters, topics, {
                **saved.document.entries, kind: known[kind].collect(plan)})
            diff = diff_plans(saved.document, fresh)
            compared.add(kind)
            if not diff.empty:
                raise StalePlan(saved.path, diff)
        return check

    def done() -> None:
        fresh = PlanDocument.build(known, conf_digest, clusters, topics, {
            name: saved.document.entries.get(name, ()) for name in compared})
        diff = diff_plans(saved.document, fresh)
        if not diff.empty:
            raise StalePlan(saved.path, diff)

    return {name: hook(name) for name in known}, done


def plan_meta(run_id: str, command: str, conf_source: str, counts: Mapping[str, int],
              exit_code: int, created_at: dt.datetime) -> dict[str, Any]:
    """The file's non-canonical part: which run wrote it, when, and what it found."""
    return {"run_id": run_id, "command": command, "conf": conf_source,
            "created_at": created_at.isoformat(), "counts": dict(sorted(counts.items())),
            "exit_code": exit_code}
