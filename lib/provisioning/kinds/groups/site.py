"""The consumer groups' page of the static site (`report --site`, `views.site`):
`groups/index.html`, the newest group inventory of each cluster (each group's type, state,
members, and its lag per topic) and the lag per day of the groups with the largest lag now
(each day's last check run), read from `<tables.inventory>_groups`. Its markup is the site's
template groups.html."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from provisioning.conf import Conf
from provisioning.kinds.groups.conf import inventory_table
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
    members = [r["members"] for r in site.latest]
    return {PATH: page(
        PATH, "groups.html", "Consumer groups", data, (ROLE,),
        inventory_missing=missing(data.tables, ROLE),
        latest=Table(("cluster", "group", "type", "state", "members", "topic", "lag",
                      "topic state"), [
            [r["cluster"], r["group"], r["type"], r["group_state"],
             "unknown" if m is None else count(m), r["topic"] or "-",
             count(r["lag"]), r["topic_state"] or "-"]
            for r, m in zip(site.latest, members, strict=True)], numeric=(4, 6)),
        charts_shown=_charted(data, site))}
