"""The replica moves of PLAN rows: which live topics are reassigned, each partition's replicas
before -> after, and the checks made before sending them.

A row gets a `reassignment` when it wants its live topic present (no row errors, the topic
visible) and gives a `replication_factor` or a `replica_assignment`, and some existing
partition's replicas differ from what it asks: a partition with another number of
replicas than the replication factor (each partition is judged, not only the first one
the snapshot's `live_replication_factor` reads), or whose replicas differ from the
assignment's entry for it. Targets of a replication factor come from
`placement.with_targets` over the cluster's whole live assignment; an assignment's entries
are taken as they are. New partitions are not moved (CreatePartitions places them) and
live partitions an assignment does not list are left alone (fewer partitions stay DRIFT).

A partition being reassigned already (REASSIGNMENT_IN_FLIGHT, from
ListPartitionReassignments) is never sent again: when that move goes where the row asks
(the replication factor, or the assignment's entry), it is kept as `in_flight`, which a
later run waits for and finishes (a run killed mid-move); otherwise it is another move,
and the row gets a problem. Its target (its replicas without the ones being removed) is
its current replicas for the load and for `before` -> `after`: before are its replicas
without the ones being added.

Action: a row with moves is REASSIGN, or stays ALTER when it also changes configs or
partitions (those are made first, then the replicas); its `replication_factor` and
`replica_assignment` drift items become supported. Rows without moves are untouched.

Checks (AlterPartitionReassignments has no validateOnly), each a line of
`reassign_problems`, which make the row `rejected` (`check_results`): every target broker
is live (registered and not fenced), a partition's replicas are distinct and not empty,
and no partition is being moved elsewhere. A replication factor above the live brokers is
not a problem here: the always-on policy `replication_factor_fits_cluster` blocks it.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning import names
from provisioning.kinds.reassign import names as move_names
from provisioning.kinds.reassign.placement import with_targets
from schemas import PLAN, TOPIC_RESULT, column_names

_KEYS = ["cluster", "topic"]
_PARTITION_KEYS = ["cluster", "topic", "partition"]
# The drift items a reassignment changes in place.
_MOVED_FIELDS = ("replication_factor", "replica_assignment")


def _no_row_errors() -> Column:
    return F.coalesce(F.size("row_errors"), F.lit(0)) <= 0


def _candidates(plan: DataFrame) -> DataFrame:
    """(cluster, topic, wanted replication factor, wanted assignment) of the rows that may
    move replicas."""
    wants = ((F.col("action").isin(names.ALTER, names.DRIFT, names.NOOP))
             & ~F.coalesce(F.col("state") == names.ABSENT, F.lit(False))
             & F.col("live_partitions").isNotNull() & F.col("live_error").isNull()
             & _no_row_errors()
             & (F.col("replication_factor").isNotNull()
                | F.col("replica_assignment").isNotNull()))
    return plan.where(wants).select(
        *_KEYS,
        # An assignment wins over a replication factor (validation refuses both at once).
        F.when(F.col("replica_assignment").isNull(), F.col("replication_factor"))
        .alias("_want_rf"),
        F.col("replica_assignment").alias("_want_assignment"),
    )


def _assigned() -> Column:
    """A candidate partition's entry in its row's assignment (null when the row gives none,
    or its assignment does not list the partition)."""
    return F.when(F.col("_want_assignment").isNotNull(),
                  F.try_element_at(F.col("_want_assignment"), F.col("partition")))


def _live_partitions(live: DataFrame) -> DataFrame:
    """Every live partition of every cluster (SNAPSHOT exploded): its replicas now."""
    return live.where(F.col("error_name").isNull() & F.col("replica_assignment").isNotNull()) \
        .select(*_KEYS, F.explode("replica_assignment").alias("partition", "_replicas"))


def _flights(in_flight: DataFrame) -> DataFrame:
    """REASSIGNMENT_IN_FLIGHT rows with the move's target and the replicas before it."""
    return in_flight.select(
        *_PARTITION_KEYS,
        F.filter("replicas", lambda r: ~F.array_contains(F.col("removing"), r))
        .alias("_flight_target"),
        F.filter("replicas", lambda r: ~F.array_contains(F.col("adding"), r))
        .alias("_flight_before"),
    )


def _listed(values: Column) -> Column:
    return F.concat(F.lit("["), F.array_join(values, ", "), F.lit("]"))


