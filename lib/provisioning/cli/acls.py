"""The ACL bindings' part of the command line, on the entity base (`cli.entity`):
`apply --allow-revokes`, `import --acls`, the `report` views of the live bindings left alone
(`--unmanaged-acls`, `--orphaned-acls`), and ACL manifest files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provisioning.cli.entity import EntityCli, loose_report
from provisioning.names.acls import NOUNS
from schemas import ACL_MANIFEST


class AclsCli(EntityCli):
    nouns, manifest, removal = NOUNS, ACL_MANIFEST, "revoke"
    more_views = (loose_report(NOUNS, "orphaned", "List the LITERAL TOPIC bindings that name "
                                                  "no live topic."),)

    def row_label(self, item: Mapping[str, Any]) -> str:
        return repr(item.get("principal"))


KIND = AclsCli()
