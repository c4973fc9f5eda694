"""Human-readable output of `plan` and `apply`, in the spirit of `terraform plan`: the run's
head line, each kind's lines (`ViewKind.text`, in registry order), and where a saved plan
went."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from provisioning.results import RunResult
from provisioning.views.kind import ViewKind


def render_run(kinds: Sequence[ViewKind], result: RunResult, command: str,
               verbose: bool = False, saved_plan: tuple[str, str] | None = None
               ) -> list[str]:
    """The lines an operator reads after `plan` or `apply` (`kinds`: each kind's part of
    this package).

    saved_plan: (path, digest) when `plan --out` saved the plan.
    """
    lines = [f"{command} {result.run_id}", ""]
    for kind in kinds:
        lines += kind.text(result, verbose, kinds)
    if saved_plan is not None:
        path, digest = saved_plan
        lines.append(f"plan saved to {path} (digest {digest[:12]}); apply exactly this plan "
                     f"with: apply --plan {path}")
    return lines


def run_json(kinds: Sequence[ViewKind], result: RunResult) -> dict[str, Any]:
    """What every kind adds to the JSON document of `plan` and `apply`."""
    payload: dict[str, Any] = {}
    for kind in kinds:
        payload.update(kind.json(result.summaries.get(kind.name)))
    return payload
