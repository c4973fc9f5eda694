"""Recording a live view (each kind's snapshot) only when it changed.

Most runs find every cluster as the last run left it. Their view is recorded only when it
differs from what the table holds: each record's commit carries, in its `userMetadata`,
a digest of every recorded cluster's rows (`digests`: SHA-256 over each row's values but
the run's own, `run_id` and `snapshot_at`, order-free). A run whose clusters all have the
digest the table's latest commit names records nothing: that commit is the newest
snapshot of each of them, and it holds the same rows. Any other latest commit (another
conf's clusters, `maintain`, an older release) makes the run record its view.

So a cluster's newest snapshot is the state the job last saw, taken when that state was
first seen (`snapshot_at`); `maintain` never prunes it.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from provisioning.delta.idempotent import Transaction, append_once
from provisioning.delta.tables import TableRef, last_commit

log = logging.getLogger(__name__)

# The commit metadata key of a recorded view's digests.
DIGESTS_KEY = "provisioning.snapshot.digests"
# The columns that differ between two records of the same state.
RUN_COLUMNS = ("run_id", "snapshot_at")


def digests(rows: DataFrame, skip: Sequence[str] = RUN_COLUMNS) -> dict[str, str]:
    """cluster -> digest of its rows: SHA-256 of the sorted SHA-256s of each row's values
    (as JSON, nulls kept, columns by name: a join's column order does not change it),
    leaving out the `skip` columns (one small Spark job)."""
    return {cluster: digest for (_, cluster), digest in
            _digests(rows.withColumn(_SIDE, F.lit(0)), skip).items()}


def same_rows(first: DataFrame, second: DataFrame, skip: Sequence[str] = RUN_COLUMNS
              ) -> bool:
    """Whether every cluster has the same `digests` in `first` as in `second` (a cluster
    in only one of them is a difference), both digested by one small Spark job."""
    found = _digests(first.withColumn(_SIDE, F.lit(0))
                     .unionByName(second.withColumn(_SIDE, F.lit(1))), skip)
    return ({c: d for (side, c), d in found.items() if side == 0}
            == {c: d for (side, c), d in found.items() if side == 1})


_SIDE = "_side"


def _digests(rows: DataFrame, skip: Sequence[str]) -> dict[tuple[int, str], str]:
    """(`_side`, cluster) -> digest of those rows, as `digests` says."""
    kept = sorted(c for c in rows.columns if c not in (*skip, _SIDE))
    row_hash = F.sha2(F.to_json(F.struct(*[F.col(f"`{c}`") for c in kept]),
                                {"ignoreNullFields": "false"}), 256)
    found = (rows.groupBy(_SIDE, "cluster")
             .agg(F.sha2(F.array_join(F.array_sort(F.collect_list(row_hash)), ","), 256)
                  .alias("digest"))
             .collect())
    return {(int(r[_SIDE]), str(r["cluster"])): str(r["digest"]) for r in found}


def recorded_digests(metadata: str | None) -> dict[str, str]:
    """The digests a commit's `userMetadata` names (none when it names none)."""
    if not metadata:
        return {}
    try:
        found = json.loads(metadata).get(DIGESTS_KEY)
    except (ValueError, AttributeError):
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def unchanged(now: Mapping[str, str], last: Mapping[str, str]) -> bool:
    """Whether every cluster of `now` has the digest `last` names for it."""
    return bool(now) and all(last.get(c) == d for c, d in now.items())


# The digest of a cluster without a row (no topic at all).
EMPTY = "empty"


def record_view(rows: DataFrame, ref: TableRef, txn: Transaction, clusters: Sequence[str],
                what: str, always: bool = False) -> bool:
    """Append `rows` (materialized) of `clusters` to `ref` as one idempotent commit carrying
    their digests, unless (`always` false) the table's latest commit names the same digest
    for every one of `clusters`; whether it was appended."""
    found = digests(rows)
    now = {c: found.get(c, EMPTY) for c in clusters}
    if not always:
        latest = last_commit(rows.sparkSession, ref)
        if latest is not None and unchanged(now, recorded_digests(latest[1])):
            log.info("%s of %s unchanged since version %d of %s: not recorded again", what,
                     ", ".join(sorted(now)), latest[0], ref.text)
            return False
    append_once(rows, ref, txn, user_metadata={DIGESTS_KEY: dict(sorted(now.items()))})
    return True


def marked_view(live: DataFrame, clusters: Sequence[str], live_schema: StructType,
                snapshot_columns: Sequence[str], run_id: str, taken: dt.datetime
                ) -> DataFrame:
    """A kind's live rows (`live_schema`, `cluster` first) as the rows of its snapshot
    table (`snapshot_columns`: the run id, the live columns, `snapshot_at`), with one
    marker row per cluster (every other column null), so that a cluster whose rows are all
    gone still has a newest snapshot of its own."""
    markers = live.sparkSession.createDataFrame(
        [(c, *([None] * (len(live_schema.fields) - 1))) for c in sorted(clusters)],
        live_schema)
    return live.unionByName(markers).select(
        F.lit(run_id).alias("run_id"), "*", F.lit(taken).cast("timestamp").alias("snapshot_at")
    ).select(*snapshot_columns)
