"""The SCRAM credentials' part of the command line, on the entity base (`cli.entity`):
`apply --allow-user-removals`, `import --users` (whose rows need a password source before
they plan), `report --unmanaged-users`, and user manifest files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioning.cli.common import Command, Outcome
from provisioning.cli.entity import EntityCli
from provisioning.kinds.users.conf import SECTION
from provisioning.kinds.users.view import VIEW


class UsersCli(EntityCli):
    view, section, removal = VIEW, SECTION, "remove"

    def row_label(self, item: Mapping[str, Any]) -> str:
        return f"user {item.get('user')} {item.get('mechanism') or ''}".strip()

    def import_outcome(self, cmd: Command, table: str, imported: Any) -> Outcome:
        """The base's output, and what an imported credential lacks: Kafka never returns a
        password, so each row needs `password_env` or `password_file` before it plans."""
        done = super().import_outcome(cmd, table, imported)
        written = sum(c["rows_written"] for c in imported["clusters"])

        def human() -> list[str]:
            return [*done.human()[:-1],
                    f"next: each of the {written} row(s) has no password source: fill in "
                    "password_env or password_file, then add the table to "
                    "tables.user_manifests and run plan (it rejects a row without one; a "
                    "row with one plans as NOOP until its password_version changes)"]

        return Outcome(done.exit_code, {**done.payload, "needs_password_source": written},
                       human)

CLI = UsersCli()
