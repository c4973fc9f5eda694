"""The ACL bindings' part of the views package, on the entity base (`views.entity`): how a
binding reads, and the report's view of the LITERAL TOPIC bindings that name no live topic
(`--orphaned-acls`), beside the unmanaged ones every entity kind has."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from provisioning import names
from provisioning.conf import Conf
from provisioning.delta.tables import TableRef, read_table, table_exists
from provisioning.kinds.acls import names as acl_names
from provisioning.kinds.acls.conf import AclsConf
from provisioning.kinds.acls.model import MODEL
from provisioning.kinds.acls.plan import orphaned_bindings
from provisioning.views.entity import EntityView, LeftAloneView
from provisioning.views.report import latest_snapshot

_SIGNS = {acl_names.GRANT: "+", acl_names.REVOKE: "-", names.NOOP: "="}


def _orphaned(spark: SparkSession, conf: Conf, live: DataFrame) -> DataFrame:
    topics = TableRef(conf.tables.snapshots)
    live_topics = (latest_snapshot(read_table(spark, topics)).where(
        F.col("error_name").isNull()) if table_exists(spark, topics)
        else spark.createDataFrame([], "cluster string, topic string"))
    return orphaned_bindings(live, live_topics)


class AclsView(EntityView):
    model, conf_class = MODEL, AclsConf
    problems_phrase = "ACLs not changed"
    unlisted_phrase = "named by no ACL manifest row"
    removals_phrase = "revoke(s)"
    left_alone_lines = (("orphaned", "orphaned binding(s) (LITERAL TOPIC, naming no live topic): "
                                "report --orphaned-acls lists them"),)
    left_alone_views = (LeftAloneView(
        "orphaned", "LITERAL TOPIC bindings naming no live topic", _orphaned,
        "revoke them with an ACL manifest row `state: absent` and apply --allow-revokes"),)

    def label(self, entry: Mapping[str, Any]) -> str:
        return (f"{entry.get('cluster')} ACL {entry.get('permission')} "
                f"{entry.get('principal')} {entry.get('operation')} "
                f"{entry.get('resource_type')} {entry.get('resource_name')} "
                f"({entry.get('pattern_type')}) host {entry.get('host')}")

    def change_text(self, row: Mapping[str, Any]) -> str:
        return str(row.get("binding"))

    def markdown_change(self, row: Mapping[str, Any]) -> str:
        # No sign in a table: the action says what the run does to the binding.
        return f"{row.get('action')} {row.get('binding')}"

    def sign(self, row: Mapping[str, Any]) -> str:
        return _SIGNS.get(row.get("action") or "", "?")


VIEW = AclsView()
