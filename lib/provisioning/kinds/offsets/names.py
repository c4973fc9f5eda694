"""The vocabulary of offset resets: what a request may ask, the plan actions, and the words
of a plan row's note."""

from __future__ import annotations

from provisioning.names import DELETE as DELETE_ACTION
from provisioning.names import NOOP, Nouns

# What a request's `to` may ask: moves by the log, by time, from the committed offset, to an
# offset; or the removal of the group's committed offsets on the topic.
EARLIEST, LATEST, TIMESTAMP, DURATION = "earliest", "latest", "timestamp", "duration"
SHIFT, OFFSET, DELETE_TO = "shift", "offset", "delete"
TOS = (EARLIEST, LATEST, TIMESTAMP, DURATION, SHIFT, OFFSET, DELETE_TO)
# The `to`s that take no value.
VALUELESS = (EARLIEST, LATEST, DELETE_TO)

# Plan actions: RESET (commit the target), DELETE (OffsetDelete), NOOP (done before).
RESET = "RESET"
DELETE = DELETE_ACTION
DONE = NOOP

# Outcomes of a partition's answer: its offset committed, its committed offset removed.
RESET_DONE = "reset"
OFFSETS_DELETED = "offsets_deleted"

# How the job names offset resets (`names.Nouns`): phases `offset plan`, conf `offsets`,
# `tables.offset_resets` (the requests), `tables.offset_snapshots`, `policies.offset`, and
# `apply --allow-offset-resets`, which every change of the kind needs.
NOUNS = Nouns(name="offsets", prefix="offset", noun="offset reset", one="reset",
              many="resets", title="offset resets", flag="offset-resets",
              manifests="offset_resets")

# The plan outcome of a request an earlier run applied.
ALREADY_DONE = "already_done"
