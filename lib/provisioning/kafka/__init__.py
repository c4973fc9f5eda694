"""The Kafka admin adapter: the only code that imports kafka-python.

- `client`: a connection to one cluster (metadata, configs, consumer groups);
- `requests`: CreateTopics / DeleteTopics with per-topic errors and KIP-599 retries;
- `acls`: DescribeAcls / CreateAcls / DeleteAcls with a result per binding, and the
  operations the job's principal may perform on the cluster (DescribeCluster, KIP-430);
- `batching`: requests sized by the broker's per-request caps;
- `outcomes`: per-topic error codes mapped to audit outcomes;
- `reassign`: replica moves (KIP-455), their throttles and their progress;
- `in_flight`: the reassignments in flight on each cluster, read live (`report`);
- `tasks`, `snapshot`: the work one Spark task does for its clusters, rows in and
  TOPIC_RESULT / ACL_RESULT / SNAPSHOT rows out (no Spark here: the run room feeds them);
- `sasl`: a direct login probe, to tell a refused login from an unreachable cluster;
- `compat`: the one use of kafka-python internals, checked against its version;
- `codes`: error names, topic ids and config entries as the job records them.
"""
