"""The one retry layer: every wait of the package between two tries of something, each a
named policy on tenacity with its tries, waits and deadline.

- `resend`: a request that was not sent or whose answer was lost, sent again after
  RESEND_FIRST_WAIT_S, doubling up to RESEND_MAX_WAIT_S, until the deadline its caller gives
  the error (`Resend`); then the error is raised.
- `wait_out_throttle`: the items a broker throttled (KIP-599) sent again after the throttle
  time it asked for (at least THROTTLE_MIN_WAIT_MS), up to a count of retries; the last
  answer stands.
- `poll` with a `Poll` (READ_BACK, DESCRIBE, MOVES, STEADY): a read made again until its
  caller's condition holds or a deadline passes, at least once.
- `settle`: a call asked again while it raises a retriable error, SETTLE_WAIT_S apart, no
  call starting past a deadline.
- `tries` with a `Tries` (COMMIT, GIVE_BACK, TOKEN): a call tried a few times.

Which errors are worth another try is each caller's word (`retry_if`, `retry_on`, a
`Resend` or None for an error): they are the Kafka client's, Delta's or urllib's, owned by
the packages above this one, which may import no client library.

Deadlines are read on `now()` (time.monotonic) and waits slept with `pause()` (time.sleep),
both looked up at each call; every policy also takes `clock` and `sleep` in their place,
which tests give as a fake clock that moves only when slept.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    retry_if_result,
    stop_after_attempt,
    wait_exponential,
    wait_fixed,
    wait_incrementing,
)
from tenacity.wait import wait_base

R = TypeVar("R")
T = TypeVar("T")
Clock = Callable[[], float]
Sleep = Callable[[float], None]


def now() -> float:
    """The clock every deadline of the package is read on."""
    return time.monotonic()


def pause(seconds: float) -> None:
    """Every wait of the package between two tries."""
    time.sleep(seconds)


def deadline_in(seconds: float, clock: Clock | None = None) -> float:
    """The deadline `seconds` from now, on `now()`'s clock (or `clock`)."""
    return (clock or now)() + seconds


# -- resend ------------------------------------------------------------------------------

RESEND_FIRST_WAIT_S = 0.1
RESEND_MAX_WAIT_S = 2.0


@dataclass(frozen=True)
class Resend:
    """A caller's word on an error of a send: send again unless `deadline` has passed, doing
    `before` first (forget a lost controller, log the loss)."""

    deadline: float
    before: Callable[[], None] | None = None


def resend(send: Callable[[], R], verdict: Callable[[BaseException, float], Resend | None],
           *, clock: Clock | None = None, sleep: Sleep | None = None) -> R:
    """`send()`'s answer. After an error, `verdict(error, time of the error)` says until when
    it is sent again (None: the error is raised at once); it is sent again after
    RESEND_FIRST_WAIT_S, doubling up to RESEND_MAX_WAIT_S, while the time of its last error
    is not past that deadline, and then the last error is raised.

    The clock is read once per error, so a caller's deadline "from the first loss" is
    measured from the same instant it is compared at.
    """
    read = clock or now
    # The verdict on the last error, and when it came.
    given: list[tuple[float, Resend]] = []

    def retried(state: RetryCallState) -> bool:
        error = _error(state)
        if error is None:
            return False
        at = read()
        answer = verdict(error, at)
        given[:] = [] if answer is None else [(at, answer)]
        return answer is not None

    def past_deadline(_state: RetryCallState) -> bool:
        at, answer = given[0]
        return at > answer.deadline

    def before(_state: RetryCallState) -> None:
        if given[0][1].before is not None:
            given[0][1].before()

    return Retrying(
        sleep=sleep or pause, retry=retried, stop=past_deadline,
        wait=wait_exponential(multiplier=RESEND_FIRST_WAIT_S, max=RESEND_MAX_WAIT_S),
        before_sleep=before, reraise=True)(send)


def _error(state: RetryCallState) -> BaseException | None:
    outcome = state.outcome
    return None if outcome is None else outcome.exception()


def _failure(state: RetryCallState) -> BaseException:
    error = _error(state)
    assert error is not None, "called after a try that raised"
    return error


# -- wait out a throttle -----------------------------------------------------------------

