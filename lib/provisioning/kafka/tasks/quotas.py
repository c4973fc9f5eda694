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
# The error name of a read-back that shows another value than the one asked for.
VERIFY_MISMATCH = "VERIFY_MISMATCH"

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

    work = verify_part if kind == VERIFY else change
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


def verify_part(admin: ClusterAdmin, part: list[Row], _sent: Sent) -> Iterator[Result]:
    """Each quota read back (DescribeClientQuotas of its entity): `set` when the key holds
    the value asked for, `removed` when a removed key is gone, else `failed` with what was
    found (VERIFY_MISMATCH)."""
    grouped = _entities(part)
    found = describe_client_quotas(admin, [entity for entity, _ in grouped])
    for entity, rows in grouped:
        held = found.get(entity, {})
        for row in rows:
            value = held.get(row["key"])
            if row["action"] == quota_names.REMOVE:
                done = value is None
                outcome = quota_names.REMOVED if done else names.FAILED
                message = None if done else f"the key is still set, to {value:g}"
            else:
                done = value is not None and value == float(row["value"])
                outcome = quota_names.SET if done else names.FAILED
                message = None if done else (
                    f"read back {'no value' if value is None else f'{value:g}'}, asked "
                    f"{float(row['value']):g}")
            yield quota_result(row, names.VERIFY, outcome, result_value=value,
                               error_code=0 if done else -1,
                               error_name="NONE" if done else VERIFY_MISMATCH,
                               error_message=message, attempts=1)
