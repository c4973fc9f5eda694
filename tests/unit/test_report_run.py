"""`report --run-id`: one run's rows of every kind, cut at 50 rows per `--limit`, saying so
and how to see the rest (real Delta tables)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from provisioning.conf import Conf, TablesConf
from provisioning.views.report import render_run_view, run_view
from tests.builders import audit_df, runs_df
from tests.helpers import VIEWS

RUN = "20261125T000000Z-aaaa"
WHEN = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)


def _conf(tmp_path: Path) -> Conf:
    return Conf(source="c.yaml", digest="d", clusters={},
                tables=TablesConf(manifests=(), audit=str(tmp_path / "audit"),
                                  runs=str(tmp_path / "runs"),
                                  snapshots=str(tmp_path / "snapshots")))


def _tables(spark: Any, tmp_path: Path, topics: int) -> None:
    runs_df(spark, [{"run_id": RUN, "command": "apply", "status": "succeeded",
                     "exit_code": 0, "started_at": WHEN, "finished_at": WHEN,
                     "outcome_counts": {"created": topics}}]).write.format("delta").save(
        str(tmp_path / "runs"))
    audit_df(spark, [{"run_id": RUN, "cluster": "local", "topic": f"t{i:03d}",
                      "action": "CREATE", "phase": phase, "outcome": outcome,
                      "recorded_at": WHEN}
                     for i in range(topics)
                     for phase, outcome in (("plan", "planned"), ("apply", "created"))]
             ).write.format("delta").save(str(tmp_path / "audit"))


def test_a_run_with_more_rows_than_its_limit_says_how_many_were_cut_and_how_to_see_them(
        spark: Any, tmp_path: Path) -> None:
    _tables(spark, tmp_path, 60)
    payload = run_view(spark, VIEWS, _conf(tmp_path), RUN, (), None, limit=1)
    assert [(r["topic"], r["phase"]) for r in payload["audit"]] == [
        (f"t{i:03d}", phase) for i in range(25) for phase in ("plan", "apply")]
    assert (payload["audit_not_shown"], payload["limit"]) == (70, 1)
    lines = render_run_view(VIEWS, payload)
    assert lines[:2] == [
        f"run {RUN}: apply succeeded (exit 0) {payload['run']['started_at']} -> "
        f"{payload['run']['finished_at']}",
        "  outcomes: created=60"]
    assert lines[2:4] == ["  local/t000 CREATE: plan planned -> apply created",
                          "  local/t001 CREATE: plan planned -> apply created"]
    assert lines[-1] == (f"  ... 70 more audit row(s) not shown (the first 50, 50 per "
                         f"--limit): report --run-id {RUN} --limit 3 shows them all, or "
                         "--cluster / --topics narrow it")
    assert len(lines) == 2 + 25 + 1


def test_a_run_within_its_limit_is_shown_whole_without_a_note(spark: Any, tmp_path: Path
                                                              ) -> None:
    _tables(spark, tmp_path, 60)
    payload = run_view(spark, VIEWS, _conf(tmp_path), RUN, (), None, limit=3)
    assert (len(payload["audit"]), payload["audit_not_shown"]) == (120, 0)
    assert render_run_view(VIEWS, payload)[-1] == (
        "  local/t059 CREATE: plan planned -> apply created")