THROTTLE_MIN_WAIT_MS = 100


@dataclass(frozen=True)
class Throttled:
    """What a broker throttled of one send (KIP-599): how many items, and the throttle time
    its answer asked the client to wait (ms)."""

    items: int
    throttle_time_ms: int

    @property
    def wait_ms(self) -> int:
        """The wait before the throttled items are sent again."""
        return max(int(self.throttle_time_ms or 0), THROTTLE_MIN_WAIT_MS)


def wait_out_throttle(send: Callable[[int], Throttled | None], retries: int,
                      announce: Callable[[Throttled], None], *,
                      sleep: Sleep | None = None) -> None:
    """Call `send(attempt)` (attempt 1, 2, ...) again while it returns what the broker
    throttled, each time after the wait it asked for (`Throttled.wait_ms`), up to `retries`
    times more; `announce(throttled)` before each wait. `send` keeps every answer, so what
    the last send throttled stands as it was answered. Errors of `send` are raised."""
    attempts = itertools.count(1)

    def wait(state: RetryCallState) -> float:
        return float(_throttled(state).wait_ms) / 1000

    Retrying(
        sleep=sleep or pause, stop=stop_after_attempt(retries + 1),
        retry=retry_if_result(lambda throttled: throttled is not None), wait=wait,
        before_sleep=lambda state: announce(_throttled(state)),
        retry_error_callback=lambda _state: None)(lambda: send(next(attempts)))


def _throttled(state: RetryCallState) -> Throttled:
    assert state.outcome is not None
    result: Throttled = state.outcome.result()
    return result


# -- poll until a condition or a deadline ------------------------------------------------


@dataclass(frozen=True)
class Poll:
    """How a poll waits: `first_s` after its first round, each next wait `growth` times the
    one before, at most `most_s`; `error_s` after a read that raised an error its caller
    retries."""

    first_s: float
    growth: float = 1.0
    most_s: float = math.inf
    error_s: float = 0.0

    def wait_s(self, attempt: int) -> float:
        """The wait after round `attempt` (1, 2, ...) when it read."""
        return min(self.first_s * self.growth ** (attempt - 1), self.most_s)


# A change read back until the broker shows it (an entity kind's verify, topics the
# controller created described): 0.2 s, doubling up to 2 s.
READ_BACK = Poll(first_s=0.2, growth=2.0, most_s=2.0)
# Topics described until verify settles them: every 0.25 s, 0.5 s after a broker that went
# away (the next read asks another).
DESCRIBE = Poll(first_s=0.25, error_s=0.5)
# Partitions being moved, read until none is: every second while one is (a round that only
# confirms a failure asks for a shorter wait), 0.5 s after a failed read.
MOVES = Poll(first_s=1.0, error_s=0.5)
# Something expected within a few seconds (a config change seen by a broker, Spark's
# event log of jobs that ended): every 0.2 s.
STEADY = Poll(first_s=0.2)


@dataclass
class Round(Generic[T]):
    """One round of a poll: its attempt number (1, 2, ...; reads that raised count) and what
    its read returned. `wait_s`, when the caller sets it, is the wait before the next round
    instead of the policy's."""

    attempt: int
    value: T
    wait_s: float | None = None


def poll(policy: Poll, read: Callable[[], T], deadline: float, *,
         retry_on: tuple[type[BaseException], ...] = (), clock: Clock | None = None,
         sleep: Sleep | None = None) -> Iterator[Round[T]]:
    """The rounds of a poll, each with what `read()` returned; the caller stops taking them
    (`break`) once its condition holds. There is always a first round; a next one follows
    after the policy's wait while `deadline` (on `now()`'s clock, or `clock`) has not
    passed. A read that raises one of `retry_on` is read again after `policy.error_s`, or
    raised once the deadline has passed; any other error is raised at once.

    The caller's work on a round (yielding results) happens between two reads, so a poll
    inside a generator hands its results on as they come."""
    read_clock = clock or now

    def retried(state: RetryCallState) -> bool:
        error = _error(state)
        return error is None or isinstance(error, retry_on)

    def wait(state: RetryCallState) -> float:
        if _error(state) is not None:
            return policy.error_s
        done: Round[T] = state.outcome.result()  # type: ignore[union-attr]
        return done.wait_s if done.wait_s is not None else policy.wait_s(done.attempt)

    def last(state: RetryCallState) -> Any:
        # Past the deadline: a read's error is raised; a round that read ends the poll.
        return state.outcome.result()  # type: ignore[union-attr]

    rounds = Retrying(sleep=sleep or pause, retry=retried, wait=wait,
                      stop=lambda _s: read_clock() >= deadline, retry_error_callback=last)
    for attempt in rounds:
        with attempt:
            value = read()
        state = attempt.retry_state
        if state.outcome is not None and state.outcome.failed:
            continue
        taken = Round(state.attempt_number, value)
        yield taken
        state.set_result(taken)


