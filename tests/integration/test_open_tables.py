"""Every table the job writes opens in another Delta engine: delta-rs (the `deltalake` package)
reads each of them, row for row as Spark does, after runs as thin clients of a Spark
Connect server (the mode whose writes once put collated types in the Delta log; classic
spark-submit writes through the same DataFrame code, and its flows are proved by
test_provision_e2e[classic]).

The tables: a manifest from `load_manifest` and one from `import`, the audit, runs,
snapshots and lock tables. Through Spark Connect, Spark can write string columns to the
Delta log as `string collate UTF8_BINARY`, a type other readers refuse; the job writes
plain types. Tables an earlier release wrote that way keep working: the job appends to
them, and `maintain` rewrites their schema to plain types, keeping every row.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from provisioning.registry import AUDIT
from schemas import RUNS, SNAPSHOT
from tests.helpers import REPO, run_cli, write_conf

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

MANIFEST = REPO / "conf" / "examples" / "desired_topics.yaml"
TABLES = ("desired_topics", "imported", "topic_audit", "provision_runs", "topic_snapshots",
          "provision_runs_locks")


def _plain(value: Any, dtype: DataType) -> Any:
    """A value as plain Python, whichever reader produced it (maps as dicts, UTC naive)."""
    if value is None:
        return None
    if isinstance(dtype, MapType):
        items = value.items() if isinstance(value, dict) else value
        return {k: _plain(v, dtype.valueType) for k, v in items}
    if isinstance(dtype, ArrayType):
        return [_plain(v, dtype.elementType) for v in value]
    if isinstance(dtype, StructType):
        return {f.name: _plain(value[f.name], f.dataType) for f in dtype.fields}
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def _rows(records: list[Any], schema: StructType) -> list[str]:
    return sorted(json.dumps(_plain(r, schema), sort_keys=True, default=str) for r in records)


def assert_readable_everywhere(spark: Any, path: Path) -> None:
    """delta-rs opens the table, its schema has plain types only, and its rows are Spark's."""
    from deltalake import DeltaTable

    table = DeltaTable(str(path))
    assert "collate" not in table.schema().to_json(), (path, table.schema().to_json())
    by_spark = spark.read.format("delta").load(str(path))
    seen = table.to_pyarrow_table().to_pylist()
    assert _rows(seen, by_spark.schema) == _rows(
        [r.asDict(recursive=True) for r in by_spark.collect()], by_spark.schema)
    assert seen, path  # a table the run wrote rows to


