"""The offset resets' part of the command line, on the entity base (`cli.entity`):
`apply --allow-offset-resets` and offset resets files (`load_manifest --kind
offset-resets`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioning.cli.entity import EntityCli
from provisioning.kinds.offsets.conf import SECTION
from provisioning.kinds.offsets.view import VIEW

class OffsetsCli(EntityCli):
    view, section, removal = VIEW, SECTION, "reset"
    manifest_kind = SECTION.file_kind
    lists_unmanaged = False
    flag_help = ("Commit the offsets the offset reset requests (tables.offset_resets) ask "
                 "for, and delete those they ask to delete; off by default: planned, "
                 "validated and counted only.")

    def row_label(self, item: Mapping[str, Any]) -> str:
        return f"request {item.get('request_id')}"

    def imports(self) -> bool:
        return False


CLI = OffsetsCli()
