"""The Delta adapter: the only code that imports `delta`, and every read and write of a table.

- `tables`: a table by path or catalog name; read at a version, write, append, retry;
- `manifests`: manifest tables written from rows, read and unioned with their versions;
- `audit_log`, `runs`: the audit table (a commit per phase) and the runs table;
- `lock`: the per-cluster run lock;
- `maintenance`: OPTIMIZE, snapshot retention and VACUUM of the job's tables.
"""