def _delta_log_types(path: Path) -> set[str]:
    """Every type name the table's latest schema in its Delta log uses."""
    schema = None
    for commit in sorted((path / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "metaData" in action:
                schema = action["metaData"]["schemaString"]
    assert schema is not None
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("type", "elementType", "keyType", "valueType") \
                        and isinstance(value, str):
                    found.add(value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(json.loads(schema))
    return found


def test_every_table_the_job_writes_opens_in_delta_rs(
        kafka: Any, connect_server: Any, spark: Any, tmp_path: Path) -> None:
    cli = functools.partial(run_cli, remote=connect_server.address)
    broker = kafka
    warehouse = tmp_path / "wh"
    conf = write_conf(tmp_path / "conf.yaml", broker.bootstrap_servers, warehouse)
    loaded = cli(["--source", str(MANIFEST), "--table", str(warehouse / "desired_topics")],
                 job="jobs/load_manifest.py")
    assert loaded.returncode == 0, loaded.output[-3000:]
    applied = cli(["apply", "--conf", str(conf)])
    assert applied.returncode == 0, applied.output[-3000:]
    # a topic no manifest names, for import to adopt
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        admin.create_topics({"legacy.orders": {"num_partitions": 2, "replication_factor": 1,
                                               "configs": {"retention.ms": "86400000"}}},
                            raise_errors=True, wait_for_metadata=True)
    finally:
        admin.close()
    imported = cli(["import", "--conf", str(conf), "--table", str(warehouse / "imported"),
                    "--include-protected", "--topics", "legacy.*"])
    assert imported.returncode == 0, imported.output[-3000:]
    # the apply's snapshot was of a cluster without topics yet: a later one lists them
    snapshot = cli(["snapshot", "--conf", str(conf)])
    assert snapshot.returncode == 0, snapshot.output[-3000:]

    for name in TABLES:
        assert_readable_everywhere(spark, warehouse / name)
        assert not any("collate" in t for t in _delta_log_types(warehouse / name)), name


LEGACY_WRITER = """
import sys
from pyspark.sql import SparkSession, functions as F
from schemas import RUNS, SNAPSHOT
from provisioning.registry import AUDIT
spark = SparkSession.builder.remote(sys.argv[1]).create()
base = sys.argv[2]
# What earlier releases did through Spark Connect: columns cast to the schema's own types,
# which the server writes as `string collate UTF8_BINARY`.
for name, schema in (("topic_audit", AUDIT), ("provision_runs", RUNS),
                     ("topic_snapshots", SNAPSHOT)):
    rows = spark.range(1).select(*[F.lit(None).cast(f.dataType).alias(f.name)
                                   for f in schema.fields])
    rows = rows.withColumn("run_id", F.lit("legacy-run").cast(schema["run_id"].dataType))
    rows.write.format("delta").save(f"{base}/{name}")
spark.stop()
"""


def test_tables_an_earlier_release_wrote_with_collations_are_appended_then_made_plain(
        kafka: Any, connect_server: Any, spark: Any, tmp_path: Path) -> None:
    cli = functools.partial(run_cli, remote=connect_server.address)
    warehouse = tmp_path / "wh"
    legacy = subprocess.run([sys.executable, "-c", LEGACY_WRITER, connect_server.address,
                             str(warehouse)], cwd=REPO, capture_output=True, text=True,
                            timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert legacy.returncode == 0, legacy.stderr[-3000:]
    legacy_tables = ("topic_audit", "provision_runs", "topic_snapshots")
    for name in legacy_tables:
        assert "string collate UTF8_BINARY" in _delta_log_types(warehouse / name), name

    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse)
    # The example topics may be live already (the module's first test): one topic of this
    # test's own gives the apply a change, so it records its plan in the legacy audit table.
    source = tmp_path / "desired.yaml"
    source.write_text(MANIFEST.read_text() + "- {cluster: local, topic: legacy.appended, "
                      "partitions: 1, replication_factor: 1}\n")
    loaded = cli(["--source", str(source), "--table", str(warehouse / "desired_topics")],
                 job="jobs/load_manifest.py")
    assert loaded.returncode == 0, loaded.output[-3000:]
    applied = cli(["apply", "--conf", str(conf), "--json"])
    assert applied.returncode == 0, applied.output[-3000:]
    run_id = applied.json()["run_id"]
    before = {name: spark.read.format("delta").load(str(warehouse / name)).collect()
              for name in legacy_tables}
    assert sorted({r["run_id"] for r in before["topic_audit"]}) == sorted(["legacy-run", run_id])

    maintained = cli(["maintain", "--conf", str(conf), "--json"])
    assert maintained.returncode == 0, maintained.output[-3000:]
    retyped = {t["role"]: t["retyped_columns"] for t in maintained.json()["tables"]}
    # The apply's claim made its lock table: it had a change (legacy.appended).
    assert (warehouse / "provision_runs_locks" / "_delta_log").is_dir()
    assert retyped == {"locks": [],
                       **{role: [f.name for f in schema.fields
                                              if "string" in f.dataType.simpleString()]
                                       for role, schema in (("audit", AUDIT), ("runs", RUNS),
                                                            ("snapshots", SNAPSHOT))}}
    for name in legacy_tables:
        assert not any("collate" in t for t in _delta_log_types(warehouse / name)), name
        after = spark.read.format("delta").load(str(warehouse / name)).where(
            f"run_id != '{maintained.json()['run_id']}'")  # maintain records itself
        assert _rows([r.asDict(recursive=True) for r in after.collect()], after.schema) == \
            _rows([r.asDict(recursive=True) for r in before[name]], after.schema)
        assert_readable_everywhere(spark, warehouse / name)
