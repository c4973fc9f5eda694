"""The topics' part of the views room (`views.kind`): their lines in the output of `plan` and
`apply` (`text`, `markdown`), their section of a saved plan (`planfile`), their views of
`report` (`report`: a topic's history, drift, unmanaged topics, check's trend)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioning.results import RunResult
from provisioning.views.kind import ViewKind
from provisioning.views.topics.markdown import topics_markdown
from provisioning.views.topics.planfile import TopicsSection
from provisioning.views.topics.text import ACTIONS, NAME, topics_text


class TopicsView(ViewKind):
    name = NAME
    title = "topics"
    actions = ACTIONS
    section = TopicsSection()

    def json(self, summary: Any) -> dict[str, Any]:
        if summary is None:
            return {"counts": {}, "actions": [], "topics": [], "topics_not_listed": 0,
                    "deletes_not_allowed": 0, "alters_not_allowed": 0, "unmanaged": {}}
        return dict(summary.as_json())

    def text(self, result: RunResult, verbose: bool) -> list[str]:
        return topics_text(result, verbose)

    def markdown(self, result: RunResult, command: str) -> list[str]:
        return topics_markdown(result, command)

    def subject(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return (row.get("cluster"), row.get("topic"))

    def subject_text(self, row: Mapping[str, Any]) -> str:
        return f"{row.get('cluster')}/{row.get('topic')}"


KIND = TopicsView()
