"""ACL bindings, one cluster's rows at a time: the authority check, grants (CreateAcls),
revokes (DeleteAcls) and the read-back (DescribeAcls); rows in, one ACL_RESULT row per
binding out.

Rows are mappings with `cluster` and the binding columns (kinds.acls.schema.BINDING_KEY), sorted
by cluster; `verify` rows also carry the plan's `action` (GRANT or REVOKE). Every row comes
back with exactly one result through `for_each_cluster`: a binding whose CreateAcls or
DeleteAcls may have been sent is `unknown` on an error of this side, never `failed`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

import kafka.errors as Errors

from provisioning import names, retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.tasks.common import KeyedResults, Result, Row, Sent
from provisioning.kinds.acls import names as acl_names
from provisioning.kinds.acls.requests import (
    acl_authority,
    binding_problem,
    create_acls,
    delete_acls,
    describe_acls,
)
from provisioning.kinds.acls.schema import ACL_RESULT, BINDING_KEY
from schemas import column_names

# What a task does with its rows: check the job may change ACLs (phase validate), grant or
# revoke (apply), read back (verify).
AUTHORITY = "authority"
GRANT = "grant"
REVOKE = "revoke"
VERIFY = "verify"
KINDS = (AUTHORITY, GRANT, REVOKE, VERIFY)
_PHASES = {AUTHORITY: names.VALIDATE, GRANT: names.APPLY, REVOKE: names.APPLY,
           VERIFY: names.VERIFY}

_RESULTS = KeyedResults(tuple(column_names(ACL_RESULT)), BINDING_KEY)

# Per-binding errors that mean "Kafka refused the binding as asked": no retry helps.
REJECTIONS = frozenset({
    "INVALID_REQUEST",
    "CLUSTER_AUTHORIZATION_FAILED",
    "SECURITY_DISABLED",
    "UNSUPPORTED_VERSION",
    "INVALID_PRINCIPAL_TYPE",
    "POLICY_VIOLATION",
})
# Errors after which the change may or may not have been made: `verify` settles them.
UNCERTAIN = frozenset({"REQUEST_TIMED_OUT", "NOT_CONTROLLER", "NETWORK_EXCEPTION",
                       "UNKNOWN_SERVER_ERROR"})


# The binding a row (or an ACL_BINDING / ACL_PLAN row) is about; one ACL_RESULT row for it.
binding_key = _RESULTS.key_of
acl_result = _RESULTS.result
BINDINGS = _RESULTS.shape


def acl_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                credentials: Mapping[str, Credentials], kafka: KafkaConf, kind: str,
                batch_size: int = 1000, attempt: int = 0) -> Iterator[Result]:
    """The ACL work of `kind` (AUTHORITY, GRANT, REVOKE or VERIFY) for binding rows; one
    ACL_RESULT per row.

    batch_size: bindings per CreateAcls / DeleteAcls request (`acls.batch_size`).
    attempt: the Spark task attempt (> 0: an earlier attempt may have sent the same revoke).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown ACL task kind {kind!r} (known: {', '.join(KINDS)})")
    works: dict[str, Callable[[ClusterAdmin, list[Row], Sent], Iterator[Result]]] = {
        AUTHORITY: _authority_work(),
        GRANT: lambda admin, part, sent: grant_part(admin, part, sent, batch_size),
        REVOKE: lambda admin, part, sent: revoke_part(admin, part, sent, batch_size, attempt),
        VERIFY: _RESULTS.until_deadline(kafka, verify_part),
    }
    return _RESULTS.for_each_cluster(rows, clusters, credentials, kafka, works[kind],
                                     _PHASES[kind], kind in (GRANT, REVOKE), batch_size)


def _authority_work() -> Callable[[ClusterAdmin, list[Row], Sent], Iterator[Result]]:
    # Asked once per cluster, whatever the number of chunks.
    checked: dict[str, tuple[str, str] | None] = {}

    def work(admin: ClusterAdmin, part: list[Row], _sent: Sent) -> Iterator[Result]:
        name = admin.cluster.name
        if name not in checked:
            checked[name] = acl_authority(admin)
        return authority_part(part, checked[name])

    return work


def authority_part(part: list[Row], problem: tuple[str, str] | None) -> Iterator[Result]:
    """The validate row of each binding: `validated`, or `rejected` with why the job may not
    change the cluster's ACLs (no CreateAcls or DeleteAcls is sent there)."""
    for row in part:
        if problem is None:
            yield acl_result(row, names.VALIDATE, names.VALIDATED, error_code=0,
                             error_name="NONE", attempts=1)
            continue
        error, message = problem
        code = (Errors.SecurityDisabledError.errno if error == acl_names.SECURITY_DISABLED
                else Errors.ClusterAuthorizationFailedError.errno)
        yield acl_result(row, names.VALIDATE, names.REJECTED, error_code=code,
                         error_name=error, error_message=message, attempts=1)


