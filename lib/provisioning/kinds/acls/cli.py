"""The ACL bindings' part of the command line, on the entity base (`cli.entity`):
`apply --allow-revokes`, `import --acls`, the `report` views of the live bindings left alone
(`--unmanaged-acls`, `--orphaned-acls`), and ACL manifest files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioning.cli.entity import EntityCli, left_alone_report
from provisioning.kinds.acls.conf import SECTION
from provisioning.kinds.acls.view import VIEW


class AclsCli(EntityCli):
    view, section, removal = VIEW, SECTION, "revoke"
    more_views = (left_alone_report(VIEW, "orphaned", "List the LITERAL TOPIC bindings that name "
                                                  "no live topic."),)

    def row_label(self, item: Mapping[str, Any]) -> str:
        return repr(item.get("principal"))


CLI = AclsCli()
