"""The Kafka admin adapter: the only code that imports kafka-python.

- `client`: a connection to one cluster (metadata, configs, consumer groups);
- `requests`: CreateTopics / DeleteTopics with per-topic errors and KIP-599 retries;
- `batching`: requests sized by the broker's per-request caps;
- `outcomes`: per-topic error codes mapped to audit outcomes;
- `tasks`, `snapshot`: the work one Spark task does for its clusters, rows in and
  result rows out (no Spark here: the run package feeds them); `snapshot` is the one
  reader of each cluster's live topics;
- `reads`: a kind's live state read from every cluster on the driver, or why a cluster's
  could not be read;
- one module (or more, named after it) per other kind of resource: its requests with a
  result per subject;
- `sasl`: a direct login probe, to tell a refused login from an unreachable cluster;
- `compat`: the one use of kafka-python internals, checked against its version;
- `codes`: error names, topic ids and config entries as the job records them.
"""
