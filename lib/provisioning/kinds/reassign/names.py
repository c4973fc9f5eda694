"""The vocabulary of replica moves (KIP-455): their action and outcomes, the job's own error
name for a move it refuses, and the brokers' replication throttle rates."""

from __future__ import annotations

# Move a live topic's replicas: another replication factor or placement. A topic row that
# also needs an ALTER stays ALTER and carries its moves in `reassignment`.
REASSIGN = "REASSIGN"
# The change `apply --allow-reassign` allows: moves are made only with it.
ALLOW = "reassign"
# A partition's move is complete (its replicas are the target) / still under way.
REASSIGNED = "reassigned"
REASSIGNING = "reassigning"
# A reassignment the job's own checks refused before sending it (AlterPartitionReassignments
# has no validateOnly): a target broker not live, replicas not distinct, a partition being
# moved by another reassignment. Its reasons are the error message.
INVALID_REASSIGNMENT = "INVALID_REASSIGNMENT"
