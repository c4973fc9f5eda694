"""The job's tables a run must find in place, made in one place as it starts
(delta.tables.prepare_tables): each missing one created on a helper thread with its columns
and properties, an existing one left as it is, and a write that comes while a table is
being made waits for it. Which tables those are, per command (run.commands.job_tables)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from provisioning.delta.lock import LOCK_TABLE_PROPERTIES
from provisioning.delta.tables import (
    TABLE_PROPERTIES,
    JobTable,
    TableRef,
    append,
    prepare_tables,
)
from provisioning.kinds.groups.schema import GROUP_INVENTORY
from provisioning.registry import AUDIT
from provisioning.run.commands import job_tables
from schemas import DISKS, INVENTORY, LOCKS, RUNS, SNAPSHOT, VIOLATIONS
from tests.helpers import RUNS as RUN_KINDS
from tests.helpers import parse_conf


def _history(spark: Any, path: Path) -> list[tuple[int, str, str]]:
    """(version, operation, rows written) of every commit."""
    return [(int(h["version"]), h["operation"], h["operationMetrics"]["numOutputRows"])
            for h in spark.sql(f"DESCRIBE HISTORY '{path}'").orderBy("version").collect()]


def _properties(spark: Any, path: Path) -> dict[str, str]:
    return dict(spark.sql(f"DESCRIBE DETAIL '{path}'").first()["properties"])


def test_missing_tables_are_made_with_their_columns_and_properties(spark: Any,
                                                                   tmp_path: Path) -> None:
    audit, locks = tmp_path / "audit", tmp_path / "locks"
    futures = prepare_tables(spark, [JobTable(str(audit), AUDIT),
                                     JobTable(str(locks), LOCKS, LOCK_TABLE_PROPERTIES)])
    assert [f.result(timeout=300) for f in futures] == [None, None]
    for path, schema in ((audit, AUDIT), (locks, LOCKS)):
        made = spark.read.format("delta").load(str(path)).schema
        assert [(f.name, f.dataType.simpleString()) for f in made.fields] == \
            [(f.name, f.dataType.simpleString()) for f in schema.fields]
        assert _history(spark, path) == [(0, "WRITE", "0")]
    assert _properties(spark, audit) == TABLE_PROPERTIES
    assert {k: v for k, v in _properties(spark, locks).items()
            if k in LOCK_TABLE_PROPERTIES} == LOCK_TABLE_PROPERTIES


def test_an_existing_table_is_left_as_it_is(spark: Any, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    spark.createDataFrame([("r1",)], "run_id string").coalesce(1).write.format("delta").save(
        str(runs))
    (made,) = prepare_tables(spark, [JobTable(str(runs), RUNS)])
    made.result(timeout=300)
    assert _history(spark, runs) == [(0, "WRITE", "1")]
    assert [r["run_id"] for r in spark.read.format("delta").load(str(runs)).collect()] == ["r1"]


def test_a_write_while_its_table_is_being_made_waits_for_it(spark: Any, tmp_path: Path
                                                            ) -> None:
    snapshots = tmp_path / "snapshots"
    prepare_tables(spark, [JobTable(str(snapshots), SNAPSHOT)])
    rows = spark.createDataFrame([{**dict.fromkeys(SNAPSHOT.fieldNames()), "cluster": "c",
                                   "topic": "t"}], SNAPSHOT)
    append(rows, TableRef(str(snapshots)))
    assert _history(spark, snapshots) == [(0, "WRITE", "0"), (1, "WRITE", "1")]


def test_a_run_makes_beforehand_only_the_tables_it_must_find_in_place() -> None:
    """`check`'s tables, which it reads back, and a lock log named in the catalog (its
    properties go with its CREATE TABLE); the runs row, the audit, the snapshots and a lock
    log at a path are made by their first append (tests/integration/test_appends.py: the
    table and its properties in that commit; test_reliability: claims racing to make the
    lock log)."""
    conf = parse_conf({"clusters": {"c": {"bootstrap_servers": "h:1"}},
                       "tables": {"manifests": ["m"], "audit": "w/audit", "runs": "w/runs",
                                  "snapshots": "w/snapshots", "acl_manifests": ["acl"]}}, "t")
    made = {command: [(t.text, t.schema, dict(t.properties))
                      for t in job_tables(conf, command, RUN_KINDS)]
            for command in ("plan", "apply", "check", "snapshot", "import")}
    plain = dict(TABLE_PROPERTIES)
    assert made == {
        "plan": [],
        "apply": [],
        "check": [("w/runs_violations", VIOLATIONS, plain),
                  ("w/runs_inventory", INVENTORY, plain), ("w/runs_disks", DISKS, plain),
                  # The group inventory's earlier rows tell offsets the broker dropped.
                  ("w/runs_inventory_groups", GROUP_INVENTORY, plain)],
        "snapshot": [],
        "import": [],
    }
    catalog = parse_conf({"clusters": {"c": {"bootstrap_servers": "h:1"}},
                          "tables": {"manifests": ["m"], "audit": "db.audit",
                                     "runs": "db.runs", "snapshots": "db.snapshots"}}, "t")
    assert [(t.text, t.schema, dict(t.properties))
            for t in job_tables(catalog, "apply", RUN_KINDS)] == [
        ("db.runs_locks", LOCKS, LOCK_TABLE_PROPERTIES)]
