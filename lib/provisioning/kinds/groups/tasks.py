"""Consumer groups, one cluster's rows at a time (`for_each_cluster`): the validateOnly
pass, the changes and the read-back of rows with `cluster`, `group`, `action` (ALTER or
DELETE) and `changed`; one GROUP_RESULT row per group. DeleteGroups has no validateOnly: a
DELETE is validated by reading the group's state and members again, refused while it has any.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from provisioning import names, retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.resources import set_configs
from provisioning.kafka.tasks.common import KeyedResults, Result, Row, Sent
from provisioning.kinds.groups.names import ALTER, ALTERED, DELETE, DELETED, MEMBERLESS
from provisioning.kinds.groups.requests import (
    GROUP_RESOURCE,
    delete_groups,
    group_configs,
    list_groups,
    listed_groups,
    outcome,
)
from provisioning.kinds.groups.schema import GROUP_KEY, GROUP_RESULT

VALIDATE, APPLY, VERIFY = "validate", "apply", "verify"
_PHASES = {VALIDATE: names.VALIDATE, APPLY: names.APPLY, VERIFY: names.VERIFY}
_RESULTS = KeyedResults(tuple(f.name for f in GROUP_RESULT.fields), GROUP_KEY)
group_key = _RESULTS.key_of
group_result = _RESULTS.result


def group_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                  credentials: Mapping[str, Credentials], kafka: KafkaConf, kind: str,
                  batch_size: int = 200) -> Iterator[Result]:
    """The group work of `kind` (VALIDATE, APPLY or VERIFY); one GROUP_RESULT per row."""
    if kind not in _PHASES:
        raise ValueError(f"unknown group task kind {kind!r}")

    def change(admin: ClusterAdmin, part: list[Row], sent: Sent) -> Iterator[Result]:
        return change_part(admin, part, sent, kind == VALIDATE, batch_size)

    work = _RESULTS.until_deadline(kafka, verify_part) if kind == VERIFY else change
    return _RESULTS.for_each_cluster(rows, clusters, credentials, kafka, work, _PHASES[kind],
                                     kind == APPLY, batch_size)


def in_use(admin: ClusterAdmin, groups: list[str]) -> dict[str, str]:
    """group -> why it may not be deleted now (it has members, as ListGroups and
    DescribeGroups say), for those of `groups` that may not."""
    listed = listed_groups(admin, groups)
    found = {}
    for group in groups:
        kind, state, members = listed.get(group, (None, None, None))
        if kind is not None and (state not in MEMBERLESS or (members or 0) > 0):
            found[group] = (f"group {group}: it has "
                            f"{'an unknown number of' if members is None else members} "
                            f"member(s) (type {kind}, state {state}); nothing was sent")
    return found


def change_part(admin: ClusterAdmin, part: list[Row], sent: Sent, validate_only: bool,
                batch_size: int) -> Iterator[Result]:
    """Each ALTER's configs set (validateOnly, or for real) and each DELETE's group deleted
    (validated: read again, refused while it has members)."""
    phase = names.VALIDATE if validate_only else names.APPLY
    alters = [r for r in part if r["action"] == ALTER]
    deletes = [r for r in part if r["action"] == DELETE]
    by_group = {r["group"]: r for r in alters}
    answers = set_configs(
        admin, GROUP_RESOURCE, [(r["group"], dict(r["changed"] or {})) for r in alters],
        validate_only, batch_size, lambda gs: sent.mark((admin.cluster.name, g) for g in gs),
        noun="group")
    for group, answer in answers:
        yield group_result(by_group[group], phase, outcome(False, validate_only, answer),
                           **answer)
    if not deletes:
        return
    by_group = {r["group"]: r for r in deletes}
    if validate_only:
        busy = in_use(admin, list(by_group))
        for group, row in by_group.items():
            refused = busy.get(group)
            yield group_result(row, phase, names.REJECTED if refused else names.VALIDATED,
                               error_code=-1 if refused else 0, attempts=1,
                               error_name="NON_EMPTY_GROUP" if refused else "NONE",
                               error_message=refused)
        return
    for group, answer in delete_groups(admin, list(by_group), batch_size, sent=lambda gs: (
            sent.mark((admin.cluster.name, g) for g in gs))):
        yield group_result(by_group[group], phase, outcome(True, False, answer), **answer)


def verify_part(admin: ClusterAdmin, part: list[Row], deadline: float) -> Iterator[Result]:
    """Each group read back until its configs hold what was asked (`altered`) or it is gone
    from ListGroups (`deleted`), or `deadline` passes (`failed` VERIFY_TIMEOUT)."""
    pending, attempts = list(part), 0
    found: tuple[dict[str, dict[str, str]], set[str]] = ({}, set())

    def read() -> tuple[dict[str, dict[str, str]], set[str]]:
        altered = sorted(r["group"] for r in pending if r["action"] == ALTER)
        listed = set(list_groups(admin)) if any(r["action"] == DELETE for r in pending) \
            else set()
        return group_configs(admin, altered), listed

    def held(row: Row) -> bool:
        if row["action"] == DELETE:
            return row["group"] not in found[1]
        own = found[0].get(row["group"], {})
        return all(own.get(k) == v for k, v in (row["changed"] or {}).items())

    for done in retry.poll(retry.READ_BACK, read, deadline) if pending else ():
        attempts, found = done.attempt, done.value
        for row in [r for r in pending if held(r)]:
            yield group_result(row, names.VERIFY,
                               DELETED if row["action"] == DELETE else ALTERED,
                               result_configs=found[0].get(row["group"]), error_code=0,
                               error_name="NONE", attempts=attempts)
        pending = [r for r in pending if not held(r)]
        if not pending:
            break
    for row in pending:
        yield group_result(row, names.VERIFY, names.FAILED, error_code=-1,
                           result_configs=found[0].get(row["group"]),
                           error_name=names.VERIFY_TIMEOUT, attempts=attempts,
                           error_message="the group is still listed" if row["action"] == DELETE
                           else "the group's configs read back are not those asked for")
