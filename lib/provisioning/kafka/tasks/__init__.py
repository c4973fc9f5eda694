"""The admin work of one Spark task, by request kind: rows in, one TOPIC_RESULT row per topic
out.

- `common`: result rows, the one per-row catch (`for_each_cluster`), pipelined sends;
- `create`: CreateTopics (validateOnly or for real);
- `delete`: DeleteTopics by topic id;
- `alter`: IncrementalAlterConfigs and CreatePartitions;
- `reassign`: replica moves (AlterPartitionReassignments, throttled) and their progress;
- `verify`: reading back what the others did;
- `acls`: ACL bindings (the authority check, CreateAcls, DeleteAcls, the read-back), one
  ACL_RESULT row per binding.

Nothing here knows Spark: the run room feeds these functions from a DataFrame and turns
their rows back into one.
"""

from provisioning.kafka.tasks.acls import acl_results
from provisioning.kafka.tasks.alter import alter_results
from provisioning.kafka.tasks.create import create_results
from provisioning.kafka.tasks.delete import delete_results
from provisioning.kafka.tasks.reassign import reassign_results, reassign_verify_results
from provisioning.kafka.tasks.verify import verify_results

__all__ = ["acl_results", "alter_results", "create_results", "delete_results",
           "reassign_results", "reassign_verify_results", "verify_results"]
