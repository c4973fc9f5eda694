"""An apply takes the run's lock only for what its flags let it send: a plan whose only
changes are removals the flags do not allow (revokes without --allow-acl-removals, client quotas
without --allow-quota-removals) sends nothing and takes no lock (pure: the run's state by
hand, no Spark)."""

from __future__ import annotations

from typing import Any

import pytest

from provisioning.run.kind import APPLY, slices
from provisioning.run.options import ApplyOptions
from provisioning.run.relock import Relock
from provisioning.run.state import RunState
from tests.helpers import RUNS


def _ctx(allowed: frozenset[str] = frozenset()) -> Any:
    return type("Context", (), {"options": ApplyOptions(allowed=allowed)})()


@pytest.mark.parametrize(("kind", "action", "flag"), [
    ("acls", "REVOKE", "acl-removals"),
    ("quotas", "REMOVE", "quota-removals"),
])
def test_removals_alone_take_the_lock_and_are_sent_only_with_their_flag(
        kind: str, action: str, flag: str) -> None:
    state = RunState({name: cls() for name, cls in slices(RUNS).items()})
    own: Any = state.slice(kind)
    own.counts = {("local", action, "planned"): 2, ("local", "NOOP", "already_present"): 3}
    own.validated = object()  # the validate phase ran
    relock = Relock(RUNS)
    part = next(k for k in RUNS if k.name == kind)
    changes = [p for p in part.phases(APPLY) if p.changes_kafka]
    assert len(changes) == 1
    assert relock.needed(_ctx(), state) is False
    assert changes[0].needed(_ctx(), state) is False
    allowed = _ctx(frozenset({flag}))
    assert relock.needed(allowed, state) is True
    assert changes[0].needed(allowed, state) is True
