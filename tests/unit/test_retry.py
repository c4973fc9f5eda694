"""The retry layer's policies, each on a fake clock that moves only when the policy sleeps
(tenacity's `sleep` hook and the layer's `clock`): how many tries, which waits, when the
deadline stops them, and which errors are tried again or raised at once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from provisioning import retry


class Time:
    """A clock that moves only when slept; every wait is kept."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(round(seconds, 6))
        self.now += seconds


class Lost(Exception):
    """An answer that did not come."""


class Refused(Exception):
    """An answer that says no: never tried again."""


def scripted(*answers: Any) -> tuple[Callable[[], Any], list[float]]:
    """A call answering `answers` in turn (an exception is raised), and the list it notes
    each call in (filled by the caller with the clock's time)."""
    script = list(answers)
    calls: list[float] = []

    def call() -> Any:
        calls.append(0.0)
        answer = script.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    return call, calls


@pytest.fixture
def t() -> Time:
    return Time()


# -- resend ------------------------------------------------------------------------------


def test_resend_waits_0_1_s_doubling_up_to_2_s_until_the_deadline_then_raises(t: Time) -> None:
    send, calls = scripted(*[Lost("gone")] * 20)
    seen: list[float] = []

    def verdict(exc: BaseException, at: float) -> retry.Resend | None:
        seen.append(at)
        return retry.Resend(105.0) if isinstance(exc, Lost) else None

    with pytest.raises(Lost, match="gone"):
        retry.resend(send, verdict, clock=t.clock, sleep=t.sleep)
    assert t.waits == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0]
    # the errors at 100, 100.1, 100.3, 100.7, 101.5, 103.1 are resent; the one at 105.1 is
    # past the deadline
    assert [round(s, 6) for s in seen] == [100.0, 100.1, 100.3, 100.7, 101.5, 103.1, 105.1]
    assert len(calls) == 7


def test_resend_returns_the_answer_after_the_losses_and_runs_before_each_resend(
        t: Time) -> None:
    send, calls = scripted(Lost("one"), Lost("two"), "answer")
    done: list[str] = []

    def verdict(exc: BaseException, _at: float) -> retry.Resend:
        return retry.Resend(200.0, lambda: done.append(str(exc)))

    assert retry.resend(send, verdict, clock=t.clock, sleep=t.sleep) == "answer"
    assert (len(calls), t.waits, done) == (3, [0.1, 0.2], ["one", "two"])


def test_resend_raises_an_error_it_has_no_deadline_for_at_once(t: Time) -> None:
    send, calls = scripted(Lost("gone"), Refused("no"), "answer")

    def verdict(exc: BaseException, _at: float) -> retry.Resend | None:
        return retry.Resend(200.0) if isinstance(exc, Lost) else None

    with pytest.raises(Refused, match="no"):
        retry.resend(send, verdict, clock=t.clock, sleep=t.sleep)
    assert (len(calls), t.waits) == (2, [0.1])


def test_resend_reads_the_deadline_the_verdict_gives_each_error(t: Time) -> None:
    # A deadline set at the first loss (as a lost controller's) and held for the others.
    send, calls = scripted(*[Lost("gone")] * 20)
    first: list[float] = []

    def verdict(_exc: BaseException, at: float) -> retry.Resend:
        first[:] = first or [at + 0.5]
        return retry.Resend(first[0])

    with pytest.raises(Lost):
        retry.resend(send, verdict, clock=t.clock, sleep=t.sleep)
    assert (len(calls), t.waits, first) == (4, [0.1, 0.2, 0.4], [100.5])


# -- wait out a throttle -----------------------------------------------------------------


def test_a_throttle_is_waited_out_for_the_time_the_broker_asked_then_sent_again(
        t: Time) -> None:
    throttles = [retry.Throttled(3, 250), retry.Throttled(1, 0), None]
    attempts: list[int] = []
    said: list[tuple[int, int]] = []

    def send(attempt: int) -> retry.Throttled | None:
        attempts.append(attempt)
        return throttles.pop(0)

    retry.wait_out_throttle(send, 8, lambda th: said.append((th.items, th.wait_ms)),
                            sleep=t.sleep)
    # a throttle time under 100 ms (here none) waits 100 ms
    assert (attempts, t.waits, said) == ([1, 2, 3], [0.25, 0.1], [(3, 250), (1, 100)])


def test_a_throttle_is_sent_again_at_most_retries_times(t: Time) -> None:
    attempts: list[int] = []

    def send(attempt: int) -> retry.Throttled:
        attempts.append(attempt)
        return retry.Throttled(2, 1000)

    retry.wait_out_throttle(send, 2, lambda _th: None, sleep=t.sleep)
    assert (attempts, t.waits) == ([1, 2, 3], [1.0, 1.0])


