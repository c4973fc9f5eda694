"""ACL bindings as pure DataFrame transforms: one module per concern.

- `validation`: ACL manifest rows validated as data (defaults filled, `row_errors`);
- `plan`: rows expanded to bindings, merged (present wins), joined with the live bindings
  into ACL_PLAN rows; the unmanaged, orphaned and deleted topics' bindings;
- `policies`: the ACL policies over ACL_PLAN rows (always-on, `policies.acl`, the cap).

Nothing here touches a session, the network or the disk; the Kafka side is
`provisioning.kafka.acls` and `provisioning.kafka.tasks.acls`.
"""