def _move_problems(after: Column, moving: Column, moving_elsewhere: Column) -> Column:
    """The check failures of one partition's move, as lines naming the partition (a move
    in flight sends nothing: only whether it goes where the row asks is checked)."""
    unknown = F.array_distinct(F.array_except(after, F.col("_broker_ids")))
    fenced = F.filter(unknown, lambda b: F.array_contains(F.col("_fenced"), b))
    missing = F.filter(unknown, lambda b: ~F.array_contains(F.col("_fenced"), b))
    where = F.format_string("partition %d", F.col("partition"))
    found = F.array(
        F.when(moving_elsewhere, F.format_string(
            "%s is being reassigned already, to %s, by a move this row does not ask for; it "
            "is left alone: wait for that move to finish (or cancel it) and plan again",
            where, _listed(F.col("_flight_target")))),
        F.when(~moving & (F.size(after) == 0),
               F.format_string("%s would have no replica", where)),
        F.when(~moving & (F.size(F.array_distinct(after)) != F.size(after)),
               F.format_string("%s: replicas %s are not distinct", where, _listed(after))),
        F.when(~moving & (F.size(fenced) > 0), F.format_string(
            "%s: broker(s) %s of target %s are fenced in cluster %s", where,
            F.array_join(F.array_sort(fenced), ", "), _listed(after), F.col("cluster"))),
        F.when(~moving & (F.size(missing) > 0), F.format_string(
            "%s: broker(s) %s of target %s are not live in cluster %s (live brokers: %s)",
            where, F.array_join(F.array_sort(missing), ", "), _listed(after),
            F.col("cluster"), F.array_join(F.col("_broker_ids"), ", "))),
    )
    return F.filter(found, lambda p: p.isNotNull())


def _moves(plan: DataFrame, live: DataFrame, clusters: DataFrame, in_flight: DataFrame
           ) -> DataFrame:
    """(cluster, topic, _reassignment, _problems) of every row with a move."""
    candidates = _candidates(plan)
    partitions = (_live_partitions(live)
                  .join(_flights(in_flight), on=_PARTITION_KEYS, how="left")
                  .join(candidates.withColumn("_candidate", F.lit(True)), on=_KEYS,
                        how="left"))
    moving = F.col("_flight_target").isNotNull()
    current = F.coalesce(F.col("_flight_target"), F.col("_replicas"))
    want_assigned = _assigned()
    wanted = F.col("_candidate") & (F.col("_want_rf").isNotNull() | want_assigned.isNotNull())
    placing = partitions.select(
        *_PARTITION_KEYS,
        current.alias("current"),
        F.when(wanted & ~moving, F.col("_want_rf")).alias("replication_factor"),
        F.when(wanted & ~moving, want_assigned).alias("assigned"),
    )
    targets = with_targets(placing, clusters)
    facts = clusters.select("cluster", F.col("broker_ids").alias("_broker_ids"),
                            F.coalesce(F.col("fenced_broker_ids"), F.array().cast("array<int>"))
                            .alias("_fenced"))
    judged = (partitions.where(wanted)
              .join(targets, on=_PARTITION_KEYS, how="left")
              .join(F.broadcast(facts), on="cluster", how="left")
              .withColumn("_broker_ids", F.coalesce("_broker_ids", F.array().cast("array<int>"))))
    goes_as_asked = F.when(want_assigned.isNotNull(), F.col("_flight_target") == want_assigned) \
        .otherwise(F.size("_flight_target") == F.col("_want_rf"))
    after = F.when(moving, F.col("_flight_target")).otherwise(F.col("after"))
    before = F.when(moving, F.col("_flight_before")).otherwise(F.col("_replicas"))
    short = F.col("_want_rf").isNotNull() & (F.size(after) != F.col("_want_rf"))
    changes = moving | (after != F.col("_replicas")) | short
    entry = F.struct(F.col("partition").alias("partition"), before.alias("before"),
                     after.alias("after"), moving.alias("in_flight"))
    problems = _move_problems(after, moving,
                              moving & ~F.coalesce(goes_as_asked, F.lit(False)))
    per_partition = judged.where(changes).select(
        *_KEYS, entry.alias("_entry"),
        F.struct(F.col("partition").alias("partition"), problems.alias("lines"))
        .alias("_partition_problems"))
    return per_partition.groupBy(*_KEYS).agg(
        F.array_sort(F.collect_list("_entry")).alias("_reassignment"),
        F.flatten(F.transform(F.array_sort(F.collect_list("_partition_problems")),
                              lambda p: p["lines"])).alias("_problems"))


