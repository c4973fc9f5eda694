"""The bad-conf corpus under tests/data/bad_confs: every problem named, all at once."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from provisioning.errors import ConfError
from tests.helpers import load_conf

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad_confs"
EXPECTED = yaml.safe_load((CORPUS / "expected.yaml").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_conf_reports_every_problem(name: str) -> None:
    with pytest.raises(ConfError) as err:
        load_conf(CORPUS / name)
    assert err.value.problems == EXPECTED[name]
    assert "correct horse" not in str(err.value)


def test_every_corpus_file_has_expectations() -> None:
    assert sorted(p.name for p in CORPUS.glob("*.yaml") if p.name != "expected.yaml") == \
        sorted(EXPECTED)
