"""The client quotas' part of the command line, on the entity base (`cli.entity`):
`apply --allow-quota-removals`, `import --quotas`, `report --unmanaged-quotas`, and quota
manifest files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioning.cli.entity import EntityCli
from provisioning.kinds.quotas.conf import SECTION
from provisioning.kinds.quotas.schema import ENTITY_COLUMNS
from provisioning.kinds.quotas.view import VIEW


class QuotasCli(EntityCli):
    view, section, removal = VIEW, SECTION, "remove"

    def row_label(self, item: Mapping[str, Any]) -> str:
        entity = " ".join(f"{c}={item[c]}" for c in ENTITY_COLUMNS if item.get(c) is not None)
        return entity or "no entity"


CLI = QuotasCli()
