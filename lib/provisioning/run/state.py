"""The run's state: what its phases hand each other, a slice per kind, and the guard that
holds every phase to the state it declared.

A kind's slice (`KindState` subclass, `run.<kind>.state`) is written only by that kind's
phases; a phase names every field it reads and writes as `kind.field` (`topics.plan`),
or the shared field's name (`states`, `halted`). The engine hands each phase a guarded
view (`RunState.guarded`): reading a field the phase did not declare, or writing one it
does not declare it writes, raises UndeclaredState. So the order check of a phase list
(a phase reads only what an earlier one writes) stands on what the phases really do.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar

from pyspark.sql import DataFrame

from provisioning.errors import ProvisioningError

if TYPE_CHECKING:
    from provisioning.kafka.client import ClusterState


@dataclass
class KindState:
    """A kind's slice of the run's state; a field is None until a phase writes it. Every
    slice holds the AUDIT rows its kind's phases recorded (what the kind's summary reads)."""

    rows: list[DataFrame] = field(default_factory=list)
    # Under an apply's lock (run.relock): whether the kind kept its first plan, the view it
    # read again being the view that plan was made on.
    kept_first_plan: bool = False


@dataclass
class Shared:
    """The fields every kind may read: each cluster's facts (preflight), and why the run
    stopped changing Kafka mid-phase (its lock was lost: the phases that settle what was
    sent still run, then this is raised)."""

    states: Mapping[str, ClusterState] | None = None
    halted: ProvisioningError | None = None


SHARED_FIELDS = frozenset(f.name for f in fields(Shared))
S = TypeVar("S", bound=KindState)


class UndeclaredState(RuntimeError):
    """A phase read or wrote a state field it did not declare (a defect of the phase)."""


def declarable(slices: Mapping[str, type[KindState]]) -> frozenset[str]:
    """Every field name a phase may declare: the shared ones and `kind.field`."""
    return SHARED_FIELDS | {f"{kind}.{f.name}" for kind, cls in slices.items()
                            for f in fields(cls)}


class RunState:
    """The shared fields and every kind's slice, by kind name."""

    def __init__(self, slices: Mapping[str, KindState]) -> None:
        self._shared = Shared()
        self._slices = dict(slices)
        self._kinds = {type(s): kind for kind, s in self._slices.items()}

    @property
    def states(self) -> Mapping[str, ClusterState] | None:
        return self._shared.states

    @states.setter
    def states(self, value: Mapping[str, ClusterState] | None) -> None:
        self._shared.states = value

    @property
    def halted(self) -> ProvisioningError | None:
        return self._shared.halted

    @halted.setter
    def halted(self, value: ProvisioningError | None) -> None:
        self._shared.halted = value

    def of(self, cls: type[S]) -> S:
        """The slice of type `cls`."""
        found = self._slices.get(self._kinds.get(cls, ""))
        if not isinstance(found, cls):
            raise KeyError(f"the run has no {cls.__name__} slice (its kind is not in the "
                           "run)")
        return found

    def slice(self, kind: str) -> KindState:
        """The slice of the kind named `kind`."""
        return self._slices[kind]

    def kind_of(self, cls: type[KindState]) -> str:
        return self._kinds[cls]

    def guarded(self, phase: str, reads: Collection[str], writes: Collection[str],
                own: str | None) -> RunState:
        """This state as `phase` may see it: the fields of `reads` and `writes` readable,
        those of `writes` writable, and the `rows` of its own kind `own` both."""
        allowed_writes = set(writes) | ({f"{own}.rows"} if own else set())
        allowed_reads = set(reads) | allowed_writes
        return _GuardedState(self, phase, frozenset(allowed_reads), frozenset(allowed_writes))


class _GuardedState(RunState):
    def __init__(self, inner: RunState, phase: str, reads: frozenset[str],
                 writes: frozenset[str]) -> None:
        # No super().__init__: every field lives in `inner`.
        self._inner = inner
        self._phase = phase
        self._reads = reads
        self._writes = writes

    def _check(self, name: str, write: bool) -> None:
        allowed = self._writes if write else self._reads
        if name not in allowed:
            verb = "writes" if write else "reads"
            raise UndeclaredState(f"phase {self._phase} {verb} {name}, which it does not "
                                  f"declare it {verb}")

    @property
    def states(self) -> Mapping[str, ClusterState] | None:
        self._check("states", write=False)
        return self._inner.states

    @states.setter
    def states(self, value: Mapping[str, ClusterState] | None) -> None:
        self._check("states", write=True)
        self._inner.states = value

    @property
    def halted(self) -> ProvisioningError | None:
        self._check("halted", write=False)
        return self._inner.halted

    @halted.setter
    def halted(self, value: ProvisioningError | None) -> None:
        self._check("halted", write=True)
        self._inner.halted = value

    def of(self, cls: type[S]) -> S:
        found = self._inner.of(cls)
        return _GuardedSlice(found, self._inner.kind_of(cls), self)  # type: ignore[return-value]

    def slice(self, kind: str) -> KindState:
        return _GuardedSlice(self._inner.slice(kind), kind, self)  # type: ignore[return-value]

    def kind_of(self, cls: type[KindState]) -> str:
        return self._inner.kind_of(cls)

    def guarded(self, phase: str, reads: Collection[str], writes: Collection[str],
                own: str | None) -> RunState:
        return self._inner.guarded(phase, reads, writes, own)


class _GuardedSlice:
    """A kind's slice whose every field read and write is checked against the phase's
    declarations."""

    __slots__ = ("_guard", "_kind", "_target")

    def __init__(self, target: KindState, kind: str, guard: _GuardedState) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_guard", guard)

    def __getattr__(self, name: str) -> Any:
        self._guard._check(f"{self._kind}.{name}", write=False)
        return getattr(self._target, name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._guard._check(f"{self._kind}.{name}", write=True)
        setattr(self._target, name, value)
