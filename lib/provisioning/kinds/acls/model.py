"""ACL bindings as pure DataFrame transforms, one module per concern, and their model on the
entity base (`MODEL`, `transforms.entity`): what the audit rows, the plan outcome and the
policy chain are made from.

- `validation`: ACL manifest rows validated as data (defaults filled, `row_errors`);
- `plan`: rows expanded to bindings, merged (present wins), joined with the live bindings
  into ACL_PLAN rows; the unmanaged, orphaned and deleted topics' bindings;
- `policies`: the ACL policies over ACL_PLAN rows (always-on, `policies.acl`; the cap is the
  base's).

Nothing here touches a session, the network or the disk; the Kafka side is
`provisioning.kinds.acls.requests` and `provisioning.kinds.acls.tasks`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from provisioning.kinds.acls import names as acl_names
from provisioning.kinds.acls.plan import (
    acl_manifest_rows,
    binding_text,
    plan_acls,
    unmanaged_bindings,
)
from provisioning.kinds.acls.policies import ACL_POLICIES, ALWAYS_ON
from provisioning.kinds.acls.schema import (
    ACL_BINDING,
    ACL_BINDING_STRUCT,
    ACL_DESIRED,
    ACL_MANIFEST,
    ACL_PLAN,
    ACL_RESULT,
    ACL_SNAPSHOT,
    AUDIT_COLUMN,
    BINDING_KEY,
)
from provisioning.kinds.acls.validation import with_acl_row_errors
from provisioning.transforms.entity import EntityModel
from provisioning.transforms.policies.base import Transform
from schemas import column_names

_BINDING = tuple(column_names(ACL_BINDING_STRUCT))


class AclModel(EntityModel):
    nouns = acl_names.NOUNS
    manifest, desired, live = ACL_MANIFEST, ACL_DESIRED, ACL_BINDING
    snapshot, plan_schema, result = ACL_SNAPSHOT, ACL_PLAN, ACL_RESULT
    manifest_keys = ("cluster", "principal")
    key = BINDING_KEY
    marker = "principal"
    adds, removes = acl_names.GRANT, acl_names.REVOKE
    added, removed = acl_names.GRANTED, acl_names.REVOKED
    audit_column, identity = AUDIT_COLUMN, _BINDING
    text = staticmethod(binding_text)
    entity_list, text_column, listing_order = "operations", "binding", ("cluster", "binding")
    policies, always_on = ACL_POLICIES, ALWAYS_ON
    cap_refuses = "no grant or revoke is made"

    def validation(self, known_clusters: tuple[str, ...]) -> Transform:
        return with_acl_row_errors(known_clusters)

    def plan(self, desired: DataFrame, live: DataFrame, remove_unlisted: bool) -> DataFrame:
        return plan_acls(desired, live, remove_unlisted)

    def unmanaged(self, live: DataFrame, desired: DataFrame) -> DataFrame:
        return unmanaged_bindings(live, desired)

    def manifest_rows(self, live: DataFrame, owner: str | None) -> DataFrame:
        return acl_manifest_rows(live, owner)


MODEL = AclModel()
