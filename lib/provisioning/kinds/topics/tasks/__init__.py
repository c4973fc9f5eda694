"""The topics' admin work of one Spark task: rows in, one result row per topic out, through
`kafka.tasks.common` (the one per-row catch, result rows, pipelined sends).

- `create`: CreateTopics (validateOnly or for real);
- `delete`: DeleteTopics by topic id;
- `alter`: IncrementalAlterConfigs and CreatePartitions;
- `verify`: reading back what the others did.

Nothing here knows Spark: `kinds.topics.executors` feeds these functions from a DataFrame
and turns their rows back into one.
"""
