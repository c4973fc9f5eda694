"""Client quotas, one cluster's rows at a time: the validateOnly pass and the changes
(AlterClientQuotas, batched per cluster) and the read-back (DescribeClientQuotas); rows in,
one QUOTA_RESULT row per (entity, key) out.

Rows are mappings with `cluster`, the entity columns, `key`, `action` (SET or REMOVE) and
`value` (the value to set), sorted by cluster, entity and key. The keys of one entity in a
chunk go out as one entry of one request (Kafka answers per entity: each key's row carries
its entity's answer). Every row comes back with exactly one result through
`for_each_cluster`: a quota whose AlterClientQuotas may have been sent is `unknown` on an
error of this side, never `failed`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping

from provisioning import names, retry
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.tasks.common import KeyedResults, Result, Row, Sent
from provisioning.kinds.quotas import names as quota_names
from provisioning.kinds.quotas.entities import Entity
from provisioning.kinds.quotas.requests import (
    QuotaEntry,
    alter_client_quotas,
    describe_client_quotas,
    quota_outcome,
)
from provisioning.kinds.quotas.schema import ENTITY_COLUMNS, QUOTA_KEY, QUOTA_RESULT

# What a task does with its rows: validateOnly (phase validate), the changes (apply), the
# read-back (verify).
VALIDATE, APPLY, VERIFY = "validate", "apply", "verify"
KINDS = (VALIDATE, APPLY, VERIFY)
_PHASES = {VALIDATE: names.VALIDATE, APPLY: names.APPLY, VERIFY: names.VERIFY}

_RESULTS = KeyedResults(tuple(f.name for f in QUOTA_RESULT.fields), QUOTA_KEY)
_TYPES = dict(zip(ENTITY_COLUMNS, quota_names.ENTITY_TYPES, strict=True))
# The quota a row is about (cluster, entity columns, key); one QUOTA_RESULT row for it.
quota_key = _RESULTS.key_of
quota_result = _RESULTS.result
QUOTAS = _RESULTS.shape


def entity_of(row: Row) -> Entity:
    """The entity of a row, as the requests name it (`<default>` is the protocol's None)."""
    return Entity({_TYPES[c]: quota_names.protocol_name(row[c])
                   for c in ENTITY_COLUMNS if row[c] is not None})


def quota_results(rows: Iterable[Row], clusters: Mapping[str, ClusterConf],
                  credentials: Mapping[str, Credentials], kafka: KafkaConf, kind: str,
                  batch_size: int = 200) -> Iterator[Result]:
    """The quota work of `kind` (VALIDATE, APPLY or VERIFY) for quota rows; one QUOTA_RESULT
    per row.

    batch_size: entities per AlterClientQuotas request (`quotas.batch_size`).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown quota task kind {kind!r} (known: {', '.join(KINDS)})")

    def change(admin: ClusterAdmin, part: list[Row], sent: Sent) -> Iterator[Result]:
        return change_part(admin, part, sent, kind == VALIDATE, batch_size)

    work = _RESULTS.until_deadline(kafka, verify_part) if kind == VERIFY else change
    # A chunk holds whole entities of a few requests' worth (its rows are keys).
    return _RESULTS.for_each_cluster(rows, clusters, credentials, kafka, work,
                                     _PHASES[kind], kind == APPLY,
                                     batch_size * len(quota_names.KEYS))


def _entities(part: list[Row]) -> list[tuple[Entity, list[Row]]]:
    """The part's rows grouped by entity (they come sorted by entity)."""
    return [(entity_of(rows[0]), rows) for rows in
            (list(g) for _, g in itertools.groupby(
                part, key=lambda r: tuple(r[c] for c in ENTITY_COLUMNS)))]


def change_part(admin: ClusterAdmin, part: list[Row], sent: Sent, validate_only: bool,
                batch_size: int) -> Iterator[Result]:
    """One AlterClientQuotas entry per entity of the part (each key set, or removed for a
    REMOVE row), `batch_size` entities per request; each key's row gets its entity's
    answer: `validated` (validateOnly), `set` or `removed` (per key), `rejected`,
    `failed` (never sent), `unknown` (sent, no answer)."""
    grouped = _entities(part)
    entries = [QuotaEntry(entity, {r["key"]: None if r["action"] == quota_names.REMOVE
                                   else float(r["value"]) for r in rows})
               for entity, rows in grouped]
    if not validate_only:
        sent.mark(quota_key(r) for r in part)
    phase = names.VALIDATE if validate_only else names.APPLY
    answers = alter_client_quotas(admin, entries, validate_only, batch_size)
    for (_, rows), entry, answer in zip(grouped, entries, answers, strict=True):
        outcome = quota_outcome(answer["error_name"], answer["attempts"], validate_only,
                                entry.removes_only)
        for row in rows:
            if outcome in (quota_names.SET, quota_names.REMOVED):
                outcome_of_key = (quota_names.REMOVED if row["action"] == quota_names.REMOVE
                                  else quota_names.SET)
            else:
                outcome_of_key = outcome
            yield quota_result(row, phase, outcome_of_key, **answer)


def _held(row: Row, value: float | None) -> bool:
    """Whether `value`, read back, is what the row's change asked for."""
    if row["action"] == quota_names.REMOVE:
        return value is None
    return value is not None and value == float(row["value"])


def verify_part(admin: ClusterAdmin, part: list[Row], deadline: float) -> Iterator[Result]:
    """Each quota read back (DescribeClientQuotas of its entities) until it holds the value
    asked for (`set`) or its removed key is gone (`removed`), or `deadline` (`retry.now()`)
    passes (`retry.READ_BACK`): `failed` VERIFY_TIMEOUT with what was found. A broker answers
    from its copy of the cluster's metadata, which may trail the controller's."""
    pending = _entities(part)
    attempts = 0
    found: dict[Entity, dict[str, float]] = {}

    def read() -> dict[Entity, dict[str, float]]:
        return describe_client_quotas(admin, [entity for entity, _ in pending])

    for done in retry.poll(retry.READ_BACK, read, deadline) if pending else ():
        attempts, found = done.attempt, done.value
        waiting: list[tuple[Entity, list[Row]]] = []
        for entity, rows in pending:
            held = found.get(entity, {})
            late = [row for row in rows if not _held(row, held.get(row["key"]))]
            for row in rows:
                if row not in late:
                    yield quota_result(row, names.VERIFY, (
                        quota_names.REMOVED if row["action"] == quota_names.REMOVE
                        else quota_names.SET), result_value=held.get(row["key"]),
                        error_code=0, error_name="NONE", attempts=attempts)
            if late:
                waiting.append((entity, late))
        pending = waiting
        if not pending:
            break
    for entity, rows in pending:
        held = found.get(entity, {})
        for row in rows:
            value = held.get(row["key"])
            yield quota_result(
                row, names.VERIFY, names.FAILED, result_value=value, error_code=-1,
                error_name=names.VERIFY_TIMEOUT, attempts=attempts,
                error_message=(f"the key is still set, to {value:g}"
                               if row["action"] == quota_names.REMOVE else
                               f"read back {'no value' if value is None else f'{value:g}'}"
                               f", asked {float(row['value']):g}"))
