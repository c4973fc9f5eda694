"""Verify's reading of replica moves (kinds.reassign.tasks.verify_batches): a move the
controller has finished but a broker's metadata does not show yet is read again, not called
failed; one still off its target on the second look is failed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from provisioning import names, retry
from provisioning.kinds.reassign import names as move_names
from provisioning.kinds.reassign import tasks
from schemas import TOPIC_RESULT, column_names

ROW = {"cluster": "c", "topic": "t", "live_topic_id": None, "reassignment": [
    {"partition": 0, "before": [1, 2, 3], "after": [1, 2], "in_flight": False},
    {"partition": 1, "before": [2, 3, 1], "after": [2, 3], "in_flight": False}]}


def _verified(monkeypatch: pytest.MonkeyPatch,
              reads: Sequence[Mapping[tuple[str, int], str]]) -> tuple[dict[str, Any], int]:
    """The topic's verify result when the progress reads answer `reads` in turn (the last
    one for any read after), and how many reads were made."""
    made: list[int] = []

    def progress(_admin: Any, targets: Mapping[tuple[str, int], Sequence[int]]
                 ) -> tuple[dict[tuple[str, int], str], dict[str, dict[int, list[int]]]]:
        states = dict(reads[min(len(made), len(reads) - 1)])
        made.append(1)
        return states, {"t": {p: list(a) for (_, p), a in targets.items()}}

    monkeypatch.setattr(tasks, "reassign_progress", progress)
    monkeypatch.setattr(tasks, "CONFIRM_PAUSE_S", 0.0)
    monkeypatch.setattr(retry, "pause", lambda _s: None)
    monkeypatch.setattr(tasks.reassign, "throttle_topics", lambda *_a, **_k: {})
    admin: Any = SimpleNamespace(cluster=SimpleNamespace(name="c"))
    results: Iterator[Any] = tasks.verify_batches(admin, [ROW], deadline=float("inf"))
    (result,) = list(results)
    return dict(zip(column_names(TOPIC_RESULT), result, strict=True)), len(made)


def _outcomes(result: Mapping[str, Any]) -> list[tuple[int, str]]:
    return [(p["partition"], p["outcome"]) for p in result["result_reassignment"]]


def test_a_move_off_its_target_on_one_read_and_at_it_on_the_next_is_reassigned(
        monkeypatch: pytest.MonkeyPatch) -> None:
    done = move_names.REASSIGNED
    result, reads = _verified(monkeypatch, [{("t", 0): done, ("t", 1): names.FAILED},
                                            {("t", 0): done, ("t", 1): done}])
    assert (result["outcome"], _outcomes(result), reads) == (done, [(0, done), (1, done)], 2)


def test_a_move_off_its_target_on_two_reads_is_failed(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    done, failed = move_names.REASSIGNED, names.FAILED
    result, reads = _verified(monkeypatch, [{("t", 0): done, ("t", 1): failed}])
    assert (result["outcome"], _outcomes(result), reads) == (
        failed, [(0, done), (1, failed)], 2)
    assert result["result_reassignment"][1]["error_name"] == move_names.INVALID_REASSIGNMENT


def test_moves_settled_on_the_first_read_are_read_once(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    done = move_names.REASSIGNED
    result, reads = _verified(monkeypatch, [{("t", 0): done, ("t", 1): done}])
    assert (result["outcome"], reads) == (done, 1)


def test_a_move_still_moving_is_read_until_it_settles(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    moving, done = move_names.REASSIGNING, move_names.REASSIGNED
    result, reads = _verified(monkeypatch, [{("t", 0): moving, ("t", 1): done},
                                            {("t", 0): moving, ("t", 1): done},
                                            {("t", 0): done, ("t", 1): done}])
    assert (result["outcome"], _outcomes(result), reads) == (done, [(0, done), (1, done)], 3)
