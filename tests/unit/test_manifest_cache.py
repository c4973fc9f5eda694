"""The key of the manifest rows kept in a shared Connect session (`run.manifest_cache`), the
commit marks it is made of, and sessions that keep nothing (classic Spark)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from provisioning.delta.tables import Commit, TableRef, latest_commit
from provisioning.run.manifest_cache import VIEW_PREFIX, cache_key, manifest_rows
from provisioning.session import outlives_run
from tests.helpers import write_manifest_table

T1, T2 = "/data/manifests/topics", "catalog.db.more_topics"
V3 = Commit(3, '{"timestamp":1,"operation":"WRITE"}')
V4 = Commit(4, '{"timestamp":2,"operation":"WRITE"}')


def test_the_same_tables_commits_and_clusters_make_the_same_key() -> None:
    key = cache_key("manifest", [(T1, V3), (T2, V4)], ("east", "west"))
    assert key == cache_key("manifest", [(T1, V3), (T2, V4)], ("west", "east", "east"))
    assert key.view == f"{VIEW_PREFIX}{key.group}_{key.entry}"
    assert key.view.isidentifier() and key.view == key.view.lower()
    assert len(key.group) == len(key.entry) == 20


def test_a_new_version_or_a_recreated_table_is_another_entry_of_the_same_group() -> None:
    key = cache_key("manifest", [(T1, V3)], ("east",))
    moved = cache_key("manifest", [(T1, Commit(4, V3.marks))], ("east",))
    recreated = cache_key("manifest", [(T1, Commit(3, '{"timestamp":9,"operation":"WRITE"}'))],
                          ("east",))
    assert moved.group == recreated.group == key.group
    assert len({key.entry, moved.entry, recreated.entry}) == 3
    # one table of two moved on
    assert (cache_key("manifest", [(T1, V3), (T2, V3)], ("east",)).group
            == cache_key("manifest", [(T1, V3), (T2, V4)], ("east",)).group)
    assert (cache_key("manifest", [(T1, V3), (T2, V3)], ("east",)).entry
            != cache_key("manifest", [(T1, V3), (T2, V4)], ("east",)).entry)


def test_other_clusters_tables_or_kind_are_another_group() -> None:
    key = cache_key("manifest", [(T1, V3), (T2, V4)], ("east",))
    others = [
        cache_key("manifest", [(T1, V3), (T2, V4)], ("east", "west")),
        cache_key("manifest", [(T2, V4), (T1, V3)], ("east",)),
        cache_key("manifest", [(T1, V3)], ("east",)),
        cache_key("ACL manifest", [(T1, V3), (T2, V4)], ("east",)),
    ]
    assert len({key.group, *(k.group for k in others)}) == 5


def test_a_recreated_table_has_the_same_version_and_other_marks(spark: Any,
                                                                warehouse: Path) -> None:
    path = warehouse / "manifest"
    rows = [{"cluster": "local", "topic": "t1"}]
    write_manifest_table(spark, path, rows)
    first = latest_commit(spark, TableRef(str(path)))
    assert first is not None and first.version == 0
    assert latest_commit(spark, TableRef(str(path))) == first  # stable between lookups
    shutil.rmtree(path)
    write_manifest_table(spark, path, rows)
    again = latest_commit(spark, TableRef(str(path)))
    assert again is not None and again.version == 0 and again.marks != first.marks
    write_manifest_table(spark, path, rows)
    assert latest_commit(spark, TableRef(str(path))) == Commit(1, _marks_of(spark, path))
    assert latest_commit(spark, TableRef(str(warehouse / "none"))) is None


def _marks_of(spark: Any, path: Path) -> str:
    row = spark.sql(f"DESCRIBE HISTORY '{path}' LIMIT 1").selectExpr(
        "to_json(named_struct('timestamp', unix_micros(timestamp), 'operation', operation, "
        "'operationMetrics', operationMetrics)) AS marks").first()
    return str(row["marks"])


def test_a_classic_session_keeps_nothing_between_runs(spark: Any, warehouse: Path) -> None:
    path = warehouse / "manifest"
    write_manifest_table(spark, path, [{"cluster": "local", "topic": "t1"}])
    commit = latest_commit(spark, TableRef(str(path)))
    assert commit is not None
    assert not outlives_run(spark)
    calls: list[str] = []

    def validated() -> Any:
        calls.append("validated")
        return spark.read.format("delta").load(str(path))

    for _ in range(2):
        rows = manifest_rows(spark, "manifest", [(str(path), commit)], ("local",), validated,
                             lambda df: df.localCheckpoint(eager=True))
        assert [r["topic"] for r in rows.collect()] == ["t1"]
    assert calls == ["validated", "validated"]
    # SHOW VIEWS, as the cache itself lists them: listTables decodes every table of the
    # session's catalog, which the tests' interpreted session refuses for some.
    assert spark.sql(f"SHOW VIEWS LIKE '{VIEW_PREFIX}*'").collect() == []
