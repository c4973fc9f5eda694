"""The consumer groups' part of the views package, on the entity base (`views.entity`): how a
group and its change read, and its page of the static site (`kinds.groups.site`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame

from provisioning import names
from provisioning.conf import Conf
from provisioning.kinds.groups.conf import GroupsConf
from provisioning.kinds.groups.model import MODEL
from provisioning.kinds.groups.names import DELETE
from provisioning.kinds.groups.site import site_data, site_pages
from provisioning.views.entity import EntityView
from provisioning.views.kind import SiteRead
from provisioning.views.site.data import SiteData


def configs_text(configs: Mapping[str, Any] | None) -> str:
    """"consumer.session.timeout.ms=60000, ...", or "(none)"."""
    return ", ".join(f"{k}={v}" for k, v in sorted((configs or {}).items())) or "(none)"


class GroupsView(EntityView):
    model, conf_class = MODEL, GroupsConf
    problems_phrase = "consumer groups not read"
    unlisted_phrase = "named by no group manifest row"
    removals_phrase = "group removal(s)"
    saved_attributes = ("configs", "changed", "live_configs", "type", "group_state",
                        "members")
    site_nav = (("groups/index.html", "Groups"),)

    def label(self, entry: Mapping[str, Any]) -> str:
        return f"{entry.get('cluster')} group {entry.get('group')}"

    def change_text(self, row: Mapping[str, Any]) -> str:
        """"group orders-app (none) -> consumer.session.timeout.ms=60000": its configs found
        live, and those asked for; a removal names its type, state and members."""
        subject = f"group {row.get('group')}"
        if row.get("action") == DELETE:
            members = row.get("members")
            return (f"{subject} ({row.get('type')}, {row.get('group_state')}, "
                    f"{'unknown' if members is None else members} member(s)) -> (deleted)")
        asked = configs_text(row.get("configs"))
        if row.get("phase") == names.VERIFY:
            return f"{subject} -> {asked} (read back: {configs_text(row.get('found'))})"
        return f"{subject} {configs_text(row.get('found'))} -> {asked}"

    def listed_text(self, row: Mapping[str, Any]) -> str:
        return (f"group {row['group']} ({row['type']}, {row['group_state']}) "
                f"{configs_text(row['configs'])}")

    def site_data(self, read: SiteRead, conf: Conf, clusters: Sequence[str],
                  checks: DataFrame) -> Any:
        return site_data(read, conf, clusters, checks)

    def site_pages(self, data: SiteData) -> dict[str, str]:
        return site_pages(data, data.kinds_data.get(self.name))


VIEW = GroupsView()