# -- settle ------------------------------------------------------------------------------

SETTLE_WAIT_S = 0.25


def settle(call: Callable[[], R], deadline: float, retry_if: Callable[[BaseException], bool],
           *, clock: Clock | None = None, sleep: Sleep | None = None) -> R:
    """`call()`'s answer, asked again SETTLE_WAIT_S apart while it raises an error
    `retry_if` accepts (a broker's retriable answer: a group coordinator still loading its
    offsets, a leader being elected); no call starts at or past `deadline` (on `now()`'s
    clock, or `clock`), and the last error is raised."""
    read = clock or now
    return Retrying(
        sleep=sleep or pause, retry=retry_if_exception(retry_if), wait=wait_fixed(SETTLE_WAIT_S),
        stop=lambda state: read() + (state.upcoming_sleep or 0.0) >= deadline,
        reraise=True)(call)


# -- a few tries -------------------------------------------------------------------------


@dataclass(frozen=True)
class Tries:
    """A call tried up to `attempts` times, with `wait` between two tries."""

    attempts: int
    wait: wait_base


# A Delta commit that met another writer's (an optimistic-concurrency conflict): five
# tries, 0.2 s times the number of tries made between two.
COMMIT = Tries(attempts=5, wait=wait_incrementing(start=0.2, increment=0.2))
# The release of a run's lock: five tries in about 7.5 s (0.5, 1, 2 and 4 s between);
# when every one fails the lease expires by itself.
GIVE_BACK = Tries(attempts=5, wait=wait_exponential(multiplier=0.5))
# An OAuth token asked of its endpoint: three tries, 0.25 s and 0.5 s between, within the
# caller's deadline.
TOKEN = Tries(attempts=3, wait=wait_exponential(multiplier=0.25))


def tries(policy: Tries, call: Callable[[], R], retry_if: Callable[[BaseException], bool],
          *, attempts: int | None = None, deadline: float | None = None,
          failed: Callable[[int, BaseException], None] | None = None,
          again: Callable[[int, BaseException], None] | None = None,
          clock: Clock | None = None, sleep: Sleep | None = None) -> R:
    """`call()`'s answer, tried again after an error `retry_if` accepts, up to the policy's
    attempts (or `attempts`); the last error is raised, and one `retry_if` refuses at once.

    deadline: on `now()`'s clock (or `clock`): no wait goes past it, and a try that starts
      at or past it is the last.
    failed(attempt, error): after each try whose error `retry_if` accepts, the last too.
    again(attempt, error): before each wait for another try.
    """
    read = clock or now
    most = policy.attempts if attempts is None else attempts
    started: list[float] = [0.0]

    def last(state: RetryCallState) -> bool:
        return state.attempt_number >= most or (deadline is not None
                                                and started[0] >= deadline)

    def wait(state: RetryCallState) -> float:
        planned = float(policy.wait(state))
        return planned if deadline is None else min(planned, max(deadline - read(), 0.0))

    def before(_state: RetryCallState) -> None:
        started[0] = read()

    def after(state: RetryCallState) -> None:
        # Called only after an error `retry_if` accepted.
        if failed is not None:
            failed(state.attempt_number, _failure(state))

    def before_sleep(state: RetryCallState) -> None:
        if again is not None:
            again(state.attempt_number, _failure(state))

    return Retrying(
        sleep=sleep or pause, retry=retry_if_exception(retry_if), stop=last, wait=wait,
        before=before, after=after, before_sleep=before_sleep, reraise=True)(call)
