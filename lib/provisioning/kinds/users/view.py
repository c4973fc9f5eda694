"""The SCRAM credentials' part of the views package, on the entity base (`views.entity`): how a
credential and its change read. No view shows a password: a change names its
password_version."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioning import names
from provisioning.kinds.users.conf import UsersConf
from provisioning.kinds.users.model import MODEL
from provisioning.kinds.users.names import DELETE
from provisioning.views.entity import EntityView


def _iterations(value: Any) -> str:
    return "(none)" if value is None else f"{value} iterations"


class UsersView(EntityView):
    model, conf_class = MODEL, UsersConf
    problems_phrase = "SCRAM credentials not read"
    unlisted_phrase = "named by no user manifest row"
    removals_phrase = "credential removal(s)"
    saved_attributes = ("iterations", "live_iterations", "password_version",
                        "applied_version", "password_env", "password_file")

    def label(self, entry: Mapping[str, Any]) -> str:
        return f"{entry.get('cluster')} credential {entry.get('user')} {entry.get('mechanism')}"

    def change_text(self, row: Mapping[str, Any]) -> str:
        """"credential orders-app SCRAM-SHA-512 (none) -> 8192 iterations, password_version
        v2": what was found live, and what is asked for."""
        subject = f"credential {row.get('user')} {row.get('mechanism')}"
        if row.get("action") == DELETE:
            return f"{subject} {_iterations(row.get('found'))} -> (removed)"
        asked = f"{_iterations(row.get('iterations'))}, password_version " \
                f"{row.get('password_version') or '(none)'}"
        if row.get("phase") == names.VERIFY:
            return f"{subject} -> {asked} (read back: {_iterations(row.get('found'))})"
        return f"{subject} {_iterations(row.get('found'))} -> {asked}"

    def listed_text(self, row: Mapping[str, Any]) -> str:
        return f"credential {row['user']} {row['mechanism']} {_iterations(row['iterations'])}"


VIEW = UsersView()