def test_no_retries_sends_once_and_an_error_of_the_send_is_raised(t: Time) -> None:
    attempts: list[int] = []

    def send(attempt: int) -> retry.Throttled:
        attempts.append(attempt)
        return retry.Throttled(2, 1000)

    retry.wait_out_throttle(send, 0, lambda _th: None, sleep=t.sleep)
    assert (attempts, t.waits) == ([1], [])

    def broken(_attempt: int) -> retry.Throttled:
        raise Refused("no")

    with pytest.raises(Refused):
        retry.wait_out_throttle(broken, 8, lambda _th: None, sleep=t.sleep)
    assert t.waits == []


# -- poll --------------------------------------------------------------------------------


def _rounds(policy: retry.Poll, reads: list[Any], deadline: float, t: Time,
            until: Callable[[Any], bool] = lambda v: v == "done",
            retry_on: tuple[type[BaseException], ...] = ()) -> list[tuple[int, Any]]:
    read, _ = scripted(*reads)
    taken = []
    for r in retry.poll(policy, read, deadline, retry_on=retry_on, clock=t.clock,
                        sleep=t.sleep):
        taken.append((r.attempt, r.value))
        if until(r.value):
            break
    return taken


def test_read_back_polls_0_2_s_doubling_up_to_2_s_until_the_condition(t: Time) -> None:
    taken = _rounds(retry.READ_BACK, ["not yet"] * 6 + ["done"], 200.0, t)
    assert taken == [(1, "not yet"), (2, "not yet"), (3, "not yet"), (4, "not yet"),
                     (5, "not yet"), (6, "not yet"), (7, "done")]
    assert t.waits == [0.2, 0.4, 0.8, 1.6, 2.0, 2.0]


def test_a_poll_stops_at_its_deadline_after_the_round_that_reached_it(t: Time) -> None:
    taken = _rounds(retry.READ_BACK, ["not yet"] * 10, 101.0, t)
    # rounds at 100, 100.2, 100.6; the one at 101.4 is past the deadline: no wait after it
    assert (taken, t.waits) == ([(1, "not yet"), (2, "not yet"), (3, "not yet"),
                                 (4, "not yet")], [0.2, 0.4, 0.8])


def test_a_round_at_the_deadline_itself_is_the_last(t: Time) -> None:
    taken = _rounds(retry.DESCRIBE, ["not yet"] * 10, 100.5, t)
    assert (taken, t.waits) == ([(1, "not yet"), (2, "not yet"), (3, "not yet")], [0.25, 0.25])


def test_a_poll_reads_once_even_past_its_deadline(t: Time) -> None:
    assert (_rounds(retry.STEADY, ["not yet"] * 3, 50.0, t), t.waits) == ([(1, "not yet")], [])


def test_a_read_error_the_caller_retries_waits_error_s_and_counts_as_an_attempt(
        t: Time) -> None:
    taken = _rounds(retry.DESCRIBE, [Lost("a"), "not yet", Lost("b"), "done"], 200.0, t,
                    retry_on=(Lost,))
    assert (taken, t.waits) == ([(2, "not yet"), (4, "done")], [0.5, 0.25, 0.5])


def test_a_read_error_past_the_deadline_is_raised_and_one_not_retried_at_once(t: Time) -> None:
    with pytest.raises(Lost, match="late"):
        _rounds(retry.DESCRIBE, [Lost("early"), Lost("late"), "done"], 100.4, t,
                retry_on=(Lost,))
    assert t.waits == [0.5]
    t.waits.clear()
    with pytest.raises(Refused):
        _rounds(retry.DESCRIBE, ["not yet", Refused("no"), "done"], 200.0, t,
                retry_on=(Lost,))
    assert t.waits == [0.25]


def test_a_round_may_ask_for_its_own_wait(t: Time) -> None:
    read, _ = scripted("moving", "settled?", "settled")
    seen = []
    for r in retry.poll(retry.MOVES, read, 200.0, clock=t.clock, sleep=t.sleep):
        seen.append(r.value)
        if r.value == "settled":
            break
        if r.value == "settled?":
            r.wait_s = 0.5
    assert (seen, t.waits) == (["moving", "settled?", "settled"], [1.0, 0.5])


def test_rounds_are_handed_on_as_they_come(t: Time) -> None:
    # A generator polling yields each round's results before the next read.
    read, calls = scripted("a", "b", "done")

    def results() -> Iterator[str]:
        for r in retry.poll(retry.STEADY, read, 200.0, clock=t.clock, sleep=t.sleep):
            yield r.value
            if r.value == "done":
                break

    taken = results()
    assert (next(taken), len(calls)) == ("a", 1)
    assert (next(taken), len(calls)) == ("b", 2)
    assert list(taken) == ["done"]
    assert t.waits == [0.2, 0.2]


