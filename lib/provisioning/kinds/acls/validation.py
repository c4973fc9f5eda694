"""ACL manifest rows validated as data: defaults filled, each problem a reason in
`row_errors`.

CreateAcls has no validateOnly, so everything the job can know about a row before sending
it is checked here: the principal's form, Kafka's enums, each operation against the
resource type (Kafka 4.3's matrix, `kinds.acls.names.OPERATIONS_BY_RESOURCE`), the pattern rules of
the resource name. A row with reasons is rejected in the plan; the other rows go on.
Duplicate rows are fine: the plan merges the bindings they imply.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from provisioning.kinds.acls.names import (
    ALLOW,
    CLUSTER_RESOURCE,
    CLUSTER_RESOURCE_NAME,
    LITERAL,
    OPERATIONS_BY_RESOURCE,
    PATTERN_TYPES,
    PERMISSIONS,
    PREFIXED,
    PRINCIPAL_FORMAT,
    RESOURCE_TYPES,
    SHORTHANDS,
    TOPIC_RESOURCE,
    WILDCARD,
)
from provisioning.kinds.acls.schema import ACL_DESIRED
from provisioning.names import PRESENT, STATES
from provisioning.transforms.validation import cluster_reasons, reason_when
from schemas import column_names

_EVERY_OPERATION = tuple(dict.fromkeys(
    op for ops in OPERATIONS_BY_RESOURCE.values() for op in ops))


def _strings(values: Sequence[str]) -> Column:
    return F.array(*[F.lit(v) for v in values])


def _upper(name: str) -> Column:
    return F.upper(F.col(name))


def _or(name: str, default: str, value: Column | None = None) -> Column:
    """`value` (default: the column itself), or `default` when the column is null; spelled
    as a two-way split, as coalesce would make the column non-nullable and the output
    schema would differ from ACL_DESIRED."""
    return F.when(F.col(name).isNull(), F.lit(default)).otherwise(
        F.col(name) if value is None else value)


def with_acl_defaults(df: DataFrame) -> DataFrame:
    """ACL_DESIRED rows with the defaults filled (host `*`, LITERAL, ALLOW, present) and
    Kafka's enums upper-cased, as Kafka's own tools accept them in any case."""
    filled = {
        "host": _or("host", WILDCARD),
        "resource_type": _upper("resource_type"),
        "pattern_type": _or("pattern_type", LITERAL, _upper("pattern_type")),
        "operations": F.transform("operations", lambda o: F.upper(o)),
        "permission": _or("permission", ALLOW, _upper("permission")),
        "state": _or("state", PRESENT),
    }
    return df.select(*[filled[c].alias(c) if c in filled else F.col(c)
                       for c in column_names(ACL_DESIRED)])


def _principal_reasons() -> list[Column]:
    principal = F.col("principal")
    missing = principal.isNull() | (principal == "")
    return [
        reason_when(missing, "principal: is missing"),
        reason_when(~missing & ~principal.rlike(PRINCIPAL_FORMAT), F.format_string(
            "principal: '%s' is not Type:name (e.g. User:orders-app)", principal)),
    ]


def _resource_reasons() -> list[Column]:
    kind = F.col("resource_type")
    name = F.col("resource_name")
    pattern = F.col("pattern_type")
    no_name = name.isNull() | (name == "")
    prefixed = pattern == PREFIXED
    cluster = kind == CLUSTER_RESOURCE
    return [
        reason_when(kind.isNull(), "resource_type: is missing"),
        reason_when(~kind.isin(*RESOURCE_TYPES), F.format_string(
            "resource_type: '%s' is not one of %s", kind, F.lit(", ".join(RESOURCE_TYPES)))),
        reason_when(~pattern.isin(*PATTERN_TYPES), F.format_string(
            "pattern_type: '%s' is not one of %s", pattern, F.lit(", ".join(PATTERN_TYPES)))),
        reason_when(no_name & prefixed,
                    "resource_name: a PREFIXED binding needs a non-empty prefix"),
        reason_when(no_name & ~prefixed, "resource_name: is missing or empty"),
        reason_when(prefixed & (name == WILDCARD),
              "resource_name: '*' (every resource) is a LITERAL name only; a PREFIXED '*' "
              "would match only names that start with '*'"),
        reason_when(cluster & ~no_name & (name != CLUSTER_RESOURCE_NAME), F.format_string(
            "resource_name: a CLUSTER binding names '%s', got '%s'",
            F.lit(CLUSTER_RESOURCE_NAME), name)),
        reason_when(cluster & prefixed, "pattern_type: a CLUSTER binding is LITERAL"),
    ]


def _valid_operations(kind: Column) -> Column:
    """The operations (and shorthands) a resource type takes; null for an unknown type."""
    valid: Column | None = None
    for resource, ops in OPERATIONS_BY_RESOURCE.items():
        names = (*ops, *SHORTHANDS) if resource == TOPIC_RESOURCE else ops
        branch = kind == resource
        valid = (F.when(branch, _strings(names)) if valid is None
                 else valid.when(branch, _strings(names)))
    assert valid is not None
    return valid


def _operation_reasons() -> list[Column]:
    ops = F.col("operations")
    kind = F.col("resource_type")
    given = F.filter(ops, lambda o: o.isNotNull())
    unknown = F.array_except(given, _strings((*_EVERY_OPERATION, *SHORTHANDS)))
    wrong = F.array_except(F.array_except(given, _valid_operations(kind)), unknown)
    valid_text = F.when(kind == TOPIC_RESOURCE, F.lit(
        f"{', '.join(OPERATIONS_BY_RESOURCE[TOPIC_RESOURCE])} and the shorthands "
        f"{', '.join(SHORTHANDS)}"))
    for resource, names in OPERATIONS_BY_RESOURCE.items():
        if resource != TOPIC_RESOURCE:
            valid_text = valid_text.when(kind == resource, F.lit(", ".join(names)))
    return [
        reason_when(ops.isNull() | (F.size(ops) == 0), "operations: name at least one operation"),
        reason_when(F.exists(ops, lambda o: o.isNull()), "operations: an operation is null"),
        reason_when(F.size(unknown) > 0, F.format_string(
            "operations: unknown operation(s) %s (Kafka's operations, or the shorthands "
            "PRODUCE and CONSUME)",
            F.array_join(unknown, ", "))),
        reason_when(kind.isin(*RESOURCE_TYPES) & (F.size(wrong) > 0), F.format_string(
            "operations: %s not valid on a %s binding, which takes %s",
            F.array_join(wrong, ", "), kind, valid_text)),
    ]


def _value_reasons() -> list[Column]:
    permission = F.col("permission")
    state = F.col("state")
    return [
        reason_when(~permission.isin(*PERMISSIONS), F.format_string(
            "permission: '%s' is not one of %s", permission, F.lit(", ".join(PERMISSIONS)))),
        reason_when(~state.isin(*STATES), F.format_string(
            "state: '%s' must be present or absent", state)),
    ]


def with_acl_row_errors(known_clusters: Sequence[str]) -> Callable[[DataFrame], DataFrame]:
    """Fill the defaults of ACL_DESIRED rows and append a reason to `row_errors` for every
    problem of each.

    known_clusters: the clusters of the conf; a row naming another is refused.
    """

    def transform(df: DataFrame) -> DataFrame:
        filled = with_acl_defaults(df)
        checks = [*cluster_reasons(known_clusters), *_principal_reasons(),
                  *_resource_reasons(), *_operation_reasons(), *_value_reasons()]
        reasons = F.filter(F.array(*checks), lambda r: r.isNotNull())
        current = F.col("row_errors")
        return filled.withColumn(
            "row_errors", F.when(current.isNull(), reasons).otherwise(F.concat(current, reasons))
        ).select(*column_names(ACL_DESIRED))

    return transform
