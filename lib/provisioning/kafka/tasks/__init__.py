"""The admin work of one Spark task, by request kind: rows in, one result row per subject
out.

- `common`: result rows, the one per-row catch (`for_each_cluster`), pipelined sends;
- `create`: CreateTopics (validateOnly or for real);
- `delete`: DeleteTopics by topic id;
- `alter`: IncrementalAlterConfigs and CreatePartitions;
- `verify`: reading back what the others did;
- one module per other kind of resource, named after it (its requests, throttles, read-back).

Nothing here knows Spark: each kind's run package (`run.<kind>.executors`) feeds these
functions from a DataFrame and turns their rows back into one.
"""