def change_outcome(error_name: str, done: str) -> str:
    """The outcome of one CreateAcls or DeleteAcls result that is not a success."""
    if error_name == "NONE":
        return done
    if error_name in REJECTIONS:
        return names.REJECTED
    if error_name in UNCERTAIN:
        return names.UNKNOWN
    return names.FAILED


def _sendable(part: list[Row]) -> tuple[list[Row], list[Result]]:
    """The rows a request can carry, and `rejected` apply rows (never sent) for the others."""
    good, refused = [], []
    for row in part:
        problem = binding_problem(row)
        if problem is None:
            good.append(row)
        else:
            refused.append(acl_result(row, names.APPLY, names.REJECTED, error_code=-1,
                                      error_name=names.INVALID_MANIFEST_ROW,
                                      error_message=f"not sent: {problem}", attempts=0))
    return good, refused


def grant_part(admin: ClusterAdmin, part: list[Row], sent: Sent, batch_size: int
               ) -> Iterator[Result]:
    """CreateAcls for `part`; `granted` per binding the broker created (or already had)."""
    part, refused = _sendable(part)
    yield from refused
    sent.mark(binding_key(r) for r in part)
    for row, res in zip(part, create_acls(admin, part, batch_size), strict=True):
        yield acl_result(row, names.APPLY, change_outcome(res["error_name"], acl_names.GRANTED),
                         **res)


def revoke_part(admin: ClusterAdmin, part: list[Row], sent: Sent, batch_size: int,
                attempt: int = 0) -> Iterator[Result]:
    """DeleteAcls for `part` (one exact filter per binding): `revoked`, or `already_absent`
    when nothing matched and no earlier send of this same request could have deleted it."""
    part, refused = _sendable(part)
    yield from refused
    sent.mark(binding_key(r) for r in part)
    for row, res in zip(part, delete_acls(admin, part, batch_size), strict=True):
        deleted, resent = res.pop("deleted"), res.pop("resent")
        outcome = change_outcome(res["error_name"], acl_names.REVOKED)
        if outcome == acl_names.REVOKED and not deleted:
            if resent:
                res["error_message"] = ("revoked by this run: the answer to its DeleteAcls was "
                                        "lost and the resend found the binding gone")
            elif attempt > 0:
                res["error_message"] = ("revoked by an earlier attempt of this Spark task: the "
                                        "retried DeleteAcls found the binding gone")
            else:
                outcome = names.ALREADY_ABSENT
        yield acl_result(row, names.APPLY, outcome, **res)


def verify_part(admin: ClusterAdmin, part: list[Row], deadline: float) -> Iterator[Result]:
    """Read the cluster's bindings back (DescribeAcls) until each GRANT row's binding shows
    and each REVOKE row's is gone, or `deadline` (`retry.now()`) passes (`retry.READ_BACK`):
    `granted` / `revoked`, else `failed` VERIFY_TIMEOUT."""
    cluster = admin.cluster.name
    pending: list[Row] = []
    for row in part:
        if row.get("action") in (acl_names.GRANT, acl_names.REVOKE):
            pending.append(row)
        else:
            yield acl_result(row, names.VERIFY, names.FAILED, error_code=-1,
                             error_name="INVALID_REQUEST", attempts=0,
                             error_message=f"verify reads back GRANT and REVOKE rows, not "
                                           f"{row.get('action')!r}")
    reads = retry.poll(retry.READ_BACK, lambda: describe_acls(admin), deadline) if pending \
        else ()
    attempts = 0
    for read in reads:
        attempts, live = read.attempt, read.value
        if live is None:
            for row in pending:
                yield acl_result(row, names.VERIFY, names.FAILED, error_code=54,
                                 error_name=acl_names.SECURITY_DISABLED, attempts=attempts,
                                 error_message=f"cluster {cluster} has no authorizer")
            return
        present = {binding_key({"cluster": cluster, **b}) for b in live}
        waiting = []
        for row in pending:
            wanted = row["action"] == acl_names.GRANT
            if (binding_key(row) in present) == wanted:
                yield acl_result(row, names.VERIFY,
                                 acl_names.GRANTED if wanted else acl_names.REVOKED,
                                 error_code=0, error_name="NONE", attempts=attempts)
            else:
                waiting.append(row)
        pending = waiting
        if not pending:
            break
    for row in pending:
        yield acl_result(
            row, names.VERIFY, names.FAILED, error_code=-1,
            error_name=names.VERIFY_TIMEOUT, attempts=attempts,
            error_message=("the binding is still missing after its grant"
                           if row["action"] == acl_names.GRANT else
                           "the binding is still present after its revoke"))
