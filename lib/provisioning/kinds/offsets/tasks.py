"""Offset resets, one cluster's rows at a time: validate (the groups' members read: a RESET
of a group with any is refused by name), the commits and removals, and the read-back; rows
in, one OFFSET_RESULT row per row out, through `for_each_cluster` (a row whose request may
have been sent is `unknown` on an error of this side, never `failed`).

Rows are mappings with `cluster`, `request_id`, `partition`, `group`, `topic`, `action`
(RESET or DELETE) and `target` (a RESET's offset).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from provisioning import names, retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.tasks.common import KeyedResults, Result, Row, Sent
from provisioning.kinds.offsets.names import DELETE, OFFSETS_DELETED, RESET, RESET_DONE
from provisioning.kinds.offsets.requests import (
    busy_groups,
    committed_offsets,
    outcome,
    send_resets,
    settled_action,
)
from provisioning.kinds.offsets.schema import OFFSET_KEY, OFFSET_RESULT

_PHASES = (names.VALIDATE, names.APPLY, names.VERIFY)
_RESULTS = KeyedResults(tuple(f.name for f in OFFSET_RESULT.fields), OFFSET_KEY)
offset_result = _RESULTS.result


def offset_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                   credentials: Mapping[str, Credentials], kafka: KafkaConf, phase: str,
                   batch_size: int = 200) -> Iterator[Result]:
    """The offset work of `phase` (validate, apply or verify); one OFFSET_RESULT per row."""
    if phase not in _PHASES:
        raise ValueError(f"unknown offset reset task phase {phase!r}")
    work = {names.VALIDATE: validate_part, names.APPLY: apply_part,
            names.VERIFY: _RESULTS.until_deadline(kafka, verify_part)}[phase]
    return _RESULTS.for_each_cluster(rows, clusters, credentials, kafka, work, phase,
                                     phase == names.APPLY, batch_size)


def validate_part(admin: ClusterAdmin, part: list[Row], sent: Sent) -> Iterator[Result]:
    """Each RESET refused while its group has a member (ListGroups v5, DescribeGroups);
    OffsetDelete has no validateOnly: the broker judges a DELETE when it is sent."""
    busy = busy_groups(admin, sorted({r["group"] for r in part if r["action"] == RESET}))
    for row in part:
        refused = busy.get(row["group"]) if row["action"] == RESET else None
        yield offset_result(row, names.VALIDATE,
                            names.REJECTED if refused else names.VALIDATED,
                            error_code=-1 if refused else 0, attempts=1,
                            error_name="NON_EMPTY_GROUP" if refused else "NONE",
                            error_message=refused)


def apply_part(admin: ClusterAdmin, part: list[Row], sent: Sent) -> Iterator[Result]:
    """Each group's targets committed and offsets removed (`send_resets`), the group's
    members read again right before."""
    for row, answer in send_resets(admin, part, sent=lambda rows: sent.mark(
            _RESULTS.key_of(r) for r in rows)):
        yield offset_result(row, names.APPLY, outcome(row["action"], answer), **answer)


def verify_part(admin: ClusterAdmin, part: list[Row], deadline: float) -> Iterator[Result]:
    """Each partition's committed offset read back until it is the target (`reset`) or gone
    (`offsets_deleted`), or `deadline` passes (`failed` VERIFY_TIMEOUT, naming what was
    read)."""
    pending, attempts = list(part), 0
    found: dict[tuple[str, str], dict[int, int]] = {}

    def read() -> dict[tuple[str, str], dict[int, int]]:
        pairs = sorted({(r["group"], r["topic"]) for r in pending})
        return {(g, t): committed_offsets(admin, g, t) for g, t in pairs}

    def held(row: Row) -> bool:
        return settled_action(row["action"], row["target"],
                              found.get((row["group"], row["topic"]), {}), row["partition"])

    def now(row: Row) -> int | None:
        return found.get((row["group"], row["topic"]), {}).get(row["partition"])

    for done in retry.poll(retry.READ_BACK, read, deadline) if pending else ():
        attempts, found = done.attempt, done.value
        for row in [r for r in pending if held(r)]:
            yield offset_result(row, names.VERIFY,
                                OFFSETS_DELETED if row["action"] == DELETE else RESET_DONE,
                                found=now(row), error_code=0, error_name="NONE",
                                attempts=attempts)
        pending = [r for r in pending if not held(r)]
        if not pending:
            break
    for row in pending:
        yield offset_result(row, names.VERIFY, names.FAILED, error_code=-1, found=now(row),
                            error_name=names.VERIFY_TIMEOUT, attempts=attempts,
                            error_message=f"the committed offset read back is {now(row)}, "
                            f"not {'removed' if row['action'] == DELETE else row['target']}")
