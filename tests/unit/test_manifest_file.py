"""Manifest files: typed rows in schema order, every shape error named."""

from __future__ import annotations

from pathlib import Path

import pytest

from provisioning.errors import UsageError
from provisioning.kinds.topics.cli import load_manifest_file
from schemas import MANIFEST, column_names

REPO = Path(__file__).resolve().parents[2]


def test_example_manifest_rows(tmp_path: Path) -> None:
    rows = load_manifest_file(REPO / "conf" / "examples" / "desired_topics.yaml")
    by_topic = {dict(zip(column_names(MANIFEST), r, strict=True))["topic"]:
                dict(zip(column_names(MANIFEST), r, strict=True)) for r in rows}
    assert by_topic["orders.created"] == {
        "cluster": "local", "topic": "orders.created", "state": None, "partitions": 6,
        "replication_factor": 1, "replica_assignment": None,
        "configs": {"cleanup.policy": "delete", "retention.ms": "604800000"},
        "owner": "checkout", "force": None,
    }
    assert by_topic["inventory.levels"]["replica_assignment"] == {0: [1], 1: [1]}


def test_shape_errors_are_listed_by_row(tmp_path: Path) -> None:
    f = tmp_path / "m.yaml"
    f.write_text(
        "- {cluster: a, topic: t1, partitions: six}\n"
        "- {cluster: a, topic: t2, partitons: 3, force: maybe}\n"
        "- not-a-mapping\n"
    )
    with pytest.raises(UsageError) as err:
        load_manifest_file(f)
    assert str(err.value).splitlines()[1:] == [
        "  - row 0 ('t1').partitions: expected an integer, got 'six'",
        "  - row 1 ('t2').partitons: unknown column (columns: cluster, configs, force, owner, "
        "partitions, replica_assignment, replication_factor, state, topic)",
        "  - row 1 ('t2').force: expected true or false",
        "  - row 2: expected a mapping",
    ]
