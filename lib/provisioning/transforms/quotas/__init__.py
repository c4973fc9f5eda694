"""Client quotas (KIP-546) as pure DataFrame transforms: one module per concern.

- `validation`: quota manifest rows validated as data, per entity (`row_errors`): the
  cluster, the state, the entity's types and names, the ip literal, a present row's quotas;
  and two rows naming the same entity;
- `plan`: each row's keys joined with the live quotas into QUOTA_PLAN rows (SET, REMOVE,
  NOOP), each key judged (known, fits the entity, a value Kafka takes); the live quotas no
  row lists (left alone, or removed with `quotas.remove_unlisted`); `import --quotas`'s
  manifest rows; how an entity reads;
- `policies`: the quota policies over QUOTA_PLAN rows (`policies.quota`, then the per-cluster
  cap);
- `audit`: AUDIT rows of the plan and of the admin results, each quota's final rows.

Nothing here touches a session, the network or the disk; the Kafka side is
`provisioning.kafka.quotas`.
"""
