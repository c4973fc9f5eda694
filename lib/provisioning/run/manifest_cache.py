"""Validated manifest rows kept in a shared Spark Connect session for the runs after.

Runs through Spark Connect share one server session (`session.connect.shared_session_id`),
which outlives each run's client. A run there looks up each manifest table's latest commit
(the history lookup it makes anyway, for the version it reads), then the rows an earlier
run of the session read and validated at those commits: a temp view over cached data
(a cached DataFrame), named by their key (`cache_key`):

- the group: the kind of manifest, its tables as the conf names them, in order (the rows of
  all of them are validated together: a duplicate spans tables), and what validation takes
  from the conf (`inputs`: the conf's clusters);
- the entry: the group and each table's commit (`delta.tables.Commit`: its version, and the
  timestamp, operation and metrics of that commit, which tell a table made again at the same
  path or name from the one it replaced).

The code that validates is the session's own: a shared session's id derives from the code
shipped to it. A hit serves the rows without reading or validating a table; a miss reads and
validates them, caches them under the entry and drops the group's other entries (the tables
moved on), so a session keeps one entry per group. The rows kept are before the run's scope,
so runs of other scopes share them; each run applies its scope and pins what it got (a local
checkpoint, `finish`), and an entry dropped later by another run changes nothing of it.

Two runs of one session may look up or make the same entry at once: one key always names the
same rows (the same tables at the same commits, validated by the same code with the same
inputs), so whichever run's view stands serves both. An entry dropped between a run's lookup
and its read is a miss. Sessions that end with the run (classic Spark, a Connect session of
the run's own) keep nothing: the rows are read and validated as they would be anyway.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from provisioning.delta.tables import Commit
from provisioning.session import outlives_run

log = logging.getLogger(__name__)

# Temp views of the session's cached manifest rows: VIEW_PREFIX + group + "_" + entry.
VIEW_PREFIX = "provisioning_manifest_rows_"


@dataclass(frozen=True)
class CacheKey:
    """The name of a run's validated manifest rows in the session (`cache_key`)."""

    group: str
    entry: str

    @property
    def view(self) -> str:
        return f"{VIEW_PREFIX}{self.group}_{self.entry}"


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()[:20]


def cache_key(kind: str, commits: Sequence[tuple[str, Commit]], inputs: Sequence[str]
              ) -> CacheKey:
    """The key of `kind`'s rows of the tables at `commits` (table as written, its latest
    commit; in the conf's order), validated with `inputs` (the conf's values validation
    reads; their order does not matter)."""
    group = _digest([kind, [table for table, _ in commits], sorted(set(inputs))])
    entry = _digest([group, [[table, c.version, c.marks] for table, c in commits]])
    return CacheKey(group, entry)


def described(commits: Sequence[tuple[str, Commit]]) -> str:
    """The tables and versions of `commits`, for a log line: `t1 v3, t2 v7`."""
    return ", ".join(f"{table} v{c.version}" for table, c in commits)


def _pinned(spark: SparkSession, view: str, finish: Callable[[DataFrame], DataFrame]
            ) -> DataFrame | None:
    """`finish` over the rows of the session's temp view `view`; None when there is none."""
    try:
        return finish(spark.table(view))
    except PySparkException as exc:
        if (exc.getCondition() or "") == "TABLE_OR_VIEW_NOT_FOUND" \
                or "TABLE_OR_VIEW_NOT_FOUND" in str(exc)[:300]:
            return None
        raise


def _keep(spark: SparkSession, key: CacheKey, rows: DataFrame) -> None:
    """Cache `rows` in the session as the temp view of `key`: filled by the first query of
    it (this run's own read of its rows), not by a query of its own."""
    rows.createOrReplaceTempView(key.view)
    rows.cache()


def _drop_stale(spark: SparkSession, key: CacheKey) -> None:
    """Drop the other entries of `key`'s group (the tables moved on)."""
    stale = [r["viewName"] for r in
             spark.sql(f"SHOW VIEWS LIKE '{VIEW_PREFIX}{key.group}_*'").collect()
             if r["isTemporary"] and r["viewName"] != key.view]
    for view in stale:
        spark.sql(f"UNCACHE TABLE IF EXISTS {view}")
        spark.sql(f"DROP VIEW IF EXISTS {view}")


def manifest_rows(spark: SparkSession, kind: str, commits: Sequence[tuple[str, Commit]],
                  inputs: Sequence[str], validated: Callable[[], DataFrame],
                  finish: Callable[[DataFrame], DataFrame]) -> DataFrame:
    """The run's manifest rows: `finish` (the run's scope, pinned) over the rows of the tables
    at `commits` as `validated()` gives them, from the session's cache when an earlier run
    left them there; kept there for the next run when the session outlives this one.

    kind: the kind of manifest ("manifest", or another kind's; the log lines name it).
    inputs: what `validated` takes from the conf (part of the key).
    """
    if not commits or not outlives_run(spark):
        return finish(validated())
    key = cache_key(kind, commits, inputs)
    hit = _pinned(spark, key.view, finish)
    if hit is not None:
        log.info("%s rows of %s from the session cache", kind, described(commits))
        return hit
    rows = validated()
    # The group's other entries go first: a table dropped and made again up to the same
    # version reads through a plan Spark's cache takes for the old entry's, whose rows it
    # would serve.
    _drop_stale(spark, key)
    _keep(spark, key, rows)
    log.info("%s rows of %s read and validated, kept in the session cache", kind,
             described(commits))
    pinned = _pinned(spark, key.view, finish)
    # Another run of the session (the tables moved on for it) may have dropped the entry.
    return pinned if pinned is not None else finish(rows)
