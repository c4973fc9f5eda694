"""The phase engine and the phases: what `plan`, `apply` and `snapshot` do, in order.

- `engine`: a run as an ordered list of phases over one state; the order of the run's
  Delta commits; the lock gate;
- `phases`: preflight, manifests, snapshot, plan, validate, apply, verify;
- `options`: each command's typed options;
- `commands`: each command's phase list, run; `summary`: the run's result;
- `planning`: the manifests -> judged plan chain (also what the benchmarks run);
- `manifest_cache`: validated manifest rows kept in a shared Connect session between runs;
- `executors`: the Kafka package's per-cluster work as Spark tasks over DataFrames;
- `faults`: fault injection points for the reliability suite;
"""
