"""Human-readable output of `plan` and `apply`, in the spirit of `terraform plan`: the run's
head line, each kind's lines (`ViewKind.text`, in registry order), and where a saved plan
went."""

from __future__ import annotations

from typing import Any

from provisioning.results import RunResult
from provisioning.views.kind import view_kinds


def render_run(result: RunResult, command: str, verbose: bool = False,
               saved_plan: tuple[str, str] | None = None) -> list[str]:
    """The lines an operator reads after `plan` or `apply`.

    saved_plan: (path, digest) when `plan --out` saved the plan.
    """
    lines = [f"{command} {result.run_id}", ""]
    for kind in view_kinds():
        lines += kind.text(result, verbose)
    if saved_plan is not None:
        path, digest = saved_plan
        lines.append(f"plan saved to {path} (digest {digest[:12]}); apply exactly this plan "
                     f"with: apply --plan {path}")
    return lines


def run_json(result: RunResult) -> dict[str, Any]:
    """What every kind adds to the JSON document of `plan` and `apply`."""
    payload: dict[str, Any] = {}
    for kind in view_kinds():
        payload.update(kind.json(result.summaries.get(kind.name)))
    return payload
