"""The admin work of one Spark task, by request kind: rows in, one result row per subject
out.

- `common`: result rows, the one per-row catch (`for_each_cluster`), pipelined sends;
- each kind's own work is in its folder (`kinds/<kind>/tasks.py`; the topics' create,
  delete, alter and verify in `kinds/topics/tasks/`), built on `common`.

Nothing here knows Spark: each kind's executors feed these functions from a DataFrame
and turn their rows back into one.
"""
