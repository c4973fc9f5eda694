"""SCRAM credentials, one cluster's rows at a time: the changes (AlterUserScramCredentials,
batched per cluster) and the read-back (DescribeUserScramCredentials); rows in, one
USER_RESULT row per credential out, through `for_each_cluster` (a credential whose request
may have been sent is `unknown` on an error of this side, never `failed`).

Rows are mappings with `cluster`, `user`, `mechanism`, `action` (UPSERT or DELETE) and
`iterations`; verify's also `live_iterations` and `applied_outcome` (apply's outcome).
The passwords travel beside the rows, in memory, keyed by credential: a Secret, or why the
driver could not read it (the row is then never sent).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from provisioning import names, retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf, Secret
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.tasks.common import KeyedResults, Result, Row, Sent
from provisioning.kinds.users.names import DELETE, DELETED, UPSERTED
from provisioning.kinds.users.requests import (
    Change,
    alter_credentials,
    describe_credentials,
    outcome,
)
from provisioning.kinds.users.schema import USER_KEY, USER_RESULT

APPLY, VERIFY = "apply", "verify"
_RESULTS = KeyedResults(tuple(f.name for f in USER_RESULT.fields), USER_KEY)
user_key = _RESULTS.key_of
user_result = _RESULTS.result
# A credential -> its password, or why the driver could not read it.
Passwords = Mapping[tuple[str, str, str], Secret | str]


def user_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                 credentials: Mapping[str, Credentials], kafka: KafkaConf, kind: str,
                 passwords: Passwords, batch_size: int = 200) -> Iterator[Result]:
    """The work of `kind` (APPLY or VERIFY) for credential rows; one USER_RESULT per row."""
    if kind not in (APPLY, VERIFY):
        raise ValueError(f"unknown credential task kind {kind!r}")

    def change(admin: ClusterAdmin, part: list[Row], sent: Sent) -> Iterator[Result]:
        return change_part(admin, part, sent, passwords, batch_size)

    work = _RESULTS.until_deadline(kafka, verify_part) if kind == VERIFY else change
    phase = names.APPLY if kind == APPLY else names.VERIFY
    return _RESULTS.for_each_cluster(rows, clusters, credentials, kafka, work, phase,
                                     kind == APPLY, batch_size * 2)


def change_part(admin: ClusterAdmin, part: list[Row], sent: Sent, passwords: Passwords,
                batch_size: int) -> Iterator[Result]:
    """Each row's credential set (UPSERT, with its password) or deleted, `batch_size` a
    request; a row whose password the driver could not read is `failed`, never sent."""
    changes: list[tuple[Row, Change]] = []
    for row in part:
        password = None if row["action"] == DELETE else passwords.get(user_key(row),
                                                                       "password: not read")
        if isinstance(password, str):
            yield user_result(row, names.APPLY, names.FAILED, error_code=-1, attempts=0,
                              error_name=names.INVALID_MANIFEST_ROW,
                              error_message=f"not sent: {password}")
            continue
        changes.append((row, Change(row["user"], row["mechanism"], row["iterations"],
                                    password)))
    keys = {id(c): user_key(r) for r, c in changes}
    answers = alter_credentials(admin, [c for _, c in changes], batch_size,
                                sent=lambda batch: sent.mark(keys[id(c)] for c in batch))
    for (row, change), answer in zip(changes, answers, strict=True):
        answer = {k: v for k, v in answer.items() if k != "resent"}
        yield user_result(row, names.APPLY, outcome(change, answer), **answer)


def verify_part(admin: ClusterAdmin, part: list[Row], deadline: float) -> Iterator[Result]:
    """Each credential read back until it holds the mechanism and iterations asked for
    (`upserted`) or is gone (`deleted`), or `deadline` passes (`failed` VERIFY_TIMEOUT).

    The read-back shows no password: a credential that was live with these iterations and
    whose apply went unanswered stays `unknown` (the next plan sets its password again, as
    the audit never recorded it applied)."""
    pending, attempts = list(part), 0
    found: dict[str, dict[str, int]] = {}

    def read() -> dict[str, dict[str, int]]:
        return describe_credentials(admin, sorted({r["user"] for r in pending}))

    for done in retry.poll(retry.READ_BACK, read, deadline) if pending else ():
        attempts, found = done.attempt, done.value
        late = []
        for row in pending:
            held = found.get(row["user"], {}).get(row["mechanism"])
            deleting = row["action"] == DELETE
            if (held is not None) if deleting else (held != row["iterations"]):
                late.append(row)
                continue
            unseen = (not deleting and row.get("applied_outcome") == names.UNKNOWN
                      and row.get("live_iterations") == row["iterations"])
            yield user_result(
                row, names.VERIFY, names.UNKNOWN if unseen else
                DELETED if deleting else UPSERTED, result_iterations=held, attempts=attempts,
                error_code=-1 if unseen else 0, error_name="UNVERIFIABLE" if unseen
                else "NONE", error_message="the read-back shows no password, and apply had "
                "no answer: run apply again to set it" if unseen else None)
        pending = late
        if not pending:
            break
    for row in pending:
        held = found.get(row["user"], {}).get(row["mechanism"])
        yield user_result(row, names.VERIFY, names.FAILED, result_iterations=held,
                          error_code=-1, error_name=names.VERIFY_TIMEOUT,
                          attempts=attempts, error_message=(
                              "the credential is still there" if held is not None
                              and row["action"] == DELETE else
                              f"read back {held or 'no credential'}, asked "
                              f"{row['iterations']} iterations"))
