"""Pure DataFrame -> DataFrame transforms: row validation, scope, plan and drift, policies,
audit rows, result settling, and `check`'s violations and their trend.

Nothing here touches a session, the network or the disk, or runs a Spark action;
every function takes DataFrames (or returns a `Callable[[DataFrame], DataFrame]`)
and states its output schema with a closing `select`. Tested with chispa, no broker.
"""
