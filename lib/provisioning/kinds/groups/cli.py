"""The consumer groups' part of the command line, on the entity base (`cli.entity`):
`apply --allow-group-removals`, `import --groups`, `report --unmanaged-groups`, and group
manifest files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioning.cli.entity import EntityCli
from provisioning.kinds.groups.conf import SECTION
from provisioning.kinds.groups.view import VIEW


class GroupsCli(EntityCli):
    view, section, removal = VIEW, SECTION, "delete"

    def row_label(self, item: Mapping[str, Any]) -> str:
        return f"group {item.get('group')}"


CLI = GroupsCli()
