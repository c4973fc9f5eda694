"""Pure DataFrame -> DataFrame transforms: row validation, scope, drift, policies, audit
rows, and `check`'s violations and their trend (the topics' plan, adoption and result
settling are the topics kind's own: `kinds.topics.plan`).

Nothing here touches a session, the network or the disk, or runs a Spark action;
every function takes DataFrames (or returns a `Callable[[DataFrame], DataFrame]`)
and states its output schema with a closing `select`. Tested with chispa, no broker.
"""
