"""Validated manifest rows kept in the shared Spark Connect session (`run.manifest_cache`):
`plan` runs through spark-submit.sh as thin clients of the session's Connect server, one
after another, each a process of its own. An unchanged manifest (topics, ACL bindings) is
served from the session's cache; a new version of it, or a table dropped and made again at
the same version number, is read and validated again."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from provisioning.kinds.acls.schema import ACL_MANIFEST
from schemas import column_names
from tests.helpers import run_cli, write_conf, write_manifest_table

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

BAD = "topic: 'mcache bad' has characters outside [a-zA-Z0-9._-]"


def _dup(version: int, table: Path) -> str:
    return (f"duplicate: (local, mcache.dup) appears 2 times, in {table}@{version}, "
            f"{table}@{version}; no copy is applied")


def _row(topic: str, partitions: int) -> dict[str, Any]:
    return {"cluster": "local", "topic": topic, "partitions": partitions,
            "replication_factor": 1}


def _plan(cli: Any, conf: Path, *args: str, code: int = 0) -> tuple[str, str]:
    """A `plan` run (no validateOnly) that exits `code` (1: rows rejected): its run id and
    its output."""
    run_id, output, _ = _plan_json(cli, conf, *args, code=code)
    return run_id, output


def _plan_json(cli: Any, conf: Path, *args: str, code: int = 0) -> tuple[str, str, Any]:
    done = cli(["plan", "--conf", str(conf), "--no-validate", "--json", *args])
    assert done.returncode == code, done.output[-3000:]
    return done.json()["run_id"], done.output, done.json()


def _with_acls(conf: Path, table: Path) -> Path:
    """`conf` with `table` as its ACL manifest."""
    data = yaml.safe_load(conf.read_text())
    data["tables"]["acl_manifests"] = [str(table)]
    out = conf.with_name("with-acls.yaml")
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def _bindings(document: Any) -> list[tuple[Any, ...]]:
    """The plan's ACL rows: binding, outcome, source version, error message."""
    return sorted((b["binding"], b["outcome"], b["source_version"], b["error_message"])
                  for b in document["acls"]["bindings"])


def _plan_rows(spark: Any, warehouse: Path, run_id: str) -> list[tuple[Any, ...]]:
    """The run's topic plan rows: topic, action, outcome, requested partitions, source version,
    error message."""
    rows = (spark.read.format("delta").load(str(warehouse / "topic_audit"))
            .where(f"run_id = '{run_id}' AND phase = 'plan' AND acl IS NULL").collect())
    return sorted((r["topic"], r["action"], r["outcome"], r["requested_partitions"],
                   r["source_version"], r["error_message"]) for r in rows)


def test_an_unchanged_manifest_is_served_from_the_session_cache_until_it_changes(
        kafka: Any, connect_server: Any, spark: Any, tmp_path: Path) -> None:
    cli = functools.partial(run_cli, remote=connect_server.address)
    warehouse = tmp_path / "wh"
    table = warehouse / "desired_topics"
    conf = write_conf(tmp_path / "conf.yaml", kafka.bootstrap_servers, warehouse)
    write_manifest_table(spark, table, [
        _row("mcache.a", 1), _row("mcache.b", 2), _row("mcache bad", 1),
        _row("mcache.dup", 1), _row("mcache.dup", 2)])
    first_rows = [
        ("mcache bad", "CREATE", "rejected", 1, 0, BAD),
        ("mcache.a", "CREATE", "planned", 1, 0, None),
        ("mcache.b", "CREATE", "planned", 2, 0, None),
        ("mcache.dup", "CREATE", "rejected", 1, 0, _dup(0, table)),
        ("mcache.dup", "CREATE", "rejected", 2, 0, _dup(0, table)),
    ]
    read = f"manifest rows of {table} v{{}} read and validated, kept in the session cache"
    cached = f"manifest rows of {table} v{{}} from the session cache"

    acls = warehouse / "acls"
    spark.createDataFrame([tuple(r.get(c) for c in column_names(ACL_MANIFEST)) for r in (
        {"cluster": "local", "principal": "User:app", "resource_type": "TOPIC",
         "resource_name": "mcache.a", "operations": ["READ"]},
        {"cluster": "local", "principal": "app", "resource_type": "TOPIC",
         "resource_name": "mcache.b", "operations": ["READ"]})], ACL_MANIFEST
    ).write.format("delta").save(str(acls))
    # The session's broker has no authorizer: the valid binding is planned all the same.
    acl_rows = [
        ("ALLOW User:app READ TOPIC mcache.a (LITERAL) host *", "planned", 0, None),
        ("ALLOW app READ TOPIC mcache.b (LITERAL) host *", "rejected", 0,
         "principal: 'app' is not Type:name (e.g. User:orders-app)"),
    ]
    acl_read = f"ACL manifest rows of {acls} v0 read and validated, kept in the session cache"
    acl_cached = f"ACL manifest rows of {acls} v0 from the session cache"

    run_id, output, document = _plan_json(cli, _with_acls(conf, acls), code=1)
    assert read.format(0) in output and cached.format(0) not in output, output[-3000:]
    assert acl_read in output and acl_cached not in output, output[-3000:]
    assert "step manifest read: " in output and "step ACL manifest read: " in output
    assert _plan_rows(spark, warehouse, run_id) == first_rows
    assert _bindings(document) == acl_rows

    run_id, output, document = _plan_json(cli, _with_acls(conf, acls), code=1)
    assert cached.format(0) in output and read.format(0) not in output, output[-3000:]
    assert acl_cached in output and acl_read not in output, output[-3000:]
    assert _plan_rows(spark, warehouse, run_id) == first_rows
    assert _bindings(document) == acl_rows

    # A new version: mcache.a changed, mcache.b and the bad rows gone, mcache.c new.
    write_manifest_table(spark, table, [_row("mcache.a", 3), _row("mcache.c", 1)])
    run_id, output = _plan(cli, conf)
    assert read.format(1) in output and cached.format(1) not in output, output[-3000:]
    assert _plan_rows(spark, warehouse, run_id) == [
        ("mcache.a", "CREATE", "planned", 3, 1, None),
        ("mcache.c", "CREATE", "planned", 1, 1, None),
    ]
    # Another scope is served by the same rows (the scope applies after the cache).
    run_id, output = _plan(cli, conf, "--topics", "mcache.c*")
    assert cached.format(1) in output, output[-3000:]
    assert _plan_rows(spark, warehouse, run_id) == [
        ("mcache.c", "CREATE", "planned", 1, 1, None)]

    # The table dropped and made again, up to the same version number with other rows.
    shutil.rmtree(table)
    write_manifest_table(spark, table, [_row("mcache.x", 1)])
    write_manifest_table(spark, table, [_row("mcache.a", 5), _row("mcache.d", 1)])
    run_id, output = _plan(cli, conf)
    assert read.format(1) in output and cached.format(1) not in output, output[-3000:]
    assert _plan_rows(spark, warehouse, run_id) == [
        ("mcache.a", "CREATE", "planned", 5, 1, None),
        ("mcache.d", "CREATE", "planned", 1, 1, None),
    ]