# -- settle ------------------------------------------------------------------------------


def test_settle_asks_again_every_0_25_s_and_starts_no_call_at_the_deadline(t: Time) -> None:
    call, calls = scripted(*[Lost("loading")] * 10)
    with pytest.raises(Lost):
        retry.settle(call, 101.0, lambda exc: isinstance(exc, Lost), clock=t.clock,
                     sleep=t.sleep)
    # calls at 100, 100.25, 100.5, 100.75; the next would start at 101.0
    assert (len(calls), t.waits) == (4, [0.25, 0.25, 0.25])


def test_settle_returns_the_answer_and_raises_an_error_it_does_not_retry(t: Time) -> None:
    call, calls = scripted(Lost("loading"), "groups")
    assert retry.settle(call, 200.0, lambda exc: isinstance(exc, Lost), clock=t.clock,
                        sleep=t.sleep) == "groups"
    refused, _ = scripted(Refused("no"), "groups")
    with pytest.raises(Refused):
        retry.settle(refused, 200.0, lambda exc: isinstance(exc, Lost), clock=t.clock,
                     sleep=t.sleep)
    assert (len(calls), t.waits) == (2, [0.25])


# -- a few tries -------------------------------------------------------------------------


def test_a_commit_is_tried_five_times_0_2_s_times_the_tries_apart(t: Time) -> None:
    call, calls = scripted(*[Lost("conflict")] * 6)
    again: list[int] = []
    with pytest.raises(Lost):
        retry.tries(retry.COMMIT, call, lambda exc: isinstance(exc, Lost),
                    again=lambda n, _e: again.append(n), clock=t.clock, sleep=t.sleep)
    assert (len(calls), t.waits, again) == (5, [0.2, 0.4, 0.6, 0.8], [1, 2, 3, 4])


def test_tries_take_the_callers_attempts_and_raise_a_refused_error_at_once(t: Time) -> None:
    call, calls = scripted(Lost("conflict"), Lost("conflict"), "committed")
    assert retry.tries(retry.COMMIT, call, lambda exc: isinstance(exc, Lost), attempts=3,
                       clock=t.clock, sleep=t.sleep) == "committed"
    refused, _ = scripted(Refused("no"), "committed")
    with pytest.raises(Refused):
        retry.tries(retry.COMMIT, refused, lambda exc: isinstance(exc, Lost), clock=t.clock,
                    sleep=t.sleep)
    assert (len(calls), t.waits) == (3, [0.2, 0.4])


def test_a_give_back_pauses_0_5_1_2_4_s_and_notes_every_failed_try(t: Time) -> None:
    call, calls = scripted(*[Lost("storage")] * 6)
    failed: list[int] = []
    with pytest.raises(Lost):
        retry.tries(retry.GIVE_BACK, call, lambda exc: isinstance(exc, Exception),
                    failed=lambda n, _e: failed.append(n), clock=t.clock, sleep=t.sleep)
    assert (len(calls), t.waits, failed) == (5, [0.5, 1.0, 2.0, 4.0], [1, 2, 3, 4, 5])


def test_a_token_is_asked_three_times_0_25_and_0_5_s_apart(t: Time) -> None:
    call, calls = scripted(*[Lost("503")] * 5)
    with pytest.raises(Lost):
        retry.tries(retry.TOKEN, call, lambda exc: isinstance(exc, Lost), deadline=200.0,
                    clock=t.clock, sleep=t.sleep)
    assert (len(calls), t.waits) == (3, [0.25, 0.5])


def test_a_token_wait_never_goes_past_the_deadline_and_the_try_at_it_is_the_last(
        t: Time) -> None:
    call, calls = scripted(*[Lost("503")] * 5)
    with pytest.raises(Lost):
        retry.tries(retry.TOKEN, call, lambda exc: isinstance(exc, Lost), deadline=100.1,
                    clock=t.clock, sleep=t.sleep)
    # the wait is cut to the 0.1 s left; the try that starts then is the last
    assert (len(calls), t.waits) == (2, [0.1])


def test_the_default_clock_and_pause_are_looked_up_at_each_call(
        monkeypatch: pytest.MonkeyPatch) -> None:
    t = Time()
    monkeypatch.setattr(retry, "now", t.clock)
    monkeypatch.setattr(retry, "pause", t.sleep)
    call, calls = scripted(Lost("loading"), Lost("loading"), "answer")
    assert retry.settle(call, retry.deadline_in(1.0), lambda exc: isinstance(exc, Lost)) \
        == "answer"
    assert (len(calls), t.waits, t.now) == (3, [0.25, 0.25], 100.5)
