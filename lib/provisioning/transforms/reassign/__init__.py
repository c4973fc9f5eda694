"""Replica moves of live topics (KIP-455): where new replicas go, the plan of each topic's
moves with the checks made before sending them, and the policies that judge them.

- `placement`: the target replicas of a partition when a row gives only a replication
  factor (pure Python, deterministic), and the DataFrame transform that applies it to each
  cluster's whole live assignment;
- `plan`: PLAN rows with their `reassignment` (before -> after per partition), their action
  (REASSIGN, or ALTER when configs or partitions change too) and `reassign_problems`;
  `check_results`, the rejected / validated verdict of those checks;
- `policies`: the always-on reassign policies (conf `policies.reassign` adds custom ones).
"""
