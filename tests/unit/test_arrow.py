"""Rows to Arrow record batches and back, as the admin tasks' mapInArrow carries them."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from chispa import assert_df_equality

from provisioning.run.arrow import arrow_schema, arrow_type, dict_rows, record_batches
from schemas import SNAPSHOT, TOPIC_RESULT, column_names

CONFIG = {"name": "retention.ms", "value": "1000", "source": "DYNAMIC_TOPIC_CONFIG",
          "read_only": False, "sensitive": False}


def _result(topic: str, **fields: Any) -> tuple[Any, ...]:
    values = dict.fromkeys(column_names(TOPIC_RESULT))
    values.update({"cluster": "c", "topic": topic, "phase": "apply", "outcome": "created",
                   **fields})
    return tuple(values[c] for c in column_names(TOPIC_RESULT))


ROWS = [
    _result("a", topic_id="id-a", error_code=0, error_name="NONE", result_partitions=3,
            result_replication_factor=1, result_configs=[CONFIG, {**CONFIG, "value": None,
                                                                 "sensitive": True}],
            attempts=1, result_assignment={0: [1, 2], 1: [2, 1]}),
    _result("b", outcome="failed", error_code=-1, error_name="KafkaConnectionError",
            error_message="socket disconnected", result_configs=[], attempts=0),
]


def test_every_column_type_of_the_job_schemas_has_an_arrow_type() -> None:
    assert str(arrow_schema(TOPIC_RESULT).field("result_assignment").type) == \
        "map<int32, list<item: int32>>"
    assert str(arrow_schema(SNAPSHOT).field("snapshot_at").type) == 'timestamp[us, tz=UTC]'
    with pytest.raises(TypeError, match="no Arrow type for"):
        from pyspark.sql.types import DecimalType
        arrow_type(DecimalType(10, 2))


def test_rows_go_out_as_batches_of_at_most_size_and_come_back_as_dicts() -> None:
    schema = arrow_schema(TOPIC_RESULT)
    batches = list(record_batches(iter(ROWS * 3), schema, size=4))
    assert [b.num_rows for b in batches] == [4, 2]
    back = list(dict_rows(batches))
    assert back[0] == dict(zip(column_names(TOPIC_RESULT), ROWS[0], strict=True))
    assert back[0]["result_assignment"] == {0: [1, 2], 1: [2, 1]}
    assert back[1]["result_configs"] == []
    assert list(record_batches(iter([]), schema)) == []


def test_a_row_of_the_wrong_width_is_refused() -> None:
    with pytest.raises(ValueError):
        list(record_batches(iter([ROWS[0], ROWS[1][:-1]]), arrow_schema(TOPIC_RESULT)))


def test_naive_timestamps_are_utc() -> None:
    at = dt.datetime(2026, 1, 2, 3, 4, 5)
    schema = pa.schema([pa.field("at", arrow_type(SNAPSHOT["snapshot_at"].dataType))])
    (batch,) = record_batches(iter([(at,)]), schema)
    assert batch.column(0)[0].as_py() == at.replace(tzinfo=dt.UTC)


def test_map_in_arrow_returns_the_rows_spark_would_build(spark: Any) -> None:
    target = arrow_schema(TOPIC_RESULT)
    rows = ROWS

    def task(batches: Any) -> Any:
        return record_batches((r for _ in dict_rows(batches) for r in rows[:1]), target)

    # one input row per output row: the task maps the input stream, as the admin tasks do
    out = spark.range(1).mapInArrow(task, TOPIC_RESULT)
    assert_df_equality(out, spark.createDataFrame(rows[:1], TOPIC_RESULT),
                       ignore_nullable=True)
