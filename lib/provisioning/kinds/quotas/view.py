"""The client quotas' part of the views package, on the entity base (`views.entity`): how a
quota and its change read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioning import names
from provisioning.kinds.quotas import names as quota_names
from provisioning.kinds.quotas.conf import QuotasConf
from provisioning.kinds.quotas.model import MODEL
from provisioning.kinds.quotas.schema import ENTITY_COLUMNS
from provisioning.views.entity import EntityView

_TYPES = dict(zip(ENTITY_COLUMNS, quota_names.ENTITY_TYPES, strict=True))


def entity_label(row: Mapping[str, Any]) -> str:
    """"user=orders-app client-id=<default>": the entity's set types, in Kafka's order."""
    return " ".join(f"{_TYPES[c]}={row[c]}" for c in ENTITY_COLUMNS
                    if row.get(c) is not None) or "(no entity)"


def _number(value: float | None) -> str:
    if value is None:
        return "(not set)"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:g}"


class QuotasView(EntityView):
    model, conf_class = MODEL, QuotasConf
    problems_phrase = "quotas not read"
    unlisted_phrase = "listed by no quota manifest row"
    removals_phrase = "quota removal(s)"
    saved_attributes = ("value", "live_value")

    def label(self, entry: Mapping[str, Any]) -> str:
        return f"{entry.get('cluster')} quota {entity_label(entry)} {entry.get('key')}"

    def change_text(self, row: Mapping[str, Any]) -> str:
        """"quota user=orders-app producer_byte_rate 1048576 -> 2097152": the value found
        live before, and the one asked for; a verified row, the value read back."""
        asked = ("(removed)" if row.get("action") == quota_names.REMOVE
                 else _number(row.get("value")))
        subject = f"quota {entity_label(row)} {row.get('key') or '(no key)'}"
        if row.get("phase") == names.VERIFY:
            return f"{subject} -> {asked} (read back: {_number(row.get('found'))})"
        return f"{subject} {_number(row.get('found'))} -> {asked}"

    def listed_text(self, row: Mapping[str, Any]) -> str:
        return f"quota {entity_label(row)} {row['key']} {_number(row['value'])}"


VIEW = QuotasView()
