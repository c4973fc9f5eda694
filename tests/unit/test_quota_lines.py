"""The line of one quota in `plan` and `apply` output (kinds.quotas.view.quota_line): its sign,
its change and its outcome."""

from __future__ import annotations

from typing import Any

import pytest

from provisioning.kinds.quotas.view import VIEW as KIND

quota_line = KIND.line


def _row(**kw: Any) -> dict[str, Any]:
    return {"cluster": "c", "entity_user": "app", "entity_client_id": None, "entity_ip": None,
            "key": "producer_byte_rate", "action": "SET", "phase": "validate",
            "outcome": "validated", "value": 2048.0, "found": None, **kw}


@pytest.mark.parametrize(("row", "line"), [
    (_row(), "+ c quota user=app producer_byte_rate (not set) -> 2048  validated"),
    (_row(found=1024.0), "~ c quota user=app producer_byte_rate 1024 -> 2048  validated"),
    (_row(phase="plan", outcome="planned", found=1024.0),
     "~ c quota user=app producer_byte_rate 1024 -> 2048  planned"),
    (_row(phase="verify", outcome="set", found=2048.0),
     "~ c quota user=app producer_byte_rate -> 2048 (read back: 2048)  set"),
    (_row(action="REMOVE", found=1024.0, value=None),
     "- c quota user=app producer_byte_rate 1024 -> (removed)  validated: made only by "
     "apply --allow-quota-removals"),
    (_row(outcome="rejected", error_name="InvalidRequestError", error_message="too large"),
     "! c quota user=app producer_byte_rate (not set) -> 2048  rejected: too large"),
    (_row(action="NOOP", phase="plan", outcome="already_present", found=2048.0),
     "= c quota user=app producer_byte_rate 2048 -> 2048  already_present"),
])
def test_a_quota_line_signs_what_the_run_does_to_it(row: dict[str, Any], line: str) -> None:
    assert quota_line(row) == line