def partitions_to_move(plan: DataFrame, live: DataFrame) -> DataFrame:
    """(cluster, topic, partition) of the live partitions that PLAN rows would move when no
    move is in flight: a partition with another number of replicas than its row's
    replication factor, or whose replicas differ from its entry in the row's assignment.
    With no move in flight these are exactly the partitions `with_reassignments` moves
    (placement keeps a partition whose replica count already matches), found without
    placing anything: a plan with none skips the placement."""
    partitions = _live_partitions(live).join(_candidates(plan), on=_KEYS, how="inner")
    assigned = _assigned()
    differs = F.when(F.col("_want_assignment").isNotNull(),
                     assigned.isNotNull() & (assigned != F.col("_replicas"))) \
        .otherwise(F.size("_replicas") != F.col("_want_rf"))
    return partitions.where(differs).select(*_PARTITION_KEYS)


def with_reassignments(plan: DataFrame, live: DataFrame, clusters: DataFrame,
                       in_flight: DataFrame) -> DataFrame:
    """PLAN rows with `reassignment`, `reassign_problems` and the REASSIGN action filled in.

    live: SNAPSHOT rows, every live topic of the run's clusters (their partitions make
      each broker's load).
    clusters: CLUSTER_STATE rows (live brokers, racks, fenced brokers).
    in_flight: REASSIGNMENT_IN_FLIGHT rows, every partition being reassigned now.
    """
    moves = _moves(plan, live, clusters, in_flight)
    has_moves = F.coalesce(F.size("_reassignment"), F.lit(0)) > 0
    supported = F.transform("drift", lambda d: F.struct(
        d["field"].alias("field"), d["desired"].alias("desired"), d["actual"].alias("actual"),
        (d["supported"] | d["field"].isin(*_MOVED_FIELDS)).alias("supported")))
    replaced = {
        "action": F.when(has_moves & (F.col("action") != names.ALTER), F.lit(move_names.REASSIGN))
        .otherwise(F.col("action")),
        "drift": F.when(has_moves, supported).otherwise(F.col("drift")),
        "reassignment": F.when(has_moves, F.col("_reassignment"))
        .otherwise(F.col("reassignment")),
        "reassign_problems": F.when(has_moves & (F.size("_problems") > 0), F.col("_problems"))
        .otherwise(F.col("reassign_problems")),
    }
    return (plan.join(moves, on=_KEYS, how="left")
            .select(*[replaced.get(c, F.col(c)).alias(c) for c in column_names(PLAN)]))


def moves_planned() -> Column:
    """True on PLAN rows that move replicas (REASSIGN, or an ALTER with a reassignment)."""
    return (F.col("action").isin(move_names.REASSIGN, names.ALTER)
            & (F.coalesce(F.size("reassignment"), F.lit(0)) > 0))


def check_results(plan: DataFrame) -> DataFrame:
    """TOPIC_RESULT rows (phase validate) of the rows that move replicas and no policy
    refused: `rejected` with INVALID_REASSIGNMENT and the reasons when the checks found a
    problem, else `validated`. AlterPartitionReassignments has no validateOnly: these
    checks are the validation a reassignment gets before it is sent."""
    allowed = F.coalesce(F.size("policy_violations"), F.lit(0)) <= 0
    refused = F.coalesce(F.size("reassign_problems"), F.lit(0)) > 0
    given = {
        "phase": F.lit(names.VALIDATE),
        "outcome": F.when(refused, F.lit(names.REJECTED)).otherwise(F.lit(names.VALIDATED)),
        "topic_id": F.col("live_topic_id"),
        "error_code": F.when(refused, F.lit(-1)).otherwise(F.lit(0)),
        "error_name": F.when(refused, F.lit(move_names.INVALID_REASSIGNMENT))
        .otherwise(F.lit("NONE")),
        "error_message": F.when(refused, F.array_join("reassign_problems", "; ")),
        "attempts": F.lit(0),
    }
    return plan.where(moves_planned() & allowed).select(
        *[given[c].cast(TOPIC_RESULT[c].dataType).alias(c) if c in given
          else F.col(c) if c in ("cluster", "topic")
          else F.lit(None).cast(TOPIC_RESULT[c].dataType).alias(c)
          for c in column_names(TOPIC_RESULT)])
