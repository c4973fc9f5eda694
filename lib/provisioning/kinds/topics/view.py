"""The topics' part of the views package (`views.kind`): their lines in the output of `plan` and
`apply` (`text`, `markdown`), their section of a saved plan (`section`), their views of
`report` (`report`: a topic's history, drift, unmanaged topics, check's trend). The kinds
that extend the topics' rows style them in each (`views.kind.extensions_of`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from provisioning.kinds.topics.markdown import topics_markdown
from provisioning.kinds.topics.section import TopicsSection
from provisioning.kinds.topics.site import site_pages
from provisioning.kinds.topics.text import ACTIONS, NAME, topics_text
from provisioning.results import RunResult
from provisioning.views.kind import PlanSection, ViewKind, extensions_of
from provisioning.views.site.data import SiteData


class TopicsView(ViewKind):
    name = NAME
    title = "topics"
    actions = ACTIONS
    section = TopicsSection()

    def plan_section(self, kinds: Sequence[ViewKind]) -> PlanSection | None:
        return TopicsSection(extensions_of(kinds, NAME))

    def json(self, summary: Any) -> dict[str, Any]:
        if summary is None:
            return {"counts": {}, "actions": [], "topics": [], "topics_not_listed": 0,
                    "deletes_not_allowed": 0, "alters_not_allowed": 0, "unmanaged": {}}
        return dict(summary.as_json())

    def text(self, result: RunResult, verbose: bool, kinds: Sequence[ViewKind]) -> list[str]:
        return topics_text(result, verbose, extensions_of(kinds, NAME))

    def markdown(self, result: RunResult, command: str, kinds: Sequence[ViewKind]
                 ) -> list[str]:
        return topics_markdown(result, command, extensions_of(kinds, NAME))

    def site_pages(self, data: SiteData) -> dict[str, str]:
        return site_pages(data)

    def subject(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return (row.get("cluster"), row.get("topic"))

    def subject_text(self, row: Mapping[str, Any]) -> str:
        return f"{row.get('cluster')}/{row.get('topic')}"


VIEW = TopicsView()
