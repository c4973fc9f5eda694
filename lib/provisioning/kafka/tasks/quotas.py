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
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from provisioning import names
from provisioning.conf import ClusterConf, Credentials, KafkaConf
from provisioning.kafka.client import ClusterAdmin
from provisioning.kafka.quotas import (
    QuotaEntry,
    alter_client_quotas,
    describe_client_quotas,
    quota_outcome,
)
from provisioning.kafka.quotas_entities import Entity
from provisioning.kafka.tasks.common import Result, Row, Sent, Shape, for_each_cluster
from provisioning.names import quotas as quota_names
from schemas.quotas import ENTITY_COLUMNS, QUOTA_KEY, QUOTA_RESULT

# What a task does with its rows: validateOnly (phase validate), the changes (apply), the
# read-back (verify).
VALIDATE, APPLY, VERIFY = "validate", "apply", "verify"
KINDS = (VALIDATE, APPLY, VERIFY)
_PHASES = {VALIDATE: names.VALIDATE, APPLY: names.APPLY, VERIFY: names.VERIFY}

_RESULT_COLUMNS = [f.name for f in QUOTA_RESULT.fields]
_KEY_AT = [_RESULT_COLUMNS.index(c) for c in QUOTA_KEY]
_TYPES = dict(zip(ENTITY_COLUMNS, quota_names.ENTITY_TYPES, strict=True))


def quota_key(row: Row) -> tuple[Any, ...]:
    """The quota a row is about (cluster, entity columns, key), as a tuple."""
    return tuple(row[c] for c in QUOTA_KEY)


def quota_result(row: Row, phase: str, outcome: str, **fields: Any) -> Result:
    """One QUOTA_RESULT row for the quota of `row`; columns not given are null."""
    values: dict[str, Any] = dict.fromkeys(_RESULT_COLUMNS)
    values.update({c: row[c] for c in QUOTA_KEY})
    values.update(phase=phase, outcome=outcome, **fields)
    return tuple(values[c] for c in _RESULT_COLUMNS)


QUOTAS = Shape(
    key=quota_key,
    result_key=lambda produced: tuple(produced[i] for i in _KEY_AT),
    result=lambda row, phase, outcome, fields: quota_result(row, phase, outcome, **fields),
)


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

    work = _verify_work(kafka) if kind == VERIFY else change
    # A chunk holds whole entities of a few requests' worth (its rows are keys).
    return for_each_cluster(rows, clusters, credentials, kafka, work, _PHASES[kind],
                            kind == APPLY, batch_size * len(quota_names.KEYS), QUOTAS)


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


def _verify_work(kafka: KafkaConf) -> Callable[[ClusterAdmin, list[Row], Sent], Iterator[Result]]:
    # One deadline per cluster for all its chunks.
    deadlines: dict[str, float] = {}

    def work(admin: ClusterAdmin, part: list[Row], _sent: Sent) -> Iterator[Result]:
        deadline = deadlines.setdefault(
            admin.cluster.name, time.monotonic() + kafka.verify_timeout_ms / 1000)
        return verify_part(admin, part, deadline)

    return work


def _held(row: Row, value: float | None) -> bool:
    """Whether `value`, read back, is what the row's change asked for."""
    if row["action"] == quota_names.REMOVE:
        return value is None
    return value is not None and value == float(row["value"])


def verify_part(admin: ClusterAdmin, part: list[Row], deadline: float) -> Iterator[Result]:
    """Each quota read back (DescribeClientQuotas of its entities) until it holds the value
    asked for (`set`) or its removed key is gone (`removed`), or `deadline`
    (time.monotonic()) passes: `failed` VERIFY_TIMEOUT with what was found. A broker
    answers from its copy of the cluster's metadata, which may trail the controller's."""
    pending = _entities(part)
    attempts = 0
    delay = 0.2
    while pending:
        attempts += 1
        found = describe_client_quotas(admin, [entity for entity, _ in pending])
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
        if pending and time.monotonic() >= deadline:
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
            return
        if pending:
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
