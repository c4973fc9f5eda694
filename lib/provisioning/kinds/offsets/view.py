"""The offset resets' part of the views package, on the entity base (`views.entity`): how a
request's partition and its move read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioning import names
from provisioning.kinds.offsets.conf import OffsetsConf
from provisioning.kinds.offsets.model import MODEL
from provisioning.kinds.offsets.names import DELETE, DONE
from provisioning.views.entity import EntityView


def _offset(value: Any) -> str:
    return "(none)" if value is None else str(value)


class OffsetsView(EntityView):
    model, conf_class = MODEL, OffsetsConf
    problems_phrase = "offsets not read"
    unlisted_phrase = "named by no offset reset request"
    removals_phrase = "offset reset(s) and deletion(s)"
    saved_attributes = ("group", "topic", "to", "value", "committed", "target", "clamped",
                        "lag_before", "lag_after", "done_by", "requested_by", "reason")

    def label(self, entry: Mapping[str, Any]) -> str:
        part = entry.get("partition")
        return (f"{entry.get('cluster')} offset reset {entry.get('request_id')}"
                + ("" if part is None else f" partition {part}"))

    def change_text(self, row: Mapping[str, Any]) -> str:
        """"request r-1: group g orders:0 30 -> 10 (lag 10 -> 30)": the partition's
        committed offset before, its target and the lags; a deletion, a request done
        before, or refused as a whole (no partition) names what it asked."""
        asked = f"{row.get('to')}" + (f" {row['value']}" if row.get("value") else "")
        subject = f"request {row.get('request_id')}: group {row.get('group')}"
        if row.get("partition") is None:
            return f"{subject} topic {row.get('topic')} to {asked}"
        where = f"{subject} {row.get('topic')}:{row.get('partition')}"
        if row.get("action") == DELETE:
            return f"{where} {_offset(row.get('before'))} -> (offsets deleted)"
        if row.get("action") == DONE:
            return f"{where} to {asked}"
        moved = (f"{where} {_offset(row.get('before'))} -> {row.get('target')} ({asked}; "
                 f"lag {_offset(row.get('lag_before'))} -> {_offset(row.get('lag_after'))})")
        if row.get("phase") == names.VERIFY:
            moved += f" (read back: {_offset(row.get('after'))})"
        return moved


VIEW = OffsetsView()
