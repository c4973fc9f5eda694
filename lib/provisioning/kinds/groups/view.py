"""The consumer groups' part of the views package, on the entity base (`views.entity`): how a
group and its change read, and its page of the static site (`report --site`,
`groups/index.html`): the newest group inventory of each cluster (each group's type, state,
members, and its lag per topic) and the lag per day of the groups with the largest lag now
(each day's last check run), read from `<tables.inventory>_groups`; its markup is the site's
template groups.html."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf import Conf
from provisioning.kinds.groups.conf import GroupsConf, inventory_table
from provisioning.kinds.groups.model import MODEL
from provisioning.kinds.groups.names import DELETE
from provisioning.views.entity import EntityView
from provisioning.views.kind import SiteRead
from provisioning.views.site.charts import line_data
from provisioning.views.site.data import SiteData, last_check_of_day, latest_check, rows
from provisioning.views.site.html import Table, count, missing, page

ROLE = "group inventory"
PATH = "groups/index.html"
# The groups and topics charted: those with the largest lag now.
CHARTED = 50


@dataclass
class GroupSite:
    """What the page shows: the newest inventory rows, and each (cluster, group, topic)'s
    lag per day."""

    latest: list[dict[str, Any]] = field(default_factory=list)
    series: list[dict[str, Any]] = field(default_factory=list)


def site_data(read: SiteRead, conf: Conf, clusters: Sequence[str], checks: DataFrame
              ) -> GroupSite:
    found = read(ROLE, inventory_table(conf))
    if found is None:
        return GroupSite()
    inventory = found.where(F.col("cluster").isin(*clusters))
    latest = inventory.join(latest_check(checks).select("run_id", "cluster"),
                            on=["run_id", "cluster"], how="left_semi")
    daily = inventory.where(F.col("topic").isNotNull()).join(
        last_check_of_day(checks), on=["run_id", "cluster"], how="inner")
    return GroupSite(
        latest=rows(latest.select("cluster", "group", "type", "group_state", "members",
                                  "topic", "lag", "topic_state", "reason", "checked_at")
                    .orderBy("cluster", "group", "topic")),
        series=rows(daily.groupBy("cluster", "group", "topic").agg(
            F.sort_array(F.collect_list(F.struct("day", "lag"))).alias("points"))
            .orderBy("cluster", "group", "topic")))


def _charted(data: SiteData, site: GroupSite) -> list[dict[str, Any]]:
    """The lag charts of the groups and topics with the largest lag now."""
    largest = sorted((r for r in site.latest if r["lag"] is not None and r["topic"]),
                     key=lambda r: (-r["lag"], r["cluster"], r["group"], r["topic"]))
    wanted = [(r["cluster"], r["group"], r["topic"]) for r in largest[:CHARTED]]
    series = {(s["cluster"], s["group"], s["topic"]): s for s in site.series}
    charts = []
    for key in wanted:
        by_day = {p["day"]: p["lag"] for p in (series.get(key) or {}).get("points") or []}
        charts.append({"title": f"{key[0]}: group {key[1]} on topic {key[2]}",
                       "line": line_data(f"lag of {key[1]} on {key[2]} ({key[0]})",
                                         [(str(d), by_day.get(d)) for d in data.days])})
    return charts


def site_pages(data: SiteData, site: GroupSite | None) -> dict[str, str]:
    site = site or GroupSite()
    return {PATH: page(
        PATH, "groups.html", "Consumer groups", data, (ROLE,),
        inventory_missing=missing(data.tables, ROLE),
        latest=Table(("cluster", "group", "type", "state", "members", "topic", "lag",
                      "topic state"), [
            [r["cluster"], r["group"], r["type"], r["group_state"],
             "unknown" if r["members"] is None else count(r["members"]), r["topic"] or "-",
             count(r["lag"]), r["topic_state"] or "-"] for r in site.latest], numeric=(4, 6)),
        charts_shown=_charted(data, site))}


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
